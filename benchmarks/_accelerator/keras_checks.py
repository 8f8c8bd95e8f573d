"""Correct on the card: timm parity, cached generation against full-forward
greedy decoding, and a mixed_bfloat16 training step.
"""

import os

import keras
import numpy as np
import throughput

from _accelerator import sizes as sizes_module
from _accelerator.keras_precision import float32_precision
from _accelerator.record import relative_error

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Made by timm (tests/fixtures/make_timm_fixtures.py): the reference when
# this interpreter has no timm (CI's `--quick`).
SHIPPED_FIXTURE = os.path.join(ROOT, "tests", "fixtures", "timm_gmlp_tiny")
# Full float32 against float64, as the issue asks; the default precision
# (TF32) is reported against a bfloat16-level bound.
HIGHEST_TOLERANCE = 1e-5
DEFAULT_TOLERANCE = 1e-2


def image_model(name, quick):
    """The builder's model shaped as throughput.py's row `name`."""
    size = sizes_module.sizes(quick)["image_size"]
    return throughput.keras_image_model(sizes_module.image_config(name, quick), size)


def fixture_model(prefix):
    """The shipped fixture's reduced gMLP (tests/applications/helpers.py)."""
    from keras_gmlp.applications.gmlp import gMLP

    golden = np.load(prefix + ".npz")
    dim = int(golden["embed_dim"])
    return gMLP(
        num_blocks=int(golden["num_blocks"]),
        hidden_dim=dim,
        intermediate_dim=6 * dim,
        patch_size=int(golden["patch_size"]),
        input_shape=tuple(int(s) for s in golden["img_size"]) + (3,),
        classes=int(golden["num_classes"]),
        classifier_activation=None,
    )


def reference_prefix(context, name):
    """timm's weights and logits for `name` from the peers' worker, or the
    shipped gMLP fixture where timm did not run (no timm, or `--jobs`
    without peers); None for a model the fixture does not stand for."""
    prefix = os.path.join(context.workdir, f"timm_{name}")
    if os.path.exists(prefix + ".npz"):
        return prefix, name
    if name.startswith("gmlp"):
        return SHIPPED_FIXTURE, "gmlp_tiny_fixture"
    return None, None


def timm_parity(context, name, highest):
    """Our logits with timm's weights against timm's float64 logits (the
    shipped fixture holds timm's float32 ones)."""
    from safetensors.numpy import load_file

    from keras_gmlp.applications import load_timm_weights

    prefix, reference_name = reference_prefix(context, name)
    if prefix is None:
        return dict(skipped=f"no timm reference for {name} (peers did not run)")
    golden = np.load(prefix + ".npz")
    reference = golden["float64"] if "float64" in golden else golden["logits"]
    with float32_precision(highest):
        if prefix == SHIPPED_FIXTURE:
            model = fixture_model(prefix)
        else:
            model = image_model(name, context.quick)
        load_timm_weights(model, load_file(prefix + ".safetensors"))
        model.compile(jit_compile=keras.backend.backend() == "jax")
        logits = keras.ops.convert_to_numpy(model.predict_on_batch(golden["images"]))
    error = relative_error(logits, reference)
    row = dict(value=error, unit="relative error", model=reference_name)
    if "float32_highest" in golden:
        timm_label = "float32_highest" if highest else "float32_default"
        row["timm_error"] = relative_error(golden[timm_label], reference)
    row["passed"] = error <= (HIGHEST_TOLERANCE if highest else DEFAULT_TOLERANCE)
    return row


def causal_lm(generation):
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPCausalLM

    keras.utils.set_random_seed(0)
    backbone = gMLPBackbone(
        vocabulary_size=generation["vocabulary_size"],
        num_layers=generation["num_layers"],
        hidden_dim=generation["hidden_dim"],
        intermediate_dim=generation["intermediate_dim"],
        max_sequence_length=generation["prompt_length"] + generation["new_tokens"],
        attention_dim=generation["attention_dim"],
        causal=True,
        dropout=0.0,
    )
    model = gMLPCausalLM(backbone)
    model.compile(sampler="greedy")
    return model


def prompts(generation, batch):
    prompt, total = (
        generation["prompt_length"],
        generation["prompt_length"] + generation["new_tokens"],
    )
    token_ids = np.zeros((batch, total), "int32")
    rng = np.random.default_rng(0)
    token_ids[:, :prompt] = rng.integers(
        5, generation["vocabulary_size"], (batch, prompt)
    )
    padding_mask = np.repeat(np.arange(total)[None] < prompt, batch, 0)
    return {"token_ids": token_ids, "padding_mask": padding_mask}


def greedy_equal(context):
    """`generate` (the decoding cache) against greedy decoding that runs the
    whole causal forward pass for every new token, in full float32, at the
    check's small size: one compiled forward pass serves every position
    (only the mask changes), so it compiles in seconds."""
    generation = context.size["greedy_check"]
    with float32_precision(True):
        model = causal_lm(generation)
        inputs = prompts(generation, batch=2)
        cached = keras.ops.convert_to_numpy(
            model.generate(inputs, stop_token_ids=None)["token_ids"]
        )
        expected = inputs["token_ids"].copy()
        total = expected.shape[1]
        for position in range(generation["prompt_length"], total):
            mask = np.repeat(np.arange(total)[None] < position, len(expected), 0)
            logits = model.predict_on_batch(
                {"token_ids": expected, "padding_mask": mask}
            )
            logits = keras.ops.convert_to_numpy(logits)
            expected[:, position] = logits[:, position - 1].argmax(-1)
    differing = int((cached != expected).sum())
    return dict(value=differing, unit="tokens differing", passed=differing == 0)


def find_spatial_gating_unit(model):
    stack = [model]
    while stack:
        layer = stack.pop(0)
        if hasattr(layer, "spatial_gating_unit"):
            return layer.spatial_gating_unit
        stack.extend(getattr(layer, "layers", []))
    raise ValueError(f"{model.name} has no gMLP block")


def mixed_step(context):
    """One mixed_bfloat16 training step of gMLP-S/16 (the model and batch of
    its bfloat16 speed row, which then reuses what this compiled): the loss
    is finite, the variables float32, and the SGU's norm computes in
    float32: on gates near 256 (bfloat16's spacing there is 2) a bfloat16
    mean and variance would lose the gates' spread entirely."""
    from _accelerator import keras_speed

    model, step, _ = keras_speed.image_runner(
        context, "gmlp_s16", "train", "bfloat16", None, keep=True
    )
    loss = float(step())
    norm = find_spatial_gating_unit(model).norm
    norm_error = sgu_norm_error(norm)
    float32_variables = all(v.dtype == "float32" for v in model.trainable_variables)
    passed = bool(np.isfinite(loss)) and float32_variables and norm_error < 1e-2
    return dict(
        value=loss,
        unit="loss",
        passed=passed,
        float32_variables=float32_variables,
        compute_dtype=norm.compute_dtype,
        sgu_norm_error=norm_error,
    )


def sgu_norm_error(norm):
    """The relative error of `norm` on bfloat16 gates near 256 against the
    float64 LayerNormalization of the same (bfloat16-rounded) values."""
    rng = np.random.default_rng(0)
    gates = (256 + rng.normal(size=(2, 8, norm.gamma.shape[0]))).astype("float32")
    gates = keras.ops.convert_to_numpy(
        keras.ops.cast(keras.ops.cast(gates, "bfloat16"), "float32")
    )
    normed = norm(keras.ops.cast(gates, "bfloat16"))
    centred = gates - gates.mean(-1, keepdims=True)
    expected = centred / np.sqrt(centred.var(-1, keepdims=True) + norm.epsilon)
    gamma = keras.ops.convert_to_numpy(norm.gamma)
    expected = expected * gamma + keras.ops.convert_to_numpy(norm.beta)
    return relative_error(
        keras.ops.convert_to_numpy(keras.ops.cast(normed, "float32")), expected
    )
