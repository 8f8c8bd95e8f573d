"""Keeping freed host memory mapped, for XLA training on Linux CPUs.

A process-wide setting for programs to call, not a kernel: it changes the C
library's allocator for everything in the process, so the library never
calls it itself (`applications/train_image_classifier.py` does, on JAX).
"""

import ctypes
import sys

# mallopt(3) parameter numbers, from glibc's <malloc.h>.
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8


def keep_freed_host_memory():
    """Makes glibc keep freed memory for reuse instead of returning it.

    XLA's CPU runtime allocates each step's scratch buffer afresh, and glibc
    serves a buffer that large with a new memory mapping that it unmaps again
    on free. The kernel then has to fault in and zero every 4 KiB page on
    every step. For a gMLP-S training step at batch 8 on JAX, that is a
    1.44 GB buffer, about 385,000 page faults and roughly a fifth of the
    step's CPU time; a training step took 1.8 s instead of 2.5 s on a 2-core
    machine once the memory was kept. After this call, every thread allocates
    from one heap (`M_ARENA_MAX=1`), large blocks come from that heap instead
    of separate mappings (`M_MMAP_MAX=0`), and freed memory is never trimmed
    (`M_TRIM_THRESHOLD=-1`). The next step then reuses pages that are already
    mapped.

    The settings apply to the whole process. Its resident memory stays at
    its peak, as it would with PyTorch's or TensorFlow's caching allocators,
    and threads that allocate heavily share one heap. Call this before the
    first computation: threads that have already allocated keep their own
    heaps. From a shell, `MALLOC_ARENA_MAX=1 MALLOC_MMAP_MAX_=0
    MALLOC_TRIM_THRESHOLD_=68719476736` has the same effect. JAX gains the
    most; TensorFlow's and PyTorch's allocators already reuse most of their
    memory (benchmarks/docs/throughput.md measures all three).

    Returns:
        True if the settings were applied. False where the C library is not
        glibc (macOS, Windows, musl), in which case nothing changed.

    Examples:

    ```python
    from keras_gmlp.host_memory import keep_freed_host_memory

    keep_freed_host_memory()  # first, then build and fit
    model = keras_gmlp.applications.gMLPS(weights=None)
    ```
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    if not hasattr(libc, "gnu_get_libc_version"):  # only glibc exports it
        return False
    applied = [
        libc.mallopt(_M_ARENA_MAX, 1),
        libc.mallopt(_M_MMAP_MAX, 0),
        libc.mallopt(_M_TRIM_THRESHOLD, -1),
    ]
    return all(result == 1 for result in applied)
