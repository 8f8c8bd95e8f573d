"""`compile(jit_compile=True)` trains, evaluates and predicts as the eager
steps do, on every backend (XLA on TensorFlow and JAX; on PyTorch the
library's own compiled steps, keras_gmlp/utils/_torch_compiled_steps.py).
On PyTorch, a training step is at most 2 dynamo graphs with no graph break,
and nothing recompiles after the second step (issue 67: Keras' own
`torch.compile` of its step gave gMLP-Ti at 32x32 11 graphs and 25 breaks).
"""

import keras
import numpy as np
import pytest

from keras_gmlp.applications.gmlp import gMLP
from keras_gmlp.applications.mlp_mixer import MLPMixer
from keras_gmlp.utils._checked_steps import CheckedSteps
from keras_gmlp.utils._keras_version import keras_version
from keras_gmlp.utils.variants import GMLP_IMAGE_VARIANTS
from keras_gmlp.utils.variants import MLP_MIXER_VARIANTS

TORCH = keras.config.backend() == "torch"
STEPS = 4


# Two blocks of each variant's widths: every block records the same
# operators, and the full depth took minutes on CI's 2 cores.
BLOCKS = 2


def _gmlp_ti16():
    variant = GMLP_IMAGE_VARIANTS["gmlp_ti16"]
    return gMLP(
        num_blocks=BLOCKS,
        hidden_dim=variant["hidden_dim"],
        intermediate_dim=variant["intermediate_dim"],
        input_shape=(32, 32, 3),
        classes=10,
        classifier_activation=None,
        # The paper's recipe drops paths; a seeded draw on PyTorch reads its
        # seed back to the host, which no compiled step records.
        drop_path_rate=0.1,
    )


def _mixer_b16():
    variant = MLP_MIXER_VARIANTS["mixer_b16"]
    return MLPMixer(
        num_blocks=BLOCKS,
        hidden_dim=variant["hidden_dim"],
        tokens_mlp_dim=variant["tokens_mlp_dim"],
        channels_mlp_dim=variant["channels_mlp_dim"],
        input_shape=(32, 32, 3),
        classes=10,
        classifier_activation=None,
    )


def _image_task(builder):
    def make():
        model = builder()
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        rng = np.random.default_rng(0)
        x = rng.uniform(0, 255, (2, 32, 32, 3)).astype("float32")
        return model, loss, x, rng.integers(0, 10, (2,)), None

    return make


def _text_task(causal):
    def make():
        from keras_gmlp.models import gMLPBackbone
        from keras_gmlp.models import gMLPCausalLM
        from keras_gmlp.models import gMLPMaskedLM

        backbone = gMLPBackbone(
            vocabulary_size=50,
            num_layers=2,
            hidden_dim=16,
            intermediate_dim=32,
            max_sequence_length=12,
            attention_dim=8,
            causal=causal,
            dropout=0.0,
        )
        rng = np.random.default_rng(0)
        ids = rng.integers(5, 50, (2, 12)).astype("int32")
        x = {"token_ids": ids, "padding_mask": np.ones_like(ids)}
        if causal:
            return gMLPCausalLM(backbone), None, x, np.roll(ids, -1, 1), None
        x["segment_ids"] = np.zeros_like(ids)
        x["mask_positions"] = np.array([[1, 4, 7], [2, 3, 9]], "int32")
        y = rng.integers(5, 50, (2, 3)).astype("int32")
        return gMLPMaskedLM(backbone), None, x, y, np.ones((2, 3), "float32")

    return make


TASKS = {
    "gmlp_ti16": _image_task(_gmlp_ti16),
    "mixer_b16": _image_task(_mixer_b16),
    "masked_lm": _text_task(causal=False),
    "causal_lm": _text_task(causal=True),
}


def _train(task, jit_compile, after_step=None):
    """The losses of `STEPS` training steps, then evaluate's loss and
    predict's outputs, from the same initial weights."""
    keras.utils.set_random_seed(0)
    model, loss, x, y, weight = TASKS[task]()
    kwargs = {"loss": loss} if loss is not None else {}
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3), jit_compile=jit_compile, **kwargs
    )
    losses = []
    for step in range(STEPS):
        logs = model.train_on_batch(x, y, sample_weight=weight, return_dict=True)
        losses.append(logs["loss"])
        if after_step:
            after_step(step)
    evaluated = model.evaluate(x, y, sample_weight=weight, verbose=0, return_dict=True)
    predicted = keras.tree.flatten(model.predict_on_batch(x))[0]
    return np.array(losses + [evaluated["loss"]]), predicted


def test_compiled_steps_give_eager_losses():
    # One task: XLA's compilations cost CI 20-70 s each (JAX, 2 cores).
    if TORCH:
        pytest.skip("On PyTorch, test_torch_compiled_step_is_two_graphs checks this")
    eager_losses, eager_outputs = _train("causal_lm", jit_compile=False)
    losses, outputs = _train("causal_lm", jit_compile=True)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outputs, eager_outputs, rtol=1e-5, atol=1e-5)


# Keras 3.13's PyTorch `ops.slice` guards on its start indices' values
# (GuardOnDataDependentSymNode in make_fx), which the spatial gating unit's
# projection slices: on Keras before 3.15 a gMLP's steps cannot be recorded
# and run eagerly, with the warning that
# test_unrecordable_model_trains_eagerly_with_a_warning checks. CI's floor
# lane (Keras 3.13) showed it; 3.15 records them.
OLD_KERAS_SLICE = tuple(int(p) for p in keras.__version__.split(".")[:2]) < (3, 15)


@pytest.mark.skipif(not TORCH, reason="dynamo's graphs exist on PyTorch only")
@pytest.mark.parametrize("task", sorted(TASKS))
def test_torch_compiled_step_is_two_graphs(task, monkeypatch):
    if OLD_KERAS_SLICE and task != "mixer_b16":
        pytest.skip(f"Keras {keras.__version__}'s ops.slice cannot be recorded")
    import torch
    from torch._dynamo.utils import counters

    from keras_gmlp.utils import _torch_compiled_steps

    # The graphs dynamo captures do not depend on the backend compiling
    # them; aot_eager splits forward and backward as inductor does.
    monkeypatch.setattr(_torch_compiled_steps, "COMPILER", "aot_eager")
    eager_losses, eager_outputs = _train(task, jit_compile=False)
    torch._dynamo.reset()
    counters.clear()
    graphs_after = []

    def count(step):
        graphs_after.append(counters["stats"]["unique_graphs"])
        assert sum(counters["graph_break"].values()) == 0, dict(counters["graph_break"])

    losses, outputs = _train(task, jit_compile=True, after_step=count)
    # Forward with loss (its backward compiled by AOTAutograd), then the
    # optimizer's update; the same two for every later step.
    assert graphs_after == [2] * STEPS
    assert sum(counters["graph_break"].values()) == 0
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outputs, eager_outputs, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not TORCH, reason="the library's compiled steps are PyTorch's")
def test_unrecordable_model_trains_eagerly_with_a_warning():
    """A model whose Python reads a tensor's value cannot be recorded: it
    trains with Keras' eager step, and says why, once."""

    class ReadsValues(CheckedSteps, keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)

        def call(self, x):
            scale = 2.0 if float(keras.ops.max(x)) > 0 else 1.0
            return self.dense(x) * scale

    keras.utils.set_random_seed(0)
    model = ReadsValues()
    model.compile(optimizer="sgd", loss="mse", jit_compile=True)
    x, y = np.ones((2, 3), "float32"), np.zeros((2, 1), "float32")
    with pytest.warns(UserWarning, match="cannot record this model"):
        first = model.train_on_batch(x, y)
    keras.utils.set_random_seed(0)
    eager = ReadsValues()
    eager.compile(optimizer="sgd", loss="mse", jit_compile=False)
    np.testing.assert_allclose(first, eager.train_on_batch(x, y), rtol=1e-6)


@pytest.mark.parametrize("cuda", [True, False])
def test_auto_compiles_torch_steps_on_cuda_only(cuda, monkeypatch):
    """`jit_compile="auto"` takes the compiled steps where PyTorch has a
    CUDA device (faked here: what is checked is the choice, made at
    `compile`), and Keras' eager steps on CPUs; an explicit value and
    several steps per execution are kept as given, and no other backend
    is touched."""
    model = _gmlp_ti16()  # built first: the layers' kernel choice is cached
    if TORCH:
        import torch

        monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    model.compile(loss="mse")
    expected = TORCH and cuda and keras_version() >= (3, 15)
    assert model.uses_compiled_torch_steps is expected
    assert bool(model.jit_compile) is (expected or not TORCH)
    model.compile(loss="mse", jit_compile=False)
    assert not model.uses_compiled_torch_steps
    model.compile(loss="mse", steps_per_execution=2)
    assert not model.uses_compiled_torch_steps
