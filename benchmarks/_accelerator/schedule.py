"""One deadline for the whole check, and each row's expected seconds.

The rows run in the plan's order. Before each, the schedule asks whether
its expected seconds (and its worker's start-up, if that worker is not
running) fit in the time left; if not, the row is recorded as skipped with
both figures, and the next row, perhaps shorter, is tried. The expected
seconds come from `expected_seconds.json` (seeded from the first H200 run)
and every run writes them back, refreshed with what it measured.
"""

import json
import os

from _accelerator.plan import WORKERS

EXPECTED_PATH = os.path.join(os.path.dirname(__file__), "expected_seconds.json")
# A row never measured at this size: its section's guess (compiling rows are
# long on the card), else DEFAULT_ROW_S.
DEFAULT_ROW_S = 20.0
DEFAULT_START_S = 15.0
# A row that runs this many times its expected seconds (and at least
# MINIMUM_TIMEOUT_S) is taken for hung: its worker is stopped.
TIMEOUT_FACTOR = 4.0
MINIMUM_TIMEOUT_S = 120.0


class ExpectedSeconds:
    """Seconds per row key and per worker start-up, for one size ("full" or
    "quick"); `measured` updates them, `save` writes the whole table."""

    def __init__(self, table, size_name):
        self.table = table
        self.size_name = size_name
        self.rows = table.setdefault(size_name, {}).setdefault("rows", {})
        self.starts = table[size_name].setdefault("start", {})
        self.guesses = table[size_name].get("guesses", {})

    @classmethod
    def load(cls, path, size_name):
        table = {}
        if path and os.path.exists(path):
            with open(path) as file:
                table = json.load(file)
        return cls(table, size_name)

    def row(self, row):
        if row.key in self.rows:
            return self.rows[row.key]
        for pattern, seconds in self.guesses.items():
            if pattern in row.key:
                return seconds
        return DEFAULT_ROW_S

    def start(self, worker):
        return self.starts.get(worker, DEFAULT_START_S)

    def measured(self, row, seconds):
        self.rows[row.key] = round(seconds, 1)

    def measured_start(self, worker, seconds):
        self.starts[worker] = round(seconds, 1)

    def save(self, path):
        with open(path + ".partial", "w") as file:
            json.dump(self.table, file, indent=1, sort_keys=True)
            file.write("\n")
        os.replace(path + ".partial", path)


def timeout_s(expected_s, seconds_left, grace_s):
    """How long a row may run before its worker is taken for hung."""
    return min(
        max(TIMEOUT_FACTOR * expected_s, MINIMUM_TIMEOUT_S), seconds_left + grace_s
    )


def run(rows, expected, deadline, pool, record, clock):
    """Runs `rows` in order through `pool` until `deadline` (on `clock`).

    `pool.is_running(worker)` says whether a worker is up; `pool.run(row,
    timeout_s)` runs one row and returns (result fields, seconds the row
    took, seconds its worker took to start or None). `record(row, fields)`
    keeps each result, skipped ones included.
    """
    last_rows = {row.worker: index for index, row in enumerate(rows)}
    for index, row in enumerate(rows):
        if row.skip:
            record(row, dict(skipped=row.skip))
            continue
        needs = expected.row(row)
        if not pool.is_running(row.worker):
            needs += expected.start(row.worker)
        left = deadline - clock()
        if needs > left:
            reason = f"time budget: expected {needs:.0f} s, {max(left, 0):.0f} s left"
            record(row, dict(skipped=reason))
        else:
            limit = timeout_s(needs, left, pool.grace_s)
            fields, seconds, start_s = pool.run(row, limit)
            # A row that failed early says nothing of its time; a hung one
            # is expected to take at least its time-out next time.
            if "error" not in fields or seconds >= limit:
                expected.measured(row, seconds)
            if start_s is not None:
                expected.measured_start(row.worker, start_s)
            record(row, fields)
        if last_rows[row.worker] == index:
            pool.stop(row.worker)


class RehearsalPool:
    """A pool on a clock of its own: each row takes `seconds[key]` (its
    expected seconds where not given) and a worker's start its expected
    start-up. `--dry-run` and the tests schedule with it."""

    grace_s = 0.0

    def __init__(self, expected, seconds=None, start_s=None):
        self.expected, self.seconds = expected, seconds or {}
        self.start_s = start_s or {}
        self.now, self.last_s, self.running = 0.0, 0.0, set()

    def clock(self):
        return self.now

    def is_running(self, worker):
        return worker in self.running

    def stop(self, worker):
        self.running.discard(worker)

    def run(self, row, timeout_s):
        start_s = None
        if row.worker not in self.running:
            start_s = self.start_s.get(row.worker, self.expected.start(row.worker))
            if WORKERS[row.worker][1]:
                self.running.clear()
            self.running -= {w for w in self.running if WORKERS[w][1]}
            self.running.add(row.worker)
        seconds = self.seconds.get(row.key, self.expected.row(row))
        self.last_s = min(seconds + (start_s or 0.0), timeout_s)
        self.now += self.last_s
        if seconds + (start_s or 0.0) > timeout_s:
            self.stop(row.worker)
            return dict(error=f"no result in {timeout_s:.0f} s"), timeout_s, None
        return dict(value=1.0, seconds=seconds), seconds, start_s
