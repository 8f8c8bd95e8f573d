"""Where a Keras-JAX training step spends the card's time: a JAX profile of a
few steps, summed per XLA kernel and per kind of kernel.

Read from `jax.profiler`'s own trace (`ProfileData`), so nothing beyond JAX
is needed on the GPU host. On a GPU the device plane's kernels are counted;
on a CPU (the rehearsal) the host's XLA thunks, which carry the same
`hlo_op` names. Overlapping streams are summed, so the shares are of the
kernels' time, not of the wall clock.
"""

import collections
import glob
import os
import re
import tempfile

from _accelerator import keras_speed
from _accelerator import kernel_sources
from _accelerator.keras_precision import synchronize

# Kinds of kernel, first match wins: the products (cuBLAS, cuDNN, Triton
# and CUTLASS GEMMs, XLA's dots), the layout changes a layer can avoid, the
# reductions (norms, losses) and the rest of the fused elementwise work.
KINDS = (
    ("products", re.compile(r"gemm|cublas|cutlass|nvjet|xmma|dot|matmul|conv", re.I)),
    ("transposes and copies", re.compile(r"transpose|copy", re.I)),
    ("reductions", re.compile(r"reduce|reduction", re.I)),
    ("elementwise fusions", re.compile(r"fusion", re.I)),
)
TOP = 12


def jax_step_profile(context, name, task, steps=3):
    """The summary of `steps` profiled bfloat16 training steps of `name`
    (an image model, or a text model's masked LM at the card's batch)."""
    import jax

    step = training_step(context, name, task)
    for _ in range(context.size["warmup"]):
        synchronize(step())
    with tempfile.TemporaryDirectory() as directory:
        with jax.profiler.trace(directory):
            for _ in range(steps):
                synchronize(step())
        (path,) = glob.glob(
            os.path.join(directory, "**", "*.xplane.pb"), recursive=True
        )
        data = jax.profiler.ProfileData.from_file(path)
    result = summary(kernel_times(data), steps)
    directory = kernel_sources.dump_directory()
    result["top"] = kernel_sources.describe(result["top"], directory)
    return result


def training_step(context, name, task):
    if task == "images":
        _, step, _ = keras_speed.image_runner(context, name, "train", "bfloat16", None)
        return step
    size = context.size
    model = keras_speed.masked_lm(name, context.quick, size["text_length"], "bfloat16")
    x, y = keras_speed.mlm_batch(size, size["text_batch"])
    return lambda: model.train_on_batch(x, y)


def kernel_times(data):
    """{kernel name: [total ns, count]} over the device planes, or over the
    host's XLA thunks where there is no device plane (a CPU)."""
    planes = [plane for plane in data.planes if plane.name.startswith("/device:")]
    on_host = not planes
    if on_host:
        planes = [plane for plane in data.planes if plane.name == "/host:CPU"]
    times = collections.defaultdict(lambda: [0.0, 0])
    for plane in planes:
        for line in plane.lines:
            for event in line.events:
                stats = dict(event.stats)
                if on_host and "hlo_op" not in stats:
                    continue
                label = stats.get("hlo_op", event.name)
                if label != event.name:
                    label = f"{label} ({event.name[:60]})"
                times[label][0] += event.duration_ns
                times[label][1] += 1
    return times


def kind_of(label):
    for kind, pattern in KINDS:
        if pattern.search(label):
            return kind
    return "other"


def summary(times, steps):
    total_ms = sum(ns for ns, _ in times.values()) / 1e6 / steps
    by_kind = collections.defaultdict(float)
    for label, (ns, _) in times.items():
        by_kind[kind_of(label)] += ns / 1e6 / steps
    ranked = sorted(times.items(), key=lambda item: -item[1][0])[:TOP]
    return dict(
        value=round(total_ms, 3),
        unit="ms of kernels per step",
        kernels_per_step=round(sum(count for _, count in times.values()) / steps, 1),
        kinds={
            kind: dict(ms=round(ms, 3), share=round(ms / total_ms, 3))
            for kind, ms in sorted(by_kind.items(), key=lambda item: -item[1])
        },
        top=[
            dict(
                kernel=label,
                ms=round(ns / 1e6 / steps, 3),
                share=round(ns / 1e6 / steps / total_ms, 3),
                per_step=count / steps,
            )
            for label, (ns, count) in ranked
        ],
    )
