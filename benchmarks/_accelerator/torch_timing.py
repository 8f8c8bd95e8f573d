"""Device timing and precision switches for PyTorch (the peers and Keras'
torch backend)."""

import contextlib
import statistics

from _accelerator.record import median_seconds


def device(torch):
    return "cuda" if torch.cuda.is_available() else "cpu"


def event_seconds(torch, step, warmup, repeats):
    """The median of `step()`'s device time, from CUDA events; the host
    clock after a synchronisation on a CPU."""
    if not torch.cuda.is_available():
        return median_seconds(step, warmup, repeats)
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000)
    return statistics.median(times)


@contextlib.contextmanager
def float32_precision(torch, highest):
    """float32 matmuls and convolutions in full float32 (TF32 off) when
    `highest`, else PyTorch's defaults (TF32 convolutions, full matmuls)."""
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    if highest:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def peak_memory_gb(torch):
    if not torch.cuda.is_available():
        return None
    return round(torch.cuda.max_memory_allocated() / 2**30, 2)


def reset_peak_memory(torch):
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
