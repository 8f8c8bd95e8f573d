import os
import pathlib

import keras
import numpy as np
import pytest

from keras_gmlp import applications
from keras_gmlp.applications._image_classifier import load_weights
from keras_gmlp.applications.gmlp import gMLP
from keras_gmlp.layers import StochasticDepth
from tests.applications.helpers import build_tiny
from tests.applications.helpers import fixture_path
from tests.compile_defaults import assert_compile_asks_for_xla


def tiny_gmlp(**kwargs):
    config = dict(num_blocks=2, hidden_dim=16, intermediate_dim=32, patch_size=4)
    config.update(kwargs)
    return gMLP(**config)


def test_default_input_is_224_and_raw_pixels_are_scaled():
    with keras.StatelessScope(initialize_variables=False):
        model = applications.gMLPTi()
    assert model.input_shape == (None, 224, 224, 3)
    assert model.name == "gmlp_ti16"
    rescaling = model.get_layer("rescaling")
    # 0 -> -1 and 255 -> 1: timm's mean = std = 0.5 on [0, 1].
    pixels = np.array([[[[0.0, 127.5, 255.0]]]], dtype="float32")
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(rescaling(pixels)), [[[[-1.0, 0.0, 1.0]]]]
    )


@pytest.mark.parametrize(
    "pooling, expected_shape",
    [(None, (None, 4, 6, 32)), ("avg", (None, 32)), ("max", (None, 32))],
)
def test_include_top_false_with_each_pooling(family, pooling, expected_shape):
    golden = np.load(fixture_path(family, ".npz"))
    model = build_tiny(
        family,
        include_top=False,
        pooling=pooling,
        weights=fixture_path(family, ".safetensors"),
    )
    assert model.output_shape == expected_shape
    outputs = keras.ops.convert_to_numpy(model(golden["images"]))
    assert outputs.shape == (2,) + expected_shape[1:]
    grid = keras.ops.convert_to_numpy(
        build_tiny(
            family, include_top=False, weights=fixture_path(family, ".safetensors")
        )(golden["images"])
    )
    if pooling == "avg":
        np.testing.assert_allclose(outputs, grid.mean(axis=(1, 2)), atol=1e-5)
    if pooling == "max":
        np.testing.assert_allclose(outputs, grid.max(axis=(1, 2)), atol=1e-6)


def test_non_square_input_and_any_multiple_of_the_patch():
    model = tiny_gmlp(input_shape=(8, 20, 3), include_top=False)
    assert model.output_shape == (None, 2, 5, 16)
    assert model.get_layer("blocks_0").sequence_length == 10


def test_input_tensor_starts_the_model_at_its_source():
    source = keras.Input((16, 12, 3))
    x = keras.layers.Identity()(source)
    model = tiny_gmlp(input_tensor=x, classes=5)
    assert model.inputs[0] is source
    assert model.output_shape == (None, 5)
    images = np.random.default_rng(0).uniform(0, 255, (2, 16, 12, 3))
    assert tuple(model(images.astype("float32")).shape) == (2, 5)


def test_drop_path_rate_increases_linearly_over_the_blocks():
    model = tiny_gmlp(num_blocks=5, input_shape=(8, 8, 3), drop_path_rate=0.2)
    rates = [
        layer.rate
        for block in model.layers
        if block.name.startswith("blocks_")
        for layer in [block.drop_path]
        if isinstance(layer, StochasticDepth)
    ]
    np.testing.assert_allclose(rates, [0.0, 0.05, 0.1, 0.15, 0.2])


def test_calling_with_another_image_size_raises():
    model = tiny_gmlp(input_shape=(16, 16, 3))
    with pytest.raises(ValueError, match=r"expected shape=\(None, 16, 16, 3\)"):
        model(np.zeros((1, 20, 20, 3), "float32"))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"weights": "no/such/file.h5"},
            r"The weights file '.*no/such/file\.h5' does not exist.*"
            r"Received: weights='no/such/file\.h5'",
        ),
        ({"weights": "imagenet"}, "no public ImageNet weights for gmlp"),
        ({"pooling": "mean", "include_top": False}, "Received: pooling='mean'"),
        ({"classes": 0}, "Received: classes=0"),
        ({"drop_path_rate": 1.0}, "Received: drop_path_rate=1.0"),
        ({"input_shape": (18, 16, 3)}, r"Received: input_shape=\(18, 16, 3\)"),
        (
            {"input_shape": (None, None, 3), "include_top": False},
            r"must be known. Received: input_shape=\(None, None, 3\)",
        ),
        ({"input_shape": (16, 16)}, r"Received: input_shape=\(16, 16\)"),
    ],
)
def test_bad_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tiny_gmlp(**{"input_shape": (16, 16, 3), **kwargs})


def test_sizes_and_missing_weights_are_refused_before_building(tmp_path):
    from keras_gmlp.applications.mlp_mixer import MLPMixer

    cases = [
        (
            {"num_blocks": 0},
            "`num_blocks` must be a positive integer. Received: num_blocks=0",
        ),
        ({"num_blocks": -2}, "Received: num_blocks=-2"),
        ({"num_blocks": 2.0}, "Received: num_blocks=2.0"),
        ({"num_blocks": True}, "Received: num_blocks=True"),
        (
            {"patch_size": 0},
            "`patch_size` must be a positive integer. Received: patch_size=0",
        ),
        ({"patch_size": -4}, "Received: patch_size=-4"),
        ({"patch_size": 4.0}, "Received: patch_size=4.0"),
        ({"hidden_dim": 0}, "Received: hidden_dim=0"),
        (
            {"weights": "missing.safetensors"},
            r"'.*missing\.safetensors' does not exist.*Received: weights=",
        ),
        ({"weights": str(tmp_path)}, "is a directory.*Received: weights="),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            tiny_gmlp(**{"input_shape": (16, 16, 3), **kwargs})
    config = dict(
        hidden_dim=8, tokens_mlp_dim=4, channels_mlp_dim=16, input_shape=(8, 8, 3)
    )
    with pytest.raises(ValueError, match="Received: num_blocks=0"):
        MLPMixer(num_blocks=0, patch_size=4, **config)
    with pytest.raises(ValueError, match="Received: patch_size=0"):
        MLPMixer(num_blocks=1, patch_size=0, **config)


def test_imagenet_rules_of_keras_applications():
    with pytest.raises(
        ValueError, match="`classes` should be 1000. Received: classes=10"
    ):
        applications.gMLPS(weights="imagenet", classes=10)
    with pytest.raises(ValueError, match="Received: classifier_activation="):
        applications.MixerB16(weights="imagenet", classifier_activation="relu")
    with pytest.raises(ValueError, match="The input must have 3 channels"):
        applications.gMLPS(weights="imagenet", input_shape=(224, 224, 1))
    with pytest.raises(ValueError, match="no public ImageNet weights for mixer_s16"):
        applications.MixerS16(weights="imagenet")


def test_weights_file_with_an_unknown_suffix_is_refused(tmp_path):
    path = tmp_path / "weights.npz"
    path.write_bytes(b"")
    with pytest.raises(ValueError, match="Received: weights="):
        tiny_gmlp(input_shape=(16, 16, 3), weights=str(path))


def test_weights_h5_round_trip(family, tmp_path):
    golden = np.load(fixture_path(family, ".npz"))
    model = build_tiny(family, weights=fixture_path(family, ".safetensors"))
    path = str(tmp_path / "model.weights.h5")
    model.save_weights(path)
    keras.backend.clear_session()
    restored = build_tiny(family, weights=path)
    logits = keras.ops.convert_to_numpy(restored(golden["images"]))
    assert np.max(np.abs(logits - golden["logits"])) <= 1e-4


def test_keras_file_round_trip(family, tmp_path):
    golden = np.load(fixture_path(family, ".npz"))
    model = build_tiny(family, weights=fixture_path(family, ".safetensors"))
    path = str(tmp_path / "model.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    logits = keras.ops.convert_to_numpy(restored(golden["images"]))
    assert np.max(np.abs(logits - golden["logits"])) <= 1e-4


def test_weights_h5_of_another_input_size_loads_nothing(tmp_path):
    # Keras loads layer by layer: the stem would load before the first
    # spatial gating unit, sized for 25 tokens instead of 16, fails.
    path = str(tmp_path / "other.weights.h5")
    tiny_gmlp(input_shape=(20, 20, 3)).save_weights(path)
    model = tiny_gmlp(input_shape=(16, 16, 3))
    before = [keras.ops.convert_to_numpy(v) for v in model.weights]
    with pytest.raises(ValueError, match="No weights were loaded"):
        load_weights(model, path)
    for variable, value in zip(model.weights, before):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(variable), value)


def test_preprocess_input_is_a_pass_through():
    images = np.arange(12, dtype="float32").reshape(1, 2, 2, 3)
    assert applications.preprocess_input(images) is images


def test_decode_predictions_offline_in_imagenet_order():
    # tensorflow-datasets' imagenet2012 label list is an independent record of
    # the class order (WordNet ids, sorted), the order timm's weights use.
    import tensorflow_datasets

    labels = pathlib.Path(tensorflow_datasets.__file__).parent.joinpath(
        "datasets", "imagenet2012", "labels.txt"
    )
    wordnet_ids = labels.read_text().split()
    preds = np.random.default_rng(0).random((2, 1000)).astype("float32")
    decoded = applications.decode_predictions(preds, top=3)
    for row, result in zip(preds, decoded):
        expected = np.argsort(row)[::-1][:3]
        assert [wnid for wnid, _, _ in result] == [wordnet_ids[i] for i in expected]
        np.testing.assert_allclose([s for _, _, s in result], row[expected])
    goldfish = np.eye(1000, dtype="float32")[1:2]
    assert applications.decode_predictions(goldfish, top=1)[0][0][:2] == (
        "n01443537",
        "goldfish",
    )
    with pytest.raises(ValueError, match=r"\(2, 10\)"):
        applications.decode_predictions(preds[:, :10])
    with pytest.raises(ValueError, match="top=0"):
        applications.decode_predictions(preds, top=0)


def test_the_shipped_class_names_are_keras_hubs_table():
    keras_hub = pytest.importorskip("keras_hub")
    preds = np.eye(1000, dtype="float32")
    decoded = applications.decode_predictions(preds, top=1)
    assert [row[0][1] for row in decoded] == [
        keras_hub.utils.imagenet_id_to_name(i) for i in range(1000)
    ]
    assert len({row[0][0] for row in decoded}) == 1000


def test_imagenet_weights_load_offline_from_the_cache(monkeypatch, tmp_path):
    # The cached file of gMLP-S's public weights; a reduced gMLP with that
    # variant reads it, so the test needs neither network nor 80 MB.
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    os.makedirs(tmp_path / "models")
    cached = tmp_path / "models" / "gmlp_s16_224.ra3_in1k.safetensors"
    with open(fixture_path("gmlp", ".safetensors"), "rb") as source:
        cached.write_bytes(source.read())

    def no_network(*args, **kwargs):
        raise AssertionError("tried to download")

    monkeypatch.setattr("keras.src.utils.file_utils.urlretrieve", no_network)
    golden = np.load(fixture_path("gmlp", ".npz"))
    model = build_tiny(
        "gmlp",
        weights="imagenet",
        variant="gmlp_s16",
        classes=1000,
        include_top=False,
        pooling="avg",
    )
    reference = build_tiny(
        "gmlp",
        weights=fixture_path("gmlp", ".safetensors"),
        include_top=False,
        pooling="avg",
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(model(golden["images"])),
        keras.ops.convert_to_numpy(reference(golden["images"])),
        atol=1e-6,
    )


def test_imagenet_weights_without_network_or_cache_say_where_to_put_them(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))

    def offline(*args, **kwargs):
        raise Exception("URL fetch failure: no network")

    monkeypatch.setattr(keras.utils, "get_file", offline)
    expected = os.path.join(
        str(tmp_path), "models", "mixer_b16_224.goog_in21k_ft_in1k.safetensors"
    )
    with pytest.raises(OSError) as error:
        applications.MixerB16(weights="imagenet")
    assert expected in str(error.value)
    assert "https://huggingface.co/timm/mixer_b16_224.goog_in21k_ft_in1k" in str(
        error.value
    )


@pytest.mark.parametrize("file_name", ["gray.weights.h5", "gray.keras"])
def test_own_grayscale_weights_reload(tmp_path, rng, file_name):
    model = tiny_gmlp(input_shape=(16, 16, 1), classes=3)
    path = str(tmp_path / file_name)
    model.save(path) if file_name.endswith(".keras") else model.save_weights(path)
    images = rng.uniform(0, 255, (2, 16, 16, 1)).astype("float32")
    restored = tiny_gmlp(input_shape=(16, 16, 1), classes=3, weights=path)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(restored(images)),
        keras.ops.convert_to_numpy(model(images)),
    )


def test_compile_defaults_to_xla_where_keras_auto_would_not_use_it():
    """The builders' models, like the image tasks, also ask for XLA on
    TensorFlow CPUs; an explicit `jit_compile` is kept."""
    assert_compile_asks_for_xla(tiny_gmlp(), loss="sparse_categorical_crossentropy")
