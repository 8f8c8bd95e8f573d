"""Every row of the check, in the order of what it decides.

Tier 1 is what must hold before any speed means anything (the card's matmul
peak, timm parity in float32, cached generation, a mixed_bfloat16 step);
tier 2 the headline speed rows in bfloat16 (gMLP-S/16 and Mixer-B/16 against
timm eager and compiled, gMLP-base and aMLP-base against BERT-base eager and
compiled, generation, the largest batch); tier 3 the rest (float32) and the kernel profiles of JAX steps. A
peer's row comes before ours, so that a ratio has both sides.

A row names the function its worker runs (`module.function`) and that
function's keyword arguments; the parent and the worker build the same plan
and pass rows by key.
"""

import dataclasses

from _accelerator import sizes as sizes_module

# (worker, Keras backend or None for plain PyTorch, exclusive): an exclusive
# worker runs with no other worker alive, since it measures the card's memory.
WORKERS = {
    "peers": (None, False),
    "keras-jax": ("jax", False),
    "keras-torch": ("torch", False),
    "memory-jax": ("jax", True),
    "memory-torch": ("torch", True),
}
# torch.compile takes minutes on a CPU; the GPU run compiles.
QUICK_COMPILE = "torch.compile is left to the GPU run"


@dataclasses.dataclass(frozen=True)
class Row:
    tier: int
    worker: str
    section: str
    item: str
    function: str
    arguments: tuple = ()
    skip: str = None

    @property
    def key(self):
        return f"{self.worker} {self.item}"

    def kwargs(self):
        return dict(self.arguments)


class _Rows(list):
    def add(self, tier, worker, section, item, function, skip=None, **arguments):
        self.append(
            Row(tier, worker, section, item, function, tuple(arguments.items()), skip)
        )


# runner: (worker, function, compiled); a runner compiled with
# torch.compile is left out of `--quick` (minutes on a CPU).
RUNNERS = {
    "timm-eager": ("peers", "peers.timm_images", False),
    "timm-compile": ("peers", "peers.timm_images", True),
    "bert-eager": ("peers", "peers.bert_tokens", False),
    "bert-compile": ("peers", "peers.bert_tokens", True),
    "keras-jax": ("keras-jax", None, None),
    "keras-torch": ("keras-torch", None, None),
    "keras-torch-compile": ("keras-torch", None, True),
}
EAGER = ("keras-jax", "keras-torch")
ALL_KERAS = EAGER + ("keras-torch-compile",)


def build(quick, workers=tuple(WORKERS), compile_at_quick=False):
    """The rows of `workers`, most decisive first. At `quick` sizes the
    torch.compile rows are skipped unless `compile_at_quick`."""
    size = sizes_module.sizes(quick)
    texts = size["speed_text_models"]
    images = size["speed_image_models"]
    rows = _Rows()

    def speed(tier, section, mode, runners, models, precision="bfloat16"):
        skip = quick and not compile_at_quick
        speed_rows(rows, tier, section, mode, runners, models, precision, skip)

    correctness(rows, size)
    # The headline, bfloat16: gMLP-S/16 training against timm and gMLP-base
    # against BERT-base (eager and compiled), Mixer-B/16, the aMLP, then
    # inference, generation and the largest batch.
    timm = ("timm-eager", "timm-compile")
    bert = ("bert-eager", "bert-compile")
    speed(2, "images", "train", timm + ALL_KERAS, images[:1])
    speed(2, "mlm", "train", bert + ALL_KERAS, texts[:1])
    speed(2, "images", "train", timm + ALL_KERAS, images[1:])
    speed(2, "mlm", "train", EAGER, texts[1:])
    speed(2, "images", "infer", timm + EAGER, images)
    generation(rows, size)
    memory(rows, size)
    # The rest: Keras' compiled PyTorch where it is not headline, float32.
    speed(3, "images", "infer", ("keras-torch-compile",), images)
    speed(3, "mlm", "train", ("keras-torch-compile",), texts[1:])
    if "float32" in size["speed_precisions"]:
        for mode in ("train", "infer"):
            speed(3, "images", mode, ("timm-eager",) + EAGER, images, "float32")
        speed(3, "mlm", "train", ("bert-eager",) + EAGER, texts[:1], "float32")
    profiles(rows, images + texts[:1], images)
    return [row for row in rows if row.worker in workers]


def correctness(rows, size):
    for dtype in ("bfloat16", "float32"):
        rows.add(
            1, "peers", "peak", f"matmul {dtype}", "peers.matmul_peak", dtype=dtype
        )
    for name in size["image_models"]:
        item = f"{name} timm reference"
        rows.add(1, "peers", "parity", item, "peers.timm_reference", name=name)
    for worker in EAGER:
        for name in size["image_models"]:
            for highest in (True, False):
                label = "float32 TF32 off" if highest else "float32 default"
                rows.add(
                    1,
                    worker,
                    "parity",
                    f"{name} {label}",
                    "keras_checks.timm_parity",
                    name=name,
                    highest=highest,
                )
        rows.add(
            1,
            worker,
            "generation",
            "cached = full-forward greedy",
            "keras_checks.greedy_equal",
        )
        rows.add(
            1,
            worker,
            "mixed",
            "mixed_bfloat16 training step",
            "keras_checks.mixed_step",
        )


def speed_rows(rows, tier, section, mode, runners, models, precision, skip_compile):
    """One row per model and runner: images/s (`section="images"`) or
    masked-LM training tokens/s (BERT-base for the peers, once)."""
    for name in models:
        for runner in runners:
            worker, function, compiled = RUNNERS[runner]
            if function is None:
                function = (
                    f"keras_speed.{'image' if section == 'images' else 'mlm'}_speed"
                )
            model = "bert_base" if runner.startswith("bert") else name
            item = f"{model} {mode} {precision} {runner}"
            if any(row.key == f"{worker} {item}" for row in rows):
                continue  # BERT's row, given for an earlier model
            rows.add(
                tier,
                worker,
                section,
                item,
                function,
                skip=QUICK_COMPILE if compiled and skip_compile else None,
                name=model,
                mode=mode,
                precision=precision,
                compiled=compiled,
            )


def generation(rows, size):
    for batch in size["generation"]["batches"]:
        for worker in EAGER:
            rows.add(
                2,
                worker,
                "generation",
                f"tokens/s batch {batch} {worker}",
                "keras_speed.generation_speed",
                batch=batch,
            )


def profiles(rows, models, images):
    """Where a Keras-JAX bfloat16 training step spends the card's time, per
    kernel (issue 64's profile), last: each compiles its model again, from
    the persistent compilation cache when its speed row ran."""
    for name in models:
        task = "images" if name in images else "mlm"
        item = f"{name} train bfloat16 profile"
        rows.add(
            3,
            "keras-jax",
            "profile",
            item,
            "profile.jax_step_profile",
            name=name,
            task=task,
        )


def memory(rows, size):
    model = "gmlp_base"
    for worker in ("memory-jax", "memory-torch"):
        for batch in size["memory_probe_batches"]:
            item = f"{model} batch {batch} peak memory"
            rows.add(2, worker, "memory", item, "memory.probe", batch=batch)
        rows.add(2, worker, "memory", f"{model} largest batch", "memory.largest_batch")
        item = f"{model} paper batch {size['paper_batch']}"
        rows.add(2, worker, "memory", item, "memory.paper_batch")
