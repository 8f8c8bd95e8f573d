"""What a run reports: progress lines, plots of its history, and
`summary.json` (metrics, parameter count, time, backend and flags), each
file written atomically."""

import json
import math
import sys
import time

import keras

from .files import atomic_path
from .files import write_text


def count_trainable(model):
    """The number of values in the weights that training changes."""
    return int(sum(math.prod(w.shape) for w in model.trainable_weights))


def fit_verbose():
    """Progress bars on a terminal; one line per epoch in a log file."""
    return 1 if sys.stdout.isatty() else 2


def plot_history(history, path, title):
    """Draws every metric in `history` (train and validation together)
    against the epoch, one panel each, into a PNG written atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({n for row in history.rows.values() for n in row})
    bases = [n for n in names if not n.startswith("val_") and n != "learning_rate"]
    bases += [n[4:] for n in names if n.startswith("val_") and n[4:] not in names]
    if not bases:
        return
    epochs = sorted(history.rows)
    figure, axes = plt.subplots(
        1, len(bases), figsize=(4.5 * len(bases), 3.5), squeeze=False
    )
    for axis, base in zip(axes[0], bases):
        for name, label in ((base, "train"), (f"val_{base}", "validation")):
            points = [
                (e + 1, history.rows[e][name])
                for e in epochs
                if name in history.rows[e]
            ]
            if points:
                axis.plot(*zip(*points), marker="o", label=label)
        axis.set_xlabel("epoch")
        axis.set_title(base)
        axis.grid(alpha=0.3)
        axis.legend()
    figure.suptitle(title)
    figure.tight_layout()
    save_figure(figure, path)


def save_figure(figure, path):
    """Saves a matplotlib figure as a PNG, atomically, and closes it."""
    import matplotlib.pyplot as plt

    with atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=110)
    plt.close(figure)


def write_summary(path, args, started, **fields):
    """Writes the run's JSON summary: the given metrics and facts, plus the
    backend, versions, wall time and every flag."""
    summary = {
        "backend": keras.backend.backend(),
        "keras_version": keras.__version__,
        "seconds": round(time.time() - started, 1),
        **fields,
        "flags": vars(args),
    }
    text = json.dumps(summary, indent=2, default=str, sort_keys=False) + "\n"
    write_text(path, text)
    return summary


def plain_log_axis(axis):
    """A log y axis labelled 1, 2, 5 per decade as plain numbers, not
    matplotlib's "2x10^1" for axes that span a decade or two."""
    from matplotlib import ticker

    axis.set_yscale("log")
    axis.yaxis.set_major_locator(ticker.LogLocator(subs=(1, 2, 5)))
    axis.yaxis.set_major_formatter(ticker.StrMethodFormatter("{x:g}"))
    axis.yaxis.set_minor_formatter(ticker.NullFormatter())
