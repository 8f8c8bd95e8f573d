"""Fast on the card: keras-gmlp's images/s, masked-LM tokens/s and cached
generation tokens/s on one Keras backend.

XLA compiles on JAX; PyTorch runs eagerly, and with `jit_compile=True`
(torch.compile) in the `keras-torch-compile` rows. The batches are put on the card once,
as timm's and BERT's are, so no step pays a host-to-device copy.

Training rows time `fit`, the loop the programs run, over steps on that
batch. `train_on_batch`, which they timed before, copies the loss to the
host after each step and, on JAX, then reassigns every variable (about
1,000 for gMLP-S with AdamW's): host time with the card idle. On the H200
gMLP-S's kernels took 36 ms of a 47 ms `train_on_batch` step; on this
repository's CPU a 24-block model's step took 12 ms that way and 5 ms in
`fit`.
"""

import keras
import numpy as np

from _accelerator import keras_checks
from _accelerator import peers
from _accelerator import sizes as sizes_module
from _accelerator.keras_precision import synchronize
from _accelerator.record import median_seconds
from keras_gmlp.applications._checked_functional import CheckedFunctional

PRECISIONS = {"bfloat16": "mixed_bfloat16", "float32": "float32"}


def runner():
    return f"keras-{keras.backend.backend()}"


def resolved_jit_compile(jit_compile):
    """`jit_compile`, or the backend's default where it is None."""
    return default_jit_compile() if jit_compile is None else jit_compile


def default_jit_compile():
    """XLA on JAX; PyTorch eagerly, as Keras users run it by default."""
    return keras.backend.backend() != "torch"


def image_runner(context, name, mode, precision, jit_compile, keep=False):
    """(model, step, batch) of one image model, mode and precision: `step()`
    trains on (or predicts) `batch` on the card. With `keep`, it is kept for the
    next call (the mixed_bfloat16 check's, for its speed row), which takes
    it: one build and compile serve both, and the model is freed after."""
    key = ("images", name, mode, precision, jit_compile)
    kept = context.state.setdefault("kept_runners", {})
    if key in kept:
        return kept.pop(key)
    size = context.size
    jit = resolved_jit_compile(jit_compile)
    keras.config.set_dtype_policy(PRECISIONS[precision])
    try:
        keras.utils.set_random_seed(0)
        model = keras_checks.image_model(name, context.quick)
    finally:
        keras.config.set_dtype_policy("float32")
    batch, image = size["image_batch"], size["image_size"]
    rng = np.random.default_rng(0)
    x = keras.ops.convert_to_tensor(
        rng.uniform(0, 255, (batch, image, image, 3)).astype("float32")
    )
    y = keras.ops.convert_to_tensor(rng.integers(0, 1000, (batch,)))
    if mode == "infer":
        model.compile(jit_compile=jit)
        step = lambda: model.predict_on_batch(x)  # noqa: E731
    else:
        model.compile(
            optimizer=keras.optimizers.AdamW(1e-4),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=jit,
        )
        step = lambda: model.train_on_batch(x, y)  # noqa: E731
    if keep:
        kept[key] = model, step, (x, y)
    return model, step, (x, y)


def fit_step_seconds(model, batch, size):
    """The median seconds of a training step of `model.fit` on `batch`,
    over rounds of `2 * repeats` steps."""
    steps = 2 * size["repeats"]

    def fit(count):
        def batches():
            while True:
                yield batch

        model.fit(batches(), steps_per_epoch=count, epochs=1, verbose=0)
        return model.trainable_variables[-1].value

    synchronize(fit(size["warmup"]))
    return median_seconds(lambda: fit(steps), 0, 3, synchronize) / steps


def image_speed(context, name, mode, precision, compiled):
    """keras-gmlp's images/s at the card's batch."""
    size = context.size
    model, step, batch = image_runner(context, name, mode, precision, compiled)
    if mode == "train":
        seconds = fit_step_seconds(model, batch, size)
    else:
        seconds = median_seconds(step, size["warmup"], size["repeats"], synchronize)
    row = peers.image_row(name, mode, precision, size, seconds, context.quick)
    return dict(row, runner=runner() + ("-compile" if compiled else ""))


def masked_lm(
    name,
    quick,
    length,
    precision,
    accumulation_steps=None,
    jit_compile=None,
    functional=False,
):
    """The masked LM of throughput.py's row `name` (gMLPBackbone and its
    MLM head), compiled with AdamW as the programs train it; with
    `functional`, a functional model over its layers, which `fit` trains on
    batches as they are (the task's `fit` wants arrays or a dataset), as
    the programs do."""
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPMaskedLM

    config = sizes_module.text_config(name, quick)
    keras.config.set_dtype_policy(PRECISIONS[precision])
    try:
        keras.utils.set_random_seed(0)
        backbone = gMLPBackbone(
            vocabulary_size=30522,
            num_layers=config["num_blocks"],
            hidden_dim=config["hidden_dim"],
            intermediate_dim=config["mlp_dim"],
            max_sequence_length=length,
            attention_dim=config.get("attention_dim"),
        )
        model = gMLPMaskedLM(backbone)
    finally:
        keras.config.set_dtype_policy("float32")
    if functional:
        model = CheckedFunctional(model.input, model.output)
    model.compile(
        optimizer=keras.optimizers.AdamW(
            1e-4, gradient_accumulation_steps=accumulation_steps
        ),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=resolved_jit_compile(jit_compile),
    )
    return model


def mlm_batch(size, batch):
    """Random token ids with BERT's share of masked positions, on the card."""
    length, masked = size["text_length"], size["masked_per_sequence"]
    rng = np.random.default_rng(0)
    token_ids = rng.integers(1000, 30522, (batch, length)).astype("int32")
    positions = np.sort(rng.random((batch, length)).argsort(-1)[:, :masked], -1)
    x = {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": np.ones_like(token_ids),
        "mask_positions": positions.astype("int32"),
    }
    y = np.take_along_axis(token_ids, positions, -1)
    convert = keras.ops.convert_to_tensor
    return {k: convert(v) for k, v in x.items()}, convert(y)


def mlm_speed(context, name, mode, precision, compiled):
    """The masked LM's training (`mode`) tokens/s at 512 tokens, batch 32."""
    size, quick = context.size, context.quick
    model = masked_lm(
        name,
        quick,
        size["text_length"],
        precision,
        jit_compile=compiled,
        functional=True,
    )
    seconds = fit_step_seconds(model, mlm_batch(size, size["text_batch"]), size)
    row = peers.text_row(name, precision, size, seconds, quick)
    return dict(row, runner=runner() + ("-compile" if compiled else ""))


def generation_speed(context, batch):
    """Greedy generation with the decoding cache: new tokens per second,
    and which decoder ran (`decoding.decoder_name`: on PyTorch
    "cuda-graphs" on the card, "eager-torch" on CPUs)."""
    from keras_gmlp.models.gmlp.decoding import decoder_name

    size = context.size
    generation = size["generation"]
    model = keras_checks.causal_lm(generation)
    inputs = keras_checks.prompts(generation, batch)
    seconds = median_seconds(
        lambda: model.generate(inputs, stop_token_ids=None),
        1,
        max(2, size["repeats"] // 3),
        synchronize,
    )
    rate = batch * generation["new_tokens"] / seconds
    return dict(
        value=round(rate, 1), unit="tokens/s", batch=batch, decoder=decoder_name(model)
    )
