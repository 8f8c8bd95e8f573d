"""Fast on the card: keras-gmlp's images/s, masked-LM tokens/s and cached
generation tokens/s on one Keras backend, at the default precision.

XLA compiles on JAX; PyTorch runs eagerly, and with `jit_compile=True`
(torch.compile) for the masked LM. The batches are put on the card once,
as timm's and BERT's are, so no step pays a host-to-device copy.
"""

import functools

import keras
import numpy as np

from _accelerator import keras_checks
from _accelerator import peers
from _accelerator import sizes as sizes_module
from _accelerator.keras_precision import synchronize
from _accelerator.record import median_seconds

PRECISIONS = {"bfloat16": "mixed_bfloat16", "float32": "float32"}


def run(results, quick, workdir):
    """bfloat16 first (images, masked LMs, generation), then float32 (the
    gMLP masked LM only), then the masked LM under torch.compile."""
    size = sizes_module.sizes(quick)
    worker = results.worker
    for precision in size["speed_precisions"]:
        for mode in ("train", "infer"):
            image_runs(results, size, quick, mode, precision)
        models = size["speed_text_models"]
        for name in models if precision == "bfloat16" else models[:1]:
            measure = functools.partial(mlm_speed, name, size, quick, precision)
            results.attempt("mlm", f"{name} train {precision} {worker}", measure, 60)
        for batch in size["generation"]["batches"] if precision == "bfloat16" else ():
            measure = functools.partial(generation_speed, size, batch)
            results.attempt("generation", f"tokens/s batch {batch} {worker}", measure)
    if keras.backend.backend() != "torch":
        return
    item = f"gmlp_base train bfloat16 {worker}-compile"
    if quick:
        results.add("mlm", item, skipped=peers.QUICK_COMPILE)
        return
    measure = functools.partial(mlm_speed, "gmlp_base", size, quick, "bfloat16", True)
    results.attempt("mlm", item, measure, 90)


def image_runs(results, size, quick, mode, precision):
    for name in size["speed_image_models"]:
        results.attempt(
            "images",
            f"{name} {mode} {precision} {results.worker}",
            lambda n=name: image_speed(n, size, quick, mode, precision),
            30,
        )


def runner():
    return f"keras-{keras.backend.backend()}"


def default_jit_compile():
    """XLA on JAX; PyTorch eagerly, as Keras users run it by default."""
    return keras.backend.backend() != "torch"


def image_speed(name, size, quick, mode, precision):
    keras.config.set_dtype_policy(PRECISIONS[precision])
    try:
        keras.utils.set_random_seed(0)
        model = keras_checks.image_model(name, quick)
        batch, image = size["image_batch"], size["image_size"]
        rng = np.random.default_rng(0)
        x = keras.ops.convert_to_tensor(
            rng.uniform(0, 255, (batch, image, image, 3)).astype("float32")
        )
        y = keras.ops.convert_to_tensor(rng.integers(0, 1000, (batch,)))
        if mode == "infer":
            model.compile(jit_compile=default_jit_compile())
            step = lambda: model.predict_on_batch(x)  # noqa: E731
        else:
            model.compile(
                optimizer=keras.optimizers.AdamW(1e-4),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                jit_compile=default_jit_compile(),
            )
            step = lambda: model.train_on_batch(x, y)  # noqa: E731
        seconds = median_seconds(step, size["warmup"], size["repeats"], synchronize)
    finally:
        keras.config.set_dtype_policy("float32")
    row = peers.image_row(name, mode, precision, size, seconds, quick)
    return dict(row, runner=runner())


def masked_lm(
    name, quick, length, precision, accumulation_steps=None, jit_compile=None
):
    """The masked LM of throughput.py's row `name` (gMLPBackbone and its
    MLM head), compiled with AdamW as the programs train it."""
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
    model.compile(
        optimizer=keras.optimizers.AdamW(
            1e-4, gradient_accumulation_steps=accumulation_steps
        ),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=default_jit_compile() if jit_compile is None else jit_compile,
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


def mlm_speed(name, size, quick, precision, jit_compile=None):
    model = masked_lm(
        name, quick, size["text_length"], precision, jit_compile=jit_compile
    )
    x, y = mlm_batch(size, size["text_batch"])
    seconds = median_seconds(
        lambda: model.train_on_batch(x, y), size["warmup"], size["repeats"], synchronize
    )
    row = peers.text_row(name, precision, size, seconds, quick)
    return dict(row, runner=runner() + ("-compile" if jit_compile else ""))


def generation_speed(size, batch):
    """Greedy generation with the decoding cache: new tokens per second."""
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
    return dict(value=round(rate, 1), unit="tokens/s", batch=batch)
