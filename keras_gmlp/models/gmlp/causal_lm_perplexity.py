import keras

from keras_gmlp.models.gmlp._perplexity import TokenPerplexity


@keras.saving.register_keras_serializable(package="keras_gmlp")
class CausalLMPerplexity(TokenPerplexity):
    """Perplexity of next-token prediction over the real tokens.

    `gMLPCausalLMPreprocessor` (like keras-hub's causal LM preprocessors)
    pads every sequence to `sequence_length` and yields `sample_weight` 0
    for the padded positions. Keras' loss divides the summed cross-entropy
    by all positions, so `exp(loss)` understates the perplexity of short
    texts; this metric averages the cross-entropy over the real next
    tokens only (labels other than `padding_token_id` and, under
    `compile(weighted_metrics=[...])`, with nonzero sample weight) and
    reports `exp` of that mean, token by token across the whole
    evaluation.

    Args:
        from_logits: bool, whether predictions are logits (as
            `gMLPCausalLM` outputs) or probabilities.
        padding_token_id: int or `None`, the label of padded positions
            (`"[PAD]"` is 0 in `gMLPTokenizer`). `None` counts every
            position whose sample weight is nonzero.
        name: string, the metric's name in logs.
        dtype: the dtype of the accumulators.

    Examples:

    ```python
    causal_lm = keras_gmlp.models.gMLPCausalLM(backbone, preprocessor)
    causal_lm.compile(
        weighted_metrics=[keras_gmlp.models.CausalLMPerplexity()]
    )
    causal_lm.evaluate(texts)["causal_lm_perplexity"]
    ```
    """

    def __init__(
        self,
        from_logits=True,
        padding_token_id=0,
        name="causal_lm_perplexity",
        dtype="float32",
    ):
        super().__init__(
            from_logits=from_logits,
            padding_token_id=padding_token_id,
            name=name,
            dtype=dtype,
        )
