"""keras_gmlp/_compat.py is the only place that uses private Keras or
keras-hub names. Each of its hooks is checked here against the installed
keras-hub, failing with a message that names the hook; and a scan of the
sources fails on a private upstream name anywhere else."""

import ast
import inspect
import pathlib
import re

import keras
import keras_hub
import numpy as np
import pytest

from keras_gmlp import _compat
from keras_gmlp.models import gMLPBackbone
from keras_gmlp.models import gMLPMaskedLM
from keras_gmlp.models import gMLPMaskedLMPreprocessor
from keras_gmlp.models import gMLPTextClassifierPreprocessor
from keras_gmlp.models import gMLPTokenizer

# What this module checks does not depend on KERAS_BACKEND: CI runs it in
# one lane only (.ci/run).
pytestmark = pytest.mark.backend_independent

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCANNED = ("keras_gmlp", "applications", "benchmarks")
COMPAT = ROOT / "keras_gmlp" / "_compat.py"

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "fox"]


def hook_changed(hook, detail):
    return (
        f"{hook.split('.')[0]} changed the private hook `{hook}` that "
        f"keras_gmlp/_compat.py relies on: {detail}"
    )


def test_add_missing_kwargs_hook():
    hook = "keras_hub.models.Preprocessor._add_missing_kwargs"
    method = getattr(keras_hub.models.Preprocessor, "_add_missing_kwargs", None)
    assert method is not None, hook_changed(hook, "it is gone")
    parameters = list(inspect.signature(method).parameters)
    assert parameters == ["loader", "kwargs"], hook_changed(
        hook, f"its parameters are now {parameters}"
    )


def test_add_missing_kwargs_hook_sets_the_backbone_length(tmp_path):
    # A masked-LM preset holds no classifier preprocessor: keras-hub builds
    # one through the hook, which must pack to the backbone's length (24),
    # not keras-hub's default of 512.
    tokenizer = gMLPTokenizer(vocabulary=VOCABULARY)
    backbone = gMLPBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=1,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=24,
    )
    masked_lm = gMLPMaskedLM(
        backbone, gMLPMaskedLMPreprocessor(tokenizer, sequence_length=24)
    )
    preset = str(tmp_path / "preset")
    masked_lm.save_to_preset(preset)
    preprocessor = gMLPTextClassifierPreprocessor.from_preset(preset)
    assert preprocessor.sequence_length == 24, hook_changed(
        "keras_hub.models.Preprocessor._add_missing_kwargs",
        "the preset loader no longer calls it for a preprocessor the preset "
        f"did not save (sequence_length={preprocessor.sequence_length})",
    )


def test_add_special_token_hook():
    hook = "keras_hub.tokenizers.Tokenizer._add_special_token"
    method = getattr(keras_hub.tokenizers.Tokenizer, "_add_special_token", None)
    assert method is not None, hook_changed(hook, "it is gone")
    parameters = list(inspect.signature(method).parameters)
    assert parameters == ["self", "token", "name"], hook_changed(
        hook, f"its parameters are now {parameters}"
    )


def test_add_special_token_hook_sets_ids_once_the_vocabulary_is_known():
    tokenizer = gMLPTokenizer()
    tokenizer.set_vocabulary(VOCABULARY)
    found = {
        "pad": (tokenizer.pad_token, tokenizer.pad_token_id),
        "mask": (tokenizer.mask_token, tokenizer.mask_token_id),
        "start": (tokenizer.start_token, tokenizer.start_token_id),
    }
    assert found == {
        "pad": ("[PAD]", 0),
        "mask": ("[MASK]", 4),
        "start": ("[CLS]", 2),
    }, hook_changed("keras_hub.tokenizers.Tokenizer._add_special_token", found)
    assert set(tokenizer.special_tokens) == {"[PAD]", "[CLS]", "[SEP]", "[MASK]"}


# --- The scan -----------------------------------------------------------

# Private names with a public look: Keras' JAX trainer internals.
UPSTREAM_INTERNALS = {"jax_state_sync"}

# Underscore names that are public API of Python: namedtuples' methods, and
# os._exit (documented; the programs' lost-process exit skips the runtime's
# shutdown with it).
PUBLIC_UNDERSCORE_NAMES = {"_replace", "_asdict", "_fields", "_make", "_exit"}

UPSTREAM_SRC = re.compile(r"\bkeras(?:_hub)?\.src\b")


def upstream_bases():
    hub_models = (
        "Backbone",
        "Task",
        "Preprocessor",
        "MaskedLM",
        "CausalLM",
        "TextClassifier",
        "ImageClassifier",
        "MaskedLMPreprocessor",
        "CausalLMPreprocessor",
        "TextClassifierPreprocessor",
        "ImageClassifierPreprocessor",
    )
    return [
        keras.Layer,
        keras.Model,
        keras.Sequential,
        keras.Variable,
        keras.DTypePolicy,
        keras.callbacks.Callback,
        keras.metrics.Metric,
        keras.metrics.SparseCategoricalAccuracy,
        keras.optimizers.Optimizer,
        keras.losses.Loss,
        keras.utils.PyDataset,
        keras.random.SeedGenerator,
        keras.initializers.Initializer,
        keras.layers.Dense,
        keras.layers.Embedding,
        keras.layers.LayerNormalization,
        keras_hub.metrics.Perplexity,
        keras_hub.tokenizers.Tokenizer,
        keras_hub.tokenizers.WordPieceTokenizer,
        keras_hub.layers.ImageConverter,
        keras_hub.layers.MaskedLMHead,
        keras_hub.layers.ReversibleEmbedding,
        keras_hub.layers.MaskedLMMaskGenerator,
        keras_hub.samplers.Sampler,
        *(getattr(keras_hub.models, name) for name in hub_models),
    ]


def upstream_private_names():
    """The private attribute and method names of the Keras and keras-hub
    classes the library builds on (their whole MRO): what `self._x` must
    not touch in a subclass."""
    names = set()
    for base in upstream_bases():
        for cls in inspect.getmro(base):
            if not cls.__module__.startswith(("keras.", "keras_hub.")):
                continue
            names.update(vars(cls))
            try:
                source = inspect.getsource(cls)
            except (OSError, TypeError):
                continue
            names.update(re.findall(r"self\.(_[A-Za-z]\w*)\s*=", source))
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def private_uses(source, upstream_names):
    """(line, what) for each private upstream name in `source`."""
    found = [
        (number, match.group(0))
        for number, line in enumerate(source.splitlines(), 1)
        for match in UPSTREAM_SRC.finditer(line)
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module in ("keras", "keras_hub"):
            found += [
                (node.lineno, f"from {node.module} import src")
                for alias in node.names
                if alias.name == "src"
            ]
        is_function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        if is_function and node.name in upstream_names:
            found.append((node.lineno, f"def {node.name}"))
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        private = name.startswith("_") and not name.startswith("__")
        on_self = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
        if (
            name in UPSTREAM_INTERNALS
            or (private and on_self and name in upstream_names)
            or (private and not on_self and name not in PUBLIC_UNDERSCORE_NAMES)
        ):
            found.append((node.lineno, ast.unparse(node)))
    return found


def scanned_files():
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path != COMPAT:
                yield path


def test_scan_finds_a_planted_private_use():
    names = upstream_private_names()
    assert {"_flatten_layers", "_add_missing_kwargs", "_tracker", "_layers"} <= names
    planted = (
        "from keras.src.utils import file_utils\n"
        "class Head(keras.layers.Layer):\n"
        "    def sublayers(self):\n"
        "        self._tracker.unlock()\n"
        "        return self.dense._flatten_layers()\n"
        "    def _add_missing_kwargs(cls, loader, kwargs):\n"
        "        model.jax_state_sync()\n"
        "        return variable._value\n"
        "    def own(self):\n"
        "        return self._my_cache, point._replace(x=1)\n"
    )
    lines = [line for line, _ in private_uses(planted, names)]
    assert sorted(lines) == [1, 4, 5, 6, 7, 8]


def test_no_private_upstream_names_outside_compat():
    names = upstream_private_names()
    offences = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in scanned_files()
        for line, what in private_uses(path.read_text(encoding="utf-8"), names)
    ]
    assert not offences, (
        "Private Keras / keras-hub names outside keras_gmlp/_compat.py (use "
        "a public API, or add a hook with its reason and test there):\n"
        + "\n".join(offences)
    )


def test_tensor_version_hook():
    """`torch.Tensor._version` counts in-place writes, and on PyTorch
    `keras.Variable.assign` writes the same tensor in place."""
    # Only the PyTorch backend's decoding step uses it; CI's Python 3.12
    # lane installs no torch.
    torch = pytest.importorskip("torch")

    tensor = torch.zeros(3)
    before = _compat.tensor_version(tensor)
    tensor.add_(1)
    assert _compat.tensor_version(tensor) > before, hook_changed(
        "torch.Tensor._version", "no change after add_"
    )
    if keras.backend.backend() == "torch":
        variable = keras.Variable(np.zeros(3, "float32"))
        value = variable.value
        before = _compat.tensor_version(value)
        variable.assign(np.ones(3, "float32"))
        assert variable.value is value
        assert _compat.tensor_version(value) > before


def test_int8_matmul_hook():
    """`torch._int_mm` multiplies int8 tensors into exact int32 sums on a
    CPU, at sizes no multiple of 8, a transposed kernel view included."""
    torch = pytest.importorskip("torch")

    rng = np.random.default_rng(0)
    x = rng.integers(-127, 128, (3, 20)).astype("int8")
    kernel = rng.integers(-127, 128, (20, 7)).astype("int8")
    expected = x.astype("int64") @ kernel.astype("int64")
    for right in (torch.from_numpy(kernel), torch.from_numpy(kernel.T.copy()).T):
        product = _compat.int8_matmul(torch.from_numpy(x), right)
        assert product.dtype == torch.int32, hook_changed(
            "torch._int_mm", f"returned {product.dtype}, not int32"
        )
        np.testing.assert_array_equal(product.numpy(), expected)


def test_loss_tracker_hook():
    """`keras.Model._loss_tracker` is the "loss" mean a compiled model's
    steps update, the first of `model.metrics`."""
    hook = "keras.Model._loss_tracker"
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    tracker = _compat.loss_tracker(model)
    assert isinstance(tracker, keras.metrics.Mean), hook_changed(
        hook, f"got {type(tracker).__name__}, not a keras.metrics.Mean"
    )
    model.train_on_batch(np.ones((2, 2), "float32"), np.zeros((2, 1), "float32"))
    count = float(keras.ops.convert_to_numpy(tracker.count))
    assert tracker is model.metrics[0] and count > 0, hook_changed(
        hook, "train_on_batch did not update it"
    )


def test_autocast_dtype_hook():
    """`keras.src.backend.get_autocast_scope` names the dtype a mixed
    layer's `__call__` reads its variables in, and nothing outside one."""
    hook = "keras.src.backend.get_autocast_scope"
    seen = []

    class Probe(keras.layers.Layer):
        def call(self, x):
            seen.append(_compat.autocast_dtype())
            return x

    Probe(dtype="mixed_bfloat16")(np.ones((1, 2), "float32"))
    Probe(dtype="float32")(np.ones((1, 2), "float32"))
    assert seen == ["bfloat16", None], hook_changed(hook, f"gave {seen}")
    assert _compat.autocast_dtype() is None, hook_changed(hook, "open outside")


def test_rematerializes_hook():
    """`keras.Layer._remat_mode` is set in a `keras.RematScope` only."""
    hook = "keras.Layer._remat_mode"
    with keras.RematScope(mode="full"):
        inside = keras.layers.Dense(2)
    outside = keras.layers.Dense(2)
    found = (_compat.rematerializes(inside), _compat.rematerializes(outside))
    assert found == (True, False), hook_changed(hook, f"gave {found}")


@pytest.mark.parametrize(
    "hook",
    [
        "BackboneLengthFromPreset",
        "add_special_token",
        "tensor_version",
        "int8_matmul",
        "loss_tracker",
        "autocast_dtype",
        "rematerializes",
    ],
)
def test_each_hook_says_why(hook):
    doc = inspect.getdoc(getattr(_compat, hook))
    assert "Hook:" in doc and "Why private:" in doc


def test_nested_sublayers_finds_every_nested_layer():
    # The public walk that replaced Layer._flatten_layers, against the
    # layers a gMLP block is written to hold, two levels deep.
    from keras_gmlp.layers import gMLPBlock
    from keras_gmlp.layers._sublayers import nested_sublayers

    block = gMLPBlock(8, 16, 4, attention_dim=4)
    block(np.zeros((1, 4, 8), "float32"))
    sgu, attention = block.spatial_gating_unit, block.tiny_attention
    expected = [
        block.norm,
        block.expand_dense,
        sgu,
        attention,
        block.output_dense,
        block.dropout_layer,
        block.drop_path,
        sgu.norm,
        attention.qkv_dense,
        attention.output_dense,
    ]
    found = nested_sublayers(block)
    assert sorted(map(id, found)) == sorted(map(id, expected))
    assert block not in found
