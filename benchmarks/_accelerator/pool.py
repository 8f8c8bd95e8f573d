"""The worker processes, kept running between their rows.

Each worker (`accelerator.py --worker NAME`) imports its framework once,
keeps what it has built and compiled, and runs the rows it is sent on its
standard input, one key a line, appending each result to `results.jsonl`
with that key. The parent waits for the key to appear there. A worker that
dies, or runs past a row's time-out, is stopped and its row recorded as an
error; it starts again for its next row. An exclusive worker (the memory
probes) runs with no other worker holding the card's memory.
"""

import json
import os
import subprocess
import sys
import time

from _accelerator.plan import WORKERS

POLL_S = 0.05


class ResultsFile:
    """Reads the rows appended to `path` since the last call."""

    def __init__(self, path):
        self.path, self.offset = path, 0

    def new_rows(self):
        with open(self.path) as file:
            file.seek(self.offset)
            text = file.read()
        complete = text[: text.rfind("\n") + 1]
        self.offset += len(complete.encode())
        return [json.loads(line) for line in complete.splitlines() if line.strip()]


class Pool:
    def __init__(self, command, out, environment, log_dir=None, grace_s=30.0):
        """`command(worker)` is the worker's command line; `environment(worker)`
        its environment. Each worker's output goes to `log_dir/WORKER.log`."""
        self.command, self.out, self.environment = command, out, environment
        self.log_dir, self.grace_s = log_dir or out, grace_s
        self.processes, self.logs = {}, {}
        self.results = ResultsFile(os.path.join(out, "results.jsonl"))

    def is_running(self, worker):
        process = self.processes.get(worker)
        return process is not None and process.poll() is None

    def start(self, worker):
        exclusive = WORKERS[worker][1]
        for other in list(self.processes):
            if other != worker and (exclusive or WORKERS[other][1]):
                self.stop(other)
        log = open(os.path.join(self.log_dir, f"{worker}.log"), "a")
        self.logs[worker] = log
        self.processes[worker] = subprocess.Popen(
            self.command(worker),
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.environment(worker),
            text=True,
        )

    def stop(self, worker):
        process = self.processes.pop(worker, None)
        if process is None:
            return
        if process.poll() is None:
            try:
                process.stdin.close()
                process.wait(timeout=self.grace_s)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
                process.wait()
        self.logs.pop(worker).close()

    def stop_all(self):
        for worker in list(self.processes):
            self.stop(worker)

    def run(self, row, timeout_s):
        """(fields, seconds, start-up seconds or None) of one row."""
        started = not self.is_running(row.worker)
        if started:
            self.stop(row.worker)
            self.start(row.worker)
        begin = time.time()
        process = self.processes[row.worker]
        try:
            process.stdin.write(row.key + "\n")
            process.stdin.flush()
        except OSError:
            pass  # it died at start-up: reported below
        fields = self.wait_for(row, process, begin, timeout_s)
        seconds = time.time() - begin
        start_s = None
        if started and "seconds" in fields:
            start_s = max(seconds - fields["seconds"], 0.0)
            seconds = fields["seconds"]
        return fields, seconds, start_s

    def wait_for(self, row, process, begin, timeout_s):
        log = f"workers.log ({row.worker})"
        while True:
            for result in self.results.new_rows():
                if result.get("key") == row.key:
                    return result
            if process.poll() is not None:
                self.stop(row.worker)
                return dict(
                    error=f"{row.worker} exited {process.returncode}; see {log}"
                )
            if time.time() > begin + timeout_s:
                process.kill()
                self.stop(row.worker)
                return dict(error=f"no result in {timeout_s:.0f} s; see {log}")
            time.sleep(POLL_S)


def worker_command(script, args, worker):
    command = [sys.executable, script, "--worker", worker, "--out", args.out]
    command += ["--workdir", args.workdir]
    return command + (["--quick"] if args.quick else [])


def gather_logs(log_dir, path):
    """The workers' logs, one after another under a heading each, as one
    file (the device tool brings back at most 8 files)."""
    with open(path + ".partial", "w") as gathered:
        for name in sorted(os.listdir(log_dir)):
            if name.endswith(".log"):
                gathered.write(f"===== {name}\n")
                with open(os.path.join(log_dir, name)) as log:
                    gathered.write(log.read())
    os.replace(path + ".partial", path)
