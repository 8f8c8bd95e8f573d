"""keep_freed_host_memory: a freed large block comes back without page faults."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Allocates and touches 64 MiB with malloc, frees it, then counts the minor
# page faults that touching a new 64 MiB block costs: 16,384 pages of 4 KiB
# if glibc unmapped the first block in between.
MEASURE = """
import ctypes, resource, sys
if sys.argv[1] == "keep":
    from keras_gmlp.host_memory import keep_freed_host_memory
    assert keep_freed_host_memory()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
size = 64 * 2**20
def touch_fresh_block():
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)
    return block
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
libc.free(touch_fresh_block())
before = faults()
touch_fresh_block()
print(faults() - before)
"""


def count_faults(mode):
    result = subprocess.run(
        [sys.executable, "-c", MEASURE, mode],
        env=dict(os.environ, PYTHONPATH=ROOT),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return int(result.stdout.split()[-1])


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="glibc's mallopt is Linux-only"
)
def test_freed_memory_is_reused_without_page_faults():
    assert count_faults("default") > 10_000
    assert count_faults("keep") < 1_000


def test_returns_whether_it_applied():
    # In a subprocess: the settings are process-wide.
    code = (
        "from keras_gmlp.host_memory import keep_freed_host_memory; "
        "print(keep_freed_host_memory())"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(os.environ, PYTHONPATH=ROOT),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    expected = "True" if sys.platform.startswith("linux") else "False"
    assert result.stdout.split()[-1] == expected
