"""Shared set-up for the application tests: the timm fixtures and their reduced configs."""

import os

import numpy as np

from keras_gmlp.applications.gmlp import gMLP
from keras_gmlp.applications.mlp_mixer import MLPMixer

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")


def fixture_path(family, suffix):
    return os.path.join(FIXTURES, f"timm_{family}_tiny{suffix}")


def build_tiny(family, **kwargs):
    """The reduced config of tests/fixtures/make_timm_fixtures.py."""
    golden = np.load(fixture_path(family, ".npz"))
    dim = int(golden["embed_dim"])
    config = dict(
        num_blocks=int(golden["num_blocks"]),
        hidden_dim=dim,
        patch_size=int(golden["patch_size"]),
        input_shape=tuple(int(s) for s in golden["img_size"]) + (3,),
        classes=int(golden["num_classes"]),
        classifier_activation=None,
    )
    config.update(kwargs)
    if family == "gmlp":
        return gMLP(intermediate_dim=6 * dim, **config)
    return MLPMixer(tokens_mlp_dim=dim // 2, channels_mlp_dim=4 * dim, **config)
