"""The largest gMLP-base masked-LM batch at 512 tokens on one card, and
what the paper's batch of 256 needs there.

Peak device memory grows linearly with the batch (weights and optimizer
state, plus activations per sequence), so two probe batches give the line
and the largest batch under 92% of the card's memory is predicted, then
tried (and 3/4 of it if that fails). JAX's peak never resets, so this runs
in a fresh process of its own. Where the paper's 256 does not fit, Keras'
`gradient_accumulation_steps` makes it of k micro-batches of 256 / k.
"""

import keras

from _accelerator import keras_speed
from _accelerator.keras_precision import synchronize
from _accelerator.record import median_seconds

MODEL = "gmlp_base"
USABLE_FRACTION = 0.92


def memory_stats():
    """(peak bytes in use, bytes the card allows), or None on a CPU."""
    if keras.backend.backend() == "jax":
        import jax

        stats = jax.local_devices()[0].memory_stats()
        if not stats or "bytes_limit" not in stats:
            return None
        return stats["peak_bytes_in_use"], stats["bytes_limit"]
    import torch

    if not torch.cuda.is_available():
        return None
    return torch.cuda.max_memory_allocated(), torch.cuda.mem_get_info()[1]


def release():
    """Frees the last model and, on PyTorch, restarts the peak count."""
    import gc

    keras.backend.clear_session()
    gc.collect()
    if keras.backend.backend() == "torch":
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()


def train_steps(size, quick, batch, steps=2, accumulation_steps=None):
    """Seconds per step of `steps` steps at `batch` after one warm-up."""
    release()
    model = keras_speed.masked_lm(
        MODEL,
        quick,
        size["text_length"],
        "bfloat16",
        accumulation_steps=accumulation_steps,
    )
    x, y = keras_speed.mlm_batch(size, batch)
    return median_seconds(lambda: model.train_on_batch(x, y), 1, steps, synchronize)


def probe(context, batch):
    """Tokens/s and peak memory at `batch`; the peak is kept for the line."""
    size = context.size
    seconds = train_steps(size, context.quick, batch)
    stats = memory_stats()
    row = dict(
        value=round(batch * size["text_length"] / seconds), unit="tokens/s", batch=batch
    )
    if stats:
        row.update(peak_bytes=stats[0], peak_memory_gb=round(stats[0] / 2**30, 2))
    context.state.setdefault("probes", {})[batch] = row.get("peak_bytes")
    return row


def predicted_largest(probes, limit):
    """(largest batch, bytes per sequence) from the line through two
    (batch, peak bytes) probes: the batch, a multiple of 8, whose peak
    stays under `USABLE_FRACTION` of `limit`."""
    (small, small_peak), (large, large_peak) = sorted(probes.items())
    per_sequence = (large_peak - small_peak) / (large - small)
    fixed = small_peak - small * per_sequence
    return int((USABLE_FRACTION * limit - fixed) / per_sequence) // 8 * 8, per_sequence


def accumulation(total, largest):
    """(steps, micro-batch): the fewest steps whose equal micro-batches
    make `total` and fit in `largest`."""
    steps = 1
    while total // steps > largest or total % steps:
        steps += 1
    return steps, total // steps


def largest_batch(context):
    """The largest batch the memory line predicts, tried (3/4 of it if that
    fails); kept for the paper's batch."""
    size, quick = context.size, context.quick
    probes = context.state.get("probes", {})
    stats = memory_stats()
    if stats is None or len(probes) < 2 or None in probes.values():
        return dict(skipped="no device memory statistics (CPU) or probes")
    predicted, per_sequence = predicted_largest(probes, stats[1])
    for batch in (predicted, predicted * 3 // 4 // 8 * 8):
        try:
            seconds = train_steps(size, quick, batch)
        except Exception as error:  # noqa: BLE001 - out of memory: the next size
            print(f"batch {batch}: {type(error).__name__}", flush=True)
            continue
        context.state["largest"] = batch
        return dict(
            value=batch,
            unit="sequences",
            predicted=predicted,
            per_sequence_gb=round(per_sequence / 2**30, 3),
            tokens_per_second=round(batch * size["text_length"] / seconds),
        )
    return dict(error=f"neither {predicted} nor 3/4 of it fit", predicted=predicted)


def paper_batch(context):
    """The paper's batch at once where it fits, else through gradient
    accumulation over micro-batches no larger than the largest that fit
    (the largest probe where no search ran)."""
    size, quick = context.size, context.quick
    largest = context.state.get("largest", max(size["memory_probe_batches"]))
    steps, micro = accumulation(size["paper_batch"], largest)
    seconds = train_steps(
        size,
        quick,
        micro,
        steps=2 * steps,
        accumulation_steps=steps if steps > 1 else None,
    )
    return dict(
        value=steps,
        unit="accumulation steps",
        micro_batch=micro,
        tokens_per_second=round(micro * size["text_length"] / seconds),
    )
