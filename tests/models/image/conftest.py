"""Shared set-up of the image-model tests: small configs of both families
and timm-layout checkpoint directories built from the golden fixtures of
tests/fixtures/make_timm_fixtures.py."""

import json
import os
import shutil

import numpy as np
import pytest

FIXTURES = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "fixtures"
)

# timm's architecture name and the model_args of the reduced fixtures.
TIMM_ARCHITECTURES = {"gmlp": "gmlp_s16_224", "mixer": "mixer_b16_224"}


def fixture_path(family, suffix):
    return os.path.join(FIXTURES, f"timm_{family}_tiny{suffix}")


def family_classes(family):
    from keras_gmlp import models

    if family == "gmlp":
        return dict(
            backbone=models.gMLPImageBackbone,
            classifier=models.gMLPImageClassifier,
            preprocessor=models.gMLPImageClassifierPreprocessor,
            converter=models.gMLPImageConverter,
        )
    return dict(
        backbone=models.MLPMixerBackbone,
        classifier=models.MLPMixerImageClassifier,
        preprocessor=models.MLPMixerImageClassifierPreprocessor,
        converter=models.MLPMixerImageConverter,
    )


def small_backbone_kwargs(family, image_shape=(16, 16, 3)):
    kwargs = dict(patch_size=4, num_layers=2, hidden_dim=8, image_shape=image_shape)
    if family == "gmlp":
        return dict(kwargs, intermediate_dim=16)
    return dict(kwargs, tokens_mlp_dim=4, channels_mlp_dim=16)


def write_timm_directory(family, directory, **config_changes):
    """What timm's `save_for_hf` writes for the reduced fixture model."""
    golden = np.load(fixture_path(family, ".npz"))
    os.makedirs(directory, exist_ok=True)
    shutil.copy(
        fixture_path(family, ".safetensors"),
        os.path.join(directory, "model.safetensors"),
    )
    height, width = (int(s) for s in golden["img_size"])
    num_classes = int(golden["num_classes"])
    config = {
        "architecture": TIMM_ARCHITECTURES[family],
        "num_classes": num_classes,
        "num_features": int(golden["embed_dim"]),
        "global_pool": "avg",
        "model_args": {
            "patch_size": int(golden["patch_size"]),
            "num_blocks": int(golden["num_blocks"]),
            "embed_dim": int(golden["embed_dim"]),
            "img_size": [height, width],
        },
        "pretrained_cfg": {
            "input_size": [3, height, width],
            "interpolation": "bicubic",
            "mean": [0.5, 0.5, 0.5],
            "std": [0.5, 0.5, 0.5],
            "num_classes": num_classes,
            "first_conv": "stem.proj",
            "classifier": "head",
        },
    }
    config.update(config_changes)
    with open(os.path.join(directory, "config.json"), "w") as file:
        json.dump(config, file)
    return str(directory)


@pytest.fixture(params=["gmlp", "mixer"])
def family(request):
    return request.param


@pytest.fixture
def timm_dir(family, tmp_path):
    return write_timm_directory(family, tmp_path / "timm")


@pytest.fixture
def golden(family):
    return np.load(fixture_path(family, ".npz"))
