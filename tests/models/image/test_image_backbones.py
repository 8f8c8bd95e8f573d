"""The image backbones with keras-hub's own harness, their outputs and
feature extraction, and their argument checks."""

import keras
import numpy as np
import pytest
from keras_hub.src.tests import test_case

from tests.models.image.conftest import family_classes
from tests.models.image.conftest import small_backbone_kwargs


class ImageBackboneHarnessTest(test_case.TestCase):
    def _run(self, family):
        self.run_vision_backbone_test(
            cls=family_classes(family)["backbone"],
            # Square: the harness's channels-first pass reverses image_shape.
            init_kwargs=small_backbone_kwargs(family),
            input_data=np.random.default_rng(0).uniform(-1, 1, (2, 16, 16, 3)),
            expected_output_shape=(2, 4, 4, 8),
            # keras.layers.Permute cannot give the output spec of concrete
            # arrays, which the harness's channels-first pass asks for;
            # test_channels_first_is_the_transposed_channels_last checks it.
            run_data_format_check=False,
        )

    def test_gmlp_backbone_basics(self):
        self._run("gmlp")

    def test_mixer_backbone_basics(self):
        self._run("mixer")


def _manual_forward(backbone, images):
    """Layer by layer through the backbone's own layers."""
    x = backbone.stem(images)
    outputs = []
    for block in backbone.blocks:
        x = block(x)
        outputs.append(keras.ops.convert_to_numpy(x))
    return outputs, keras.ops.convert_to_numpy(backbone.norm(x))


def test_output_is_the_normalised_token_grid_row_major(family):
    backbone = family_classes(family)["backbone"](
        **small_backbone_kwargs(family, image_shape=(8, 12, 3))
    )
    images = np.random.default_rng(1).uniform(-1, 1, (2, 8, 12, 3)).astype("float32")
    _, tokens = _manual_forward(backbone, images)
    grid = keras.ops.convert_to_numpy(backbone(images))
    assert grid.shape == (2, 2, 3, 8)
    np.testing.assert_allclose(grid.reshape(2, 6, 8), tokens, atol=1e-6)


def test_channels_first_is_the_transposed_channels_last(family):
    cls = family_classes(family)["backbone"]
    last = cls(**small_backbone_kwargs(family, image_shape=(8, 12, 3)))
    first = cls(
        **small_backbone_kwargs(family, image_shape=(3, 8, 12)),
        data_format="channels_first",
    )
    first.set_weights(last.get_weights())
    images = np.random.default_rng(4).uniform(-1, 1, (2, 8, 12, 3)).astype("float32")
    expected = keras.ops.convert_to_numpy(last(images)).transpose(0, 3, 1, 2)
    got = keras.ops.convert_to_numpy(first(images.transpose(0, 3, 1, 2)))
    np.testing.assert_allclose(got, expected, atol=1e-6)
    features = first.feature_extractor(indices=1)(images.transpose(0, 3, 1, 2))
    assert tuple(features["blocks_1"].shape) == (2, 8, 2, 3)


def test_feature_extractor_returns_the_chosen_blocks(family):
    backbone = family_classes(family)["backbone"](
        **dict(small_backbone_kwargs(family), num_layers=3)
    )
    images = np.random.default_rng(2).uniform(-1, 1, (2, 16, 16, 3)).astype("float32")
    blocks, tokens = _manual_forward(backbone, images)

    everything = backbone.feature_extractor()(images)
    assert sorted(everything) == ["blocks_0", "blocks_1", "blocks_2"]
    for index, expected in enumerate(blocks):
        got = keras.ops.convert_to_numpy(everything[f"blocks_{index}"])
        np.testing.assert_allclose(got.reshape(2, 16, 8), expected, atol=1e-6)

    # An int takes the last n blocks; negative indices count from the end.
    assert sorted(backbone.feature_extractor(indices=2).output) == [
        "blocks_1",
        "blocks_2",
    ]
    assert list(backbone.feature_extractor(indices=[0, -1]).output) == [
        "blocks_0",
        "blocks_2",
    ]
    # norm=True applies the final norm: the last block then is the output.
    normed = backbone.feature_extractor(indices=[-1], norm=True)(images)["blocks_2"]
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(normed).reshape(2, 16, 8), tokens, atol=1e-6
    )
    # The extractor shares the backbone's weights (all but the unused norm).
    extractor = backbone.feature_extractor()
    assert extractor.count_params() == backbone.count_params() - 2 * 8
    assert {id(v) for v in extractor.weights} <= {id(v) for v in backbone.weights}


@pytest.mark.parametrize("indices", [0, 4, [3], [-4], [0.5], True])
def test_feature_extractor_rejects_bad_indices(family, indices):
    backbone = family_classes(family)["backbone"](**small_backbone_kwargs(family))
    with pytest.raises(ValueError, match="indices"):
        backbone.feature_extractor(indices=indices)


@pytest.mark.parametrize(
    "change, argument",
    [
        ({"image_shape": (18, 16, 3)}, "image_shape"),
        ({"image_shape": (None, 16, 3)}, "image_shape"),
        ({"image_shape": (16, 16)}, "image_shape"),
        ({"patch_size": 0}, "patch_size"),
        ({"num_layers": 0}, "num_layers"),
        ({"hidden_dim": 2.5}, "hidden_dim"),
        ({"drop_path_rate": 1.0}, "drop_path_rate"),
        ({"data_format": "nhwc"}, "data_format"),
    ],
)
def test_bad_arguments_raise_before_building(family, change, argument):
    kwargs = dict(small_backbone_kwargs(family), **change)
    with pytest.raises(ValueError, match=argument):
        family_classes(family)["backbone"](**kwargs)


def test_gmlp_intermediate_dim_must_be_even():
    with pytest.raises(ValueError, match="intermediate_dim=15"):
        family_classes("gmlp")["backbone"](
            **dict(small_backbone_kwargs("gmlp"), intermediate_dim=15)
        )


def test_builders_and_backbones_build_the_same_layers(family):
    from keras_gmlp.applications import MixerS32
    from keras_gmlp.applications import gMLPTi
    from keras_gmlp.models.gmlp_image import backbone_presets as gmlp_presets
    from keras_gmlp.models.mlp_mixer import backbone_presets as mixer_presets

    name, builder, presets = (
        ("gmlp_ti16_224", gMLPTi, gmlp_presets)
        if family == "gmlp"
        else ("mixer_s32_224", MixerS32, mixer_presets)
    )
    with keras.StatelessScope(initialize_variables=False):
        backbone = family_classes(family)["backbone"](**presets[name]["config"])
        model = builder(include_top=False)
    # Without the 1000-class head (hidden_dim * 1000 + 1000), timm's count.
    head = backbone.hidden_dim * 1000 + 1000
    assert backbone.count_params() + head == presets[name]["metadata"]["params"]
    assert [(v.path, v.shape) for v in backbone.weights] == [
        (v.path, v.shape) for v in model.weights
    ]
