import keras
from keras_hub.models import MaskedLMPreprocessor

from keras_gmlp._compat import BackboneLengthFromPreset
from keras_gmlp.models.gmlp.gmlp_backbone import gMLPBackbone
from keras_gmlp.models.gmlp.gmlp_tokenizer import gMLPTokenizer


@keras.saving.register_keras_serializable(package="keras_gmlp")
class gMLPMaskedLMPreprocessor(BackboneLengthFromPreset, MaskedLMPreprocessor):
    """Tokenizes, packs and masks text for `gMLPMaskedLM`.

    Each input (a string, a batch of strings, or a tuple of segments such
    as sentence pairs) is tokenized, packed as `[CLS] a [SEP] b [SEP]` and
    padded to `sequence_length`; then non-special tokens are selected at
    `mask_selection_rate` and replaced by `[MASK]` (`mask_token_rate`), a
    random token (`random_token_rate`) or left as they are. The output is an
    `(x, y, sample_weight)` tuple for `fit()`: `x` holds `"token_ids"`,
    `"segment_ids"`, `"padding_mask"` and `"mask_positions"`, `y` the
    original ids at the masked positions and `sample_weight` which of them
    are real. Runs inside `tf.data.Dataset.map`.

    Args:
        tokenizer: a `gMLPTokenizer`.
        sequence_length: int, the packed length; at most the backbone's
            `max_sequence_length`. Defaults to 512, or, from a preset
            that saved no such preprocessor, to the backbone's length.
        truncate: `"round_robin"` or `"waterfall"`, how segments are cut
            to fit `sequence_length`.
        mask_selection_rate: float, the probability of selecting a token.
        mask_selection_length: int, the most tokens selected per sequence.
        mask_token_rate: float, the probability of a selected token becoming
            `[MASK]`.
        random_token_rate: float, the probability of a selected token
            becoming a random token.

    Examples:

    ```python
    preprocessor = keras_gmlp.models.gMLPMaskedLMPreprocessor(
        tokenizer, sequence_length=128
    )
    x, y, sample_weight = preprocessor(["The quick brown fox jumped."])

    ds = tf.data.Dataset.from_tensor_slices(texts).batch(32)
    ds = ds.map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE)
    ```
    """

    backbone_cls = gMLPBackbone
    tokenizer_cls = gMLPTokenizer
