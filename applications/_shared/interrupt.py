"""Ctrl-C in the programs: one line saying how to resume, never a
traceback (standard library only)."""

import os
import re
import signal
import sys
import threading

from .commands import python_command
from .flag_parser import discard_created_output_dir

# Set by the first Ctrl-C. A KeyboardInterrupt raised from a signal handler
# lands wherever Python happens to be, and inside a `__del__` or a garbage
# collector callback (JAX registers one) it is printed as "Exception ignored
# in" with a traceback and then lost. So while `fit` runs with
# `callbacks.StopOnInterrupt`, which sets TRAINING, the handler only sets
# INTERRUPTED and the callback raises at the next batch end, in ordinary
# code. Elsewhere, and on a second Ctrl-C, the handler raises at once.
INTERRUPTED = threading.Event()
TRAINING = threading.Event()
# (this process's index, the number of processes) of a multi-process run,
# set by distribute.start. A collective whose peer died fails at once
# (gloo: "Connection reset by peer"); JAX's distributed runtime would then
# hold the process at exit for its heartbeat timeout (100 s) and abort.
PROCESSES = None
LOST_PEER = re.compile(r"gloo|by peer|heartbeat|socket closed|unavailable", re.I)


def _on_interrupt(signum, frame):
    deferred = TRAINING.is_set() and not INTERRUPTED.is_set()
    INTERRUPTED.set()
    if not deferred:
        raise KeyboardInterrupt


def run(main):
    """Runs `main()`. Ctrl-C prints one line saying how to resume instead of a
    traceback, and exits with status 130 as shells expect. A start refused
    before training begins removes the --output-dir it created."""
    # Only where Ctrl-C would raise anyway: a shell's background job ignores
    # SIGINT, and keeps ignoring it.
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_interrupt)
    try:
        return main()
    except SystemExit as exit:
        if exit.code not in (0, None):
            discard_created_output_dir()  # a refused start leaves nothing
        raise
    except Exception as error:
        if PROCESSES is None or not LOST_PEER.search(str(error)):
            raise
        _lost_peer(error)
    except KeyboardInterrupt:
        command = python_command(*sys.argv)
        print(
            "\nInterrupted. Rerun the same command to resume where it stopped "
            f"(the last completed epoch, or after training): {command}",
            file=sys.stderr,
        )
        sys.exit(130)


def _lost_peer(error):
    """One line naming the lost process, then an exit that skips the
    runtime's shutdown (it would wait for the dead process)."""
    index, count = PROCESSES
    lost = f"process {1 - index}" if count == 2 else "another process"
    reason = str(error).strip().splitlines()[0][:300]
    print(
        f"process {index}: lost {lost} of {count} ({reason}). Rerun all {count} "
        "processes with the same flags to resume from the last checkpoint.",
        file=sys.stderr,
        flush=True,
    )
    sys.stdout.flush()
    os._exit(1)
