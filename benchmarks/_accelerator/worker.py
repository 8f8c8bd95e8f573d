"""One worker process: runs the rows the parent sends, keeping what it has
built and compiled between them (see pool.py)."""

import contextlib
import dataclasses
import importlib
import os
import sys
import time
import traceback

from _accelerator import plan
from _accelerator import sizes as sizes_module
from _accelerator.record import append_row


@dataclasses.dataclass
class Context:
    """What every row function receives: the sizes, the folder shared by
    the workers (timm's reference weights and logits) and this worker's
    state (compiled models, the memory probes' peaks)."""

    size: dict
    quick: bool
    workdir: str
    state: dict = dataclasses.field(default_factory=dict)


def run_row(context, row):
    module_name, function_name = row.function.split(".")
    module = importlib.import_module(f"_accelerator.{module_name}")
    start = time.time()
    try:
        fields = getattr(module, function_name)(context, **row.kwargs())
    except Exception as error:  # noqa: BLE001 - reported; the next row runs
        traceback.print_exc()
        message = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        fields = dict(error=message)
    return dict(fields, seconds=round(time.time() - start, 1))


def release_cached_memory():
    """PyTorch's allocator keeps freed blocks for itself: given back after
    each row, so that the workers beside this one have the card's memory."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        import gc

        gc.collect()
        torch.cuda.empty_cache()


def kernel_forms():
    """The kernel forms `--kernels` chose for a Keras worker's rows."""
    choice = os.environ.get("ACCELERATOR_KERNELS", "auto")
    if choice == "auto":
        return contextlib.nullcontext()
    from keras_gmlp.layers._kernels import use_kernels

    return use_kernels(choice)


def serve(worker, quick, workdir, results_path):
    """Runs each row key read from standard input until it closes."""
    rows = {row.key: row for row in plan.build(quick, (worker,))}
    # Imported before the first row, so that a row's seconds are its own
    # and the parent counts the imports as the worker's start-up.
    for module in sorted({row.function.split(".")[0] for row in rows.values()}):
        importlib.import_module(f"_accelerator.{module}")
    context = Context(sizes_module.sizes(quick), quick, workdir)
    for line in sys.stdin:
        row = rows[line.strip()]
        print(f"== {row.key}", flush=True)
        with kernel_forms():
            fields = run_row(context, row)
        release_cached_memory()
        row_fields = dict(section=row.section, item=row.item, worker=worker)
        append_row(results_path, dict(row_fields, key=row.key, **fields))
    return 0
