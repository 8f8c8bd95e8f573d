"""What every worker shares: its results file, its time budget, timing.

A worker appends one JSON line per result as soon as it has it, so a worker
that runs out of time or crashes still leaves what it measured. Each result
names its `section`, `item`, `worker` and either a `value` (with `unit`), a
`passed` check, or a `skipped`/`error` reason.
"""

import json
import statistics
import time
import traceback


class Results:
    """Appends results of `worker` to the JSON-lines file `path`."""

    def __init__(self, path, worker, deadline):
        self.path, self.worker, self.deadline = path, worker, deadline

    def seconds_left(self):
        return self.deadline - time.time()

    def add(self, section, item, **fields):
        row = dict(section=section, item=item, worker=self.worker, **fields)
        with open(self.path, "a") as file:
            file.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)
        return row

    def attempt(self, section, item, measure, needs_s=10):
        """Runs `measure()` (a dict of fields) and records it; records why
        not when fewer than `needs_s` seconds are left or it raised. One
        failure never stops the worker: the next item runs."""
        if self.seconds_left() < needs_s:
            return self.add(section, item, skipped="time budget")
        start = time.time()
        try:
            fields = measure()
        except Exception as error:  # noqa: BLE001 - reported, the run goes on
            traceback.print_exc()
            message = f"{type(error).__name__}: {error}".splitlines()[0][:300]
            return self.add(section, item, error=message)
        return self.add(section, item, seconds=round(time.time() - start, 1), **fields)


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
