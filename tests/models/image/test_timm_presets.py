"""from_preset of timm checkpoints: timm-layout directories, hf://timm
handles (served from local files, no network) and preset names give timm's
logits (tests/fixtures/make_timm_fixtures.py)."""

import os

import keras
import numpy as np
import pytest

from tests.models.image.conftest import family_classes
from tests.models.image.conftest import fixture_path
from tests.models.image.conftest import write_timm_directory


def test_classifier_from_timm_directory_gives_timm_logits(family, timm_dir, golden):
    classifier = family_classes(family)["classifier"].from_preset(timm_dir)
    assert classifier.num_classes == int(golden["num_classes"])
    # Raw [0, 255] images through the preprocessor made from pretrained_cfg.
    logits = classifier.predict(golden["images"], verbose=0)
    assert np.max(np.abs(logits - golden["logits"])) <= 1e-4


def test_backbone_from_timm_directory_matches_the_builder(family, timm_dir, golden):
    from safetensors.numpy import load_file

    from keras_gmlp.applications import load_timm_weights
    from tests.applications.helpers import build_tiny

    backbone = family_classes(family)["backbone"].from_preset(timm_dir)
    features = keras.ops.convert_to_numpy(backbone(golden["images"] / 127.5 - 1))
    state = load_file(fixture_path(family, ".safetensors"))
    logits = features.mean(axis=(1, 2)) @ state["head.weight"].T + state["head.bias"]
    assert np.max(np.abs(logits - golden["logits"])) <= 1e-4
    # The keras.applications builder has the same architecture and weights.
    model = build_tiny(family, include_top=False)
    load_timm_weights(model, state)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(model(golden["images"])), features, atol=2e-5
    )


def test_another_image_shape_resamples_like_the_builders(family, timm_dir, golden):
    from tests.applications.helpers import build_tiny

    classes = family_classes(family)
    classifier = classes["classifier"].from_preset(timm_dir, image_shape=(48, 64, 3))
    assert classifier.backbone.image_shape == (48, 64, 3)
    assert tuple(classifier.preprocessor.image_converter.image_size) == (48, 64)
    from keras_gmlp.applications import load_timm_weights

    builder = build_tiny(family, input_shape=(48, 64, 3))
    # The fixtures' grid is 4x6 (32x48 images, patch 8): non-square, so the
    # builders need it spelled out; from_preset reads it from config.json.
    load_timm_weights(
        builder, fixture_path(family, ".safetensors"), checkpoint_grid=(4, 6)
    )
    images = np.random.default_rng(0).uniform(0, 255, (2, 48, 64, 3)).astype("float32")
    np.testing.assert_allclose(
        classifier.predict(images, verbose=0),
        keras.ops.convert_to_numpy(builder(images)),
        atol=1e-4,
    )


def test_num_classes_starts_a_new_head_on_the_timm_backbone(family, timm_dir, golden):
    classes = family_classes(family)
    classifier = classes["classifier"].from_preset(timm_dir, num_classes=4)
    assert classifier.output_shape == (None, 4)
    reference = classes["backbone"].from_preset(timm_dir)
    scaled = golden["images"] / 127.5 - 1
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(classifier.backbone(scaled)),
        keras.ops.convert_to_numpy(reference(scaled)),
        atol=1e-6,
    )


def test_timm_checkpoint_saved_as_keras_preset_round_trips(
    family, timm_dir, golden, tmp_path
):
    classes = family_classes(family)
    classifier = classes["classifier"].from_preset(timm_dir)
    classifier.save_to_preset(str(tmp_path / "keras_preset"))
    revived = classes["classifier"].from_preset(str(tmp_path / "keras_preset"))
    np.testing.assert_array_equal(
        revived.predict(golden["images"], verbose=0),
        classifier.predict(golden["images"], verbose=0),
    )


def test_converter_follows_pretrained_cfg(family, tmp_path):
    # timm's miil weights: mean 0, std 1 on [0, 1], bilinear.
    path = write_timm_directory(
        family,
        tmp_path / "miil",
        pretrained_cfg={
            "input_size": [3, 32, 48],
            "mean": [0, 0, 0],
            "std": [1, 1, 1],
            "interpolation": "bilinear",
            "num_classes": 10,
        },
    )
    converter = family_classes(family)["converter"].from_preset(path)
    assert tuple(converter.image_size) == (32, 48)
    pixels = np.full((1, 32, 48, 3), 255.0, "float32")
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(converter(pixels)), 1.0, atol=1e-6
    )


@pytest.fixture(autouse=True)
def hub_answers(monkeypatch):
    """The hub's metadata request answers without network."""
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", lambda url, **kw: None)


def _serve_from(directory, calls):
    def hf_hub_download(repo_id, filename, **kwargs):
        calls.append((repo_id, filename))
        path = os.path.join(directory, filename)
        if not os.path.exists(path):
            from huggingface_hub.errors import EntryNotFoundError

            raise EntryNotFoundError(f"{filename} not in {repo_id}")
        return path

    return hf_hub_download


def test_hf_timm_handle_downloads_through_the_hub(
    family, timm_dir, golden, monkeypatch
):
    import huggingface_hub

    calls = []
    monkeypatch.setattr(
        huggingface_hub, "hf_hub_download", _serve_from(timm_dir, calls)
    )
    handle = f"hf://timm/{'gmlp_s16_224.ra3_in1k' if family == 'gmlp' else 'mixer_b16_224.goog_in21k_ft_in1k'}"
    classifier = family_classes(family)["classifier"].from_preset(handle)
    assert {repo for repo, _ in calls} == {handle[len("hf://") :]}
    assert {name for _, name in calls} == {"config.json", "model.safetensors"}
    logits = classifier.predict(golden["images"], verbose=0)
    assert np.max(np.abs(logits - golden["logits"])) <= 1e-4


def test_preset_names_resolve_to_timm_weights_or_say_there_are_none(
    family, timm_dir, monkeypatch
):
    import huggingface_hub

    calls = []
    monkeypatch.setattr(
        huggingface_hub, "hf_hub_download", _serve_from(timm_dir, calls)
    )
    classes = family_classes(family)
    weighted, unweighted = (
        ("gmlp_s16_224", "gmlp_ti16_224")
        if family == "gmlp"
        else ("mixer_b16_224", "mixer_s32_224")
    )
    classes["backbone"].from_preset(weighted)
    expected = (
        "timm/gmlp_s16_224.ra3_in1k"
        if family == "gmlp"
        else ("timm/mixer_b16_224.goog_in21k_ft_in1k")
    )
    assert calls[0][0] == expected
    with pytest.raises(ValueError, match="no public weights"):
        classes["classifier"].from_preset(unweighted)


@pytest.mark.parametrize(
    "config_changes, message",
    [
        ({"architecture": "resnet50"}, "resnet50"),
        ({"architecture": "gmlp_xl16_224"}, "gmlp_xl16_224"),
        ({"model_args": {"stem_norm": True}}, "stem_norm"),
        ({"num_classes": 7}, "head"),
    ],
)
def test_bad_timm_directories_raise(family, tmp_path, config_changes, message):
    if family == "mixer" and config_changes.get("architecture") == "gmlp_xl16_224":
        config_changes = {"architecture": "mixer_xl16_224"}
        message = "mixer_xl16_224"
    path = write_timm_directory(family, tmp_path / "bad", **config_changes)
    with pytest.raises(ValueError, match=message):
        family_classes(family)["classifier"].from_preset(path)


def test_other_family_checkpoint_is_refused(family, tmp_path):
    other = "mixer" if family == "gmlp" else "gmlp"
    path = write_timm_directory(other, tmp_path / "other")
    with pytest.raises(ValueError, match="family"):
        family_classes(family)["classifier"].from_preset(path)


def test_keras_preset_at_another_image_shape_is_resampled(
    family, timm_dir, golden, tmp_path
):
    from keras_gmlp.applications import load_timm_weights
    from tests.applications.helpers import build_tiny

    classes = family_classes(family)
    preset = str(tmp_path / "keras_preset")
    classes["classifier"].from_preset(timm_dir).save_to_preset(preset)
    classifier = classes["classifier"].from_preset(preset, image_shape=(48, 64, 3))
    assert tuple(classifier.preprocessor.image_converter.image_size) == (48, 64)
    builder = build_tiny(family, input_shape=(48, 64, 3))
    load_timm_weights(
        builder, fixture_path(family, ".safetensors"), checkpoint_grid=(4, 6)
    )
    images = np.random.default_rng(5).uniform(0, 255, (2, 48, 64, 3)).astype("float32")
    np.testing.assert_allclose(
        classifier.predict(images, verbose=0),
        keras.ops.convert_to_numpy(builder(images)),
        atol=1e-4,
    )
    backbone = classes["backbone"].from_preset(preset, image_shape=(48, 64, 3))
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(backbone(images / 127.5 - 1)),
        keras.ops.convert_to_numpy(classifier.backbone(images / 127.5 - 1)),
    )


def test_preset_names_download_the_pinned_revision(family, timm_dir, monkeypatch):
    import importlib

    import huggingface_hub

    requests = []

    def hf_hub_download(repo_id, filename, revision=None, **kwargs):
        requests.append((filename, revision))
        return os.path.join(timm_dir, filename)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hf_hub_download)
    name, module = (
        ("gmlp_s16_224", "keras_gmlp.models.gmlp_image.gmlp_image_presets")
        if family == "gmlp"
        else ("mixer_b16_224", "keras_gmlp.models.mlp_mixer.mlp_mixer_presets")
    )
    presets = importlib.import_module(module).backbone_presets
    revision = "0123456789abcdef0123456789abcdef01234567"
    monkeypatch.setitem(presets, name, dict(presets[name], timm_revision=revision))
    family_classes(family)["backbone"].from_preset(name)
    assert requests == [("config.json", revision), ("model.safetensors", revision)]


def block_rates(backbone):
    return [
        block.drop_path.rate
        for block in backbone.layers
        if block.name.startswith("blocks_")
    ]


def test_timm_drop_path_rate_goes_to_every_block_as_timm_gives_it(family, tmp_path):
    """timm's MlpMixer passes its `drop_path_rate` to every block (no linear
    schedule); the conversion does the same."""
    golden = np.load(fixture_path(family, ".npz"))
    model_args = {
        "patch_size": int(golden["patch_size"]),
        "num_blocks": int(golden["num_blocks"]),
        "embed_dim": int(golden["embed_dim"]),
        "img_size": [int(s) for s in golden["img_size"]],
        "drop_path_rate": 0.1,
    }
    directory = write_timm_directory(family, tmp_path / "timm", model_args=model_args)
    backbone = family_classes(family)["backbone"].from_preset(directory)
    np.testing.assert_allclose(block_rates(backbone), [0.1] * model_args["num_blocks"])
    # The rates survive the config round trip.
    copy = type(backbone).from_config(backbone.get_config())
    np.testing.assert_allclose(block_rates(copy), block_rates(backbone))


def test_drop_path_rate_is_linear_from_a_float_or_one_per_block_from_a_list(family):
    from tests.models.image.conftest import small_backbone_kwargs

    backbone_class = family_classes(family)["backbone"]
    kwargs = small_backbone_kwargs(family)
    linear = backbone_class(**kwargs, drop_path_rate=0.2)
    np.testing.assert_allclose(block_rates(linear), [0.0, 0.2])
    listed = backbone_class(**kwargs, drop_path_rate=[0.3, 0.1])
    np.testing.assert_allclose(block_rates(listed), [0.3, 0.1])
    for bad in ([0.1], [0.1, 1.0], "0.1"):
        with pytest.raises(ValueError, match="a list of 2 such rates, one per block"):
            backbone_class(**kwargs, drop_path_rate=bad)
