"""Tiny gMLP image models shared by the tests of keras_gmlp.utils: a
builder's functional model and a keras-hub image classifier, both on
16x16x3 images in 2x2 patches of 8."""

from keras_gmlp.applications.gmlp import gMLP


def builder_model():
    return gMLP(
        num_blocks=1,
        hidden_dim=8,
        intermediate_dim=16,
        patch_size=8,
        input_shape=(16, 16, 3),
        classes=3,
        classifier_activation=None,
    )


def keras_hub_classifier():
    from keras_gmlp.models import gMLPImageBackbone
    from keras_gmlp.models import gMLPImageClassifier

    backbone = gMLPImageBackbone(
        patch_size=8,
        num_layers=1,
        hidden_dim=8,
        intermediate_dim=16,
        image_shape=(16, 16, 3),
    )
    return gMLPImageClassifier(backbone=backbone, num_classes=3, preprocessor=None)
