import keras
from keras_hub.models import TextClassifierPreprocessor

from keras_gmlp._compat import BackboneLengthFromPreset
from keras_gmlp.models.gmlp.gmlp_backbone import gMLPBackbone
from keras_gmlp.models.gmlp.gmlp_tokenizer import gMLPTokenizer


@keras.saving.register_keras_serializable(package="keras_gmlp")
class gMLPTextClassifierPreprocessor(
    BackboneLengthFromPreset, TextClassifierPreprocessor
):
    """Tokenizes and packs single sentences or pairs for `gMLPTextClassifier`.

    Inputs are tokenized with a `gMLPTokenizer` and packed with keras-hub's
    `MultiSegmentPacker` as `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`,
    padded to `sequence_length`. The output is a dict with `"token_ids"`,
    `"segment_ids"` (0 for the first segment, 1 for the second) and
    `"padding_mask"`; labels and sample weights pass through unchanged.
    Runs inside `tf.data.Dataset.map`.

    Args:
        tokenizer: a `gMLPTokenizer`.
        sequence_length: int, the packed length; at most the backbone's
            `max_sequence_length`. Defaults to 512, or, from a preset
            that saved no such preprocessor, to the backbone's length.
        truncate: `"round_robin"` or `"waterfall"`, how segments are cut
            to fit `sequence_length`.

    Examples:

    ```python
    preprocessor = keras_gmlp.models.gMLPTextClassifierPreprocessor(
        tokenizer, sequence_length=128
    )
    x = preprocessor(["The quick brown fox jumped.", "Call me Ishmael."])

    # Sentence pairs: convert to tensors first.
    first = tf.constant(["The quick brown fox jumped.", "Call me Ishmael."])
    second = tf.constant(["The fox tripped.", "Oh look, a whale."])
    x = preprocessor(x=(first, second))
    ```
    """

    backbone_cls = gMLPBackbone
    tokenizer_cls = gMLPTokenizer
