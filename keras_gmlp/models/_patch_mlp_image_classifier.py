"""The argument checks the gMLP and MLP-Mixer image classifiers share."""

from keras_hub.models import ImageClassifier

from keras_gmlp.models._checked_steps import CheckedSteps
from keras_gmlp.models._patch_mlp_backbone import check_images_shape
from keras_gmlp.models._timm_presets import TimmPresetsMixin


class PatchMLPImageClassifier(CheckedSteps, TimmPresetsMixin, ImageClassifier):
    """keras-hub's `ImageClassifier` with timm checkpoints in `from_preset`
    and a clear error for a backbone of another family or a bad class
    count, and the backbone's image shape checked on every batch of `fit`,
    `evaluate` and `predict` (after the preprocessor). Subclasses set
    `backbone_cls` and `preprocessor_cls`."""

    def __init__(self, backbone, num_classes, preprocessor=None, **kwargs):
        if not isinstance(backbone, self.backbone_cls):
            raise ValueError(
                f"{self.__class__.__name__} takes a "
                f"{self.backbone_cls.__name__}. Received: "
                f"backbone={type(backbone).__name__}"
            )
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(
                "`num_classes` must be a positive integer. Received: "
                f"num_classes={num_classes!r}"
            )
        super().__init__(backbone, num_classes, preprocessor=preprocessor, **kwargs)

    def check_batch_inputs(self, x):
        backbone = self.backbone
        check_images_shape(x, backbone.image_shape, backbone.data_format,
                           self.__class__.__name__)
