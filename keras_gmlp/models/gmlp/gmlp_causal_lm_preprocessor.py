import keras
from keras_hub.models import CausalLMPreprocessor

from keras_gmlp._compat import BackboneLengthFromPreset
from keras_gmlp.models.gmlp._checks import concrete_values
from keras_gmlp.models.gmlp.gmlp_backbone import gMLPBackbone
from keras_gmlp.models.gmlp.gmlp_tokenizer import gMLPTokenizer


@keras.saving.register_keras_serializable(package="keras_gmlp")
class gMLPCausalLMPreprocessor(BackboneLengthFromPreset, CausalLMPreprocessor):
    """Tokenizes and packs text for `gMLPCausalLM`.

    For `fit()`, each string becomes `[CLS] tokens [SEP]`, padded to
    `sequence_length + 1` and shifted by one: `x` holds `"token_ids"` and
    `"padding_mask"`, `y` the next token at each position and
    `sample_weight` which positions are real. For `generate()`, prompts are
    packed as `[CLS] tokens` (no end token) so generation continues them.
    Runs inside `tf.data.Dataset.map`.

    A prompt that fills the whole generation length leaves nothing to
    generate, and keras-hub's packer would silently cut a longer one; both
    raise a ValueError here when the prompts are concrete values.

    Args:
        tokenizer: a `gMLPTokenizer`.
        sequence_length: int, the packed length; at most the causal
            backbone's `max_sequence_length`.
        add_start_token: bool, whether to prepend `[CLS]`.
        add_end_token: bool, whether to append `[SEP]` (training only).

    Examples:

    ```python
    preprocessor = keras_gmlp.models.gMLPCausalLMPreprocessor(
        tokenizer, sequence_length=64
    )
    x, y, sample_weight = preprocessor(["def main():", "import keras"])
    prompts = preprocessor.generate_preprocess(["def main"], sequence_length=32)
    ```
    """

    backbone_cls = gMLPBackbone
    tokenizer_cls = gMLPTokenizer

    def generate_preprocess(self, x, sequence_length=None):
        outputs = super().generate_preprocess(x, sequence_length=sequence_length)
        padding_mask = concrete_values(outputs["padding_mask"])
        if padding_mask is not None and padding_mask.ndim == 2:
            length = padding_mask.shape[1]
            full = padding_mask.astype(bool).all(axis=1)
            if full.any():
                raise ValueError(
                    f"A prompt fills all max_length={length} positions (with "
                    f"its start token), so nothing is left to generate; longer "
                    f"prompts would be cut. Prompts must be at most "
                    f"{length - 2} tokens long. Received: {int(full.sum())} "
                    "such prompt(s). Shorten them or pass a larger "
                    "`max_length` to generate() (at most the backbone's "
                    "max_sequence_length)."
                )
        return outputs
