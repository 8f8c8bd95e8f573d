"""What every worker shares: its results file and timing.

Each result is one JSON line, appended as soon as it is known, so that a
worker that crashes or is stopped still leaves what it measured. A result
names its `section`, `item`, `worker` and either a `value` (with `unit`), a
`passed` check, or a `skipped`/`error` reason.
"""

import json
import statistics
import time


def append_row(path, row):
    with open(path, "a") as file:
        file.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)


def median_seconds(step, warmup, repeats, synchronize=None):
    """The median wall time of `step()` after `warmup` untimed calls.

    `synchronize(output)` waits until the device has computed `step()`'s
    output; without it `step` must block until its work is done.
    """
    wait = synchronize or (lambda output: output)
    for _ in range(warmup):
        wait(step())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        wait(step())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def relative_error(actual, expected):
    """||actual - expected|| / ||expected||, in float64."""
    import numpy as np

    actual = np.asarray(actual, "float64")
    expected = np.asarray(expected, "float64")
    return float(np.linalg.norm(actual - expected) / np.linalg.norm(expected))
