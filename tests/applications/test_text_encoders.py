import os
import subprocess
import sys

import numpy as np
import pytest

# The paper's Table 4 (and REFERENCE.md): layers, d_model, d_ffn, tiny
# attention size, parameters.
PAPER = {
    "gMLPBase": (48, 512, 3072, None, 130e6),
    "gMLPLarge": (96, 768, 3072, None, 365e6),
    "aMLPBase": (36, 512, 3072, 64, 109e6),
    "aMLPLarge": (72, 768, 3072, 128, 316e6),
}


def masked_lm_parameters(
    num_layers, d_model, d_ffn, attention_dim, vocabulary_size=30522, n=128
):
    """Parameters of a gMLP/aMLP masked LM, counted by hand from the design:
    tied token embeddings, 2 segment embeddings, no position embeddings."""
    gate = d_ffn // 2
    block = (
        2 * d_model  # pre-norm
        + d_model * d_ffn
        + d_ffn  # channel expansion
        + 2 * gate  # SGU norm
        + n * n
        + n  # spatial projection W, b
        + gate * d_model
        + d_model  # channel projection back
    )
    if attention_dim is not None:
        block += d_model * 3 * attention_dim  # q, k, v (no bias)
        block += attention_dim * gate + gate  # attention output projection
    embeddings = vocabulary_size * d_model + 2 * d_model
    final_norm = 2 * d_model
    # BERT's MLM transform (dense + norm) and the output bias; the output
    # matrix is the token embedding.
    head = d_model * d_model + d_model + 2 * d_model + vocabulary_size
    return embeddings + num_layers * block + final_norm + head


@pytest.mark.parametrize("name", sorted(PAPER))
def test_parameter_count_matches_paper(name):
    *config, paper = PAPER[name]
    count = masked_lm_parameters(*config)
    assert abs(count - paper) / paper < 0.01, (name, count)


@pytest.mark.parametrize("name", sorted(PAPER))
def test_builders_follow_the_paper_configuration(name):
    """Counts two shallow models with the builder's widths and extrapolates
    to its depth, instead of allocating the large ones."""
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPMaskedLM
    from keras_gmlp.utils.variants import BACKBONE_ARGUMENTS
    from keras_gmlp.utils.variants import GMLP_TEXT_VARIANTS

    num_layers, d_model, d_ffn, attention_dim, paper = PAPER[name]
    (variant,) = [row for row in GMLP_TEXT_VARIANTS.values() if row["builder"] == name]
    config = {key: variant[key] for key in BACKBONE_ARGUMENTS}
    assert config == {
        "num_layers": num_layers,
        "hidden_dim": d_model,
        "intermediate_dim": d_ffn,
        "attention_dim": attention_dim,
    }
    assert variant["paper_params"] == paper
    counts = []
    for depth in (1, 2):
        backbone = gMLPBackbone(
            vocabulary_size=1000,
            max_sequence_length=128,
            **{**config, "num_layers": depth},
        )
        counts.append(gMLPMaskedLM(backbone).count_params())
    extrapolated = counts[0] + (num_layers - 1) * (counts[1] - counts[0])
    expected = masked_lm_parameters(
        num_layers, d_model, d_ffn, attention_dim, vocabulary_size=1000
    )
    assert extrapolated == expected


@pytest.mark.slow
def test_amlp_base_at_full_size(tmp_path):
    """Builds aMLP-base: its parameter count, `include_top` and `weights`."""
    import keras

    from keras_gmlp.applications import aMLPBase
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPMaskedLM

    model = aMLPBase()
    assert isinstance(model, gMLPMaskedLM)
    assert model.name == "amlp_base"
    count = model.count_params()
    assert count == masked_lm_parameters(36, 512, 3072, 64)
    assert abs(count - 109e6) / 109e6 < 0.01

    # The pretrained encoder alone, from a weights file.
    path = str(tmp_path / "amlp_base_encoder.weights.h5")
    model.backbone.save_weights(path)
    expected = keras.ops.convert_to_numpy(
        model.backbone.gmlp_blocks[-1].tiny_attention.qkv_dense.kernel
    )
    del model
    keras.backend.clear_session()
    encoder = aMLPBase(include_top=False, weights=path)
    assert isinstance(encoder, gMLPBackbone)
    assert encoder.name == "amlp_base"
    assert encoder.num_layers == 36 and encoder.max_sequence_length == 128
    loaded = encoder.gmlp_blocks[-1].tiny_attention.qkv_dense.kernel
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(loaded), expected)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"weights": "imagenet"}, "Received: weights='imagenet'"),
        ({"weights": "model.pth"}, "Received: weights='model.pth'"),
        (
            {"include_top": False, "preprocessor": object()},
            "Received: include_top=False",
        ),
    ],
)
def test_bad_arguments(kwargs, message):
    from keras_gmlp.applications import aMLPLarge

    with pytest.raises(ValueError, match=message):
        aMLPLarge(**kwargs)


def test_importing_applications_stays_light():
    """Under JAX and torch, the builders do not pull in keras-hub or
    TensorFlow until a text model is built."""
    import keras

    code = (
        "import sys, keras_gmlp, keras_gmlp.applications\n"
        "keras_gmlp.applications.gMLPBase, keras_gmlp.applications.aMLPLarge\n"
        "heavy = {'keras_hub', 'tensorflow'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    backend = keras.config.backend()
    backend = backend if backend in ("jax", "torch") else "jax"
    env = {**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": root}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
