import keras

from keras_gmlp.models.gmlp._perplexity import TokenPerplexity


@keras.saving.register_keras_serializable(package="keras_gmlp")
class MaskedLMPerplexity(TokenPerplexity):
    """Perplexity over the real masked tokens: `exp(mean cross-entropy)`.

    The loss that `fit()` reports for a keras-hub masked LM is the summed
    cross-entropy of the real masked tokens divided by *all* mask slots,
    padded ones included, so `exp(loss)` is not a perplexity and changes
    with `mask_selection_length`. This metric averages over real masked
    tokens only: slots whose label is `padding_token_id` (usable in
    `compile(metrics=[...])`, where Keras passes no sample weights) and
    slots with `sample_weight` 0 (`compile(weighted_metrics=[...])`, fed by
    the preprocessor's mask weights) do not count. The mean is over tokens,
    not over sequences or batches, so the value does not depend on how the
    data is batched.

    Args:
        from_logits: bool, whether predictions are logits (as
            `gMLPMaskedLM` and keras-hub's masked LMs output) or
            probabilities.
        padding_token_id: int or `None`, the label of padded slots
            (`"[PAD]"` is 0 in `gMLPTokenizer`). `None` counts every slot
            whose sample weight is nonzero.
        name: string, the metric's name in logs.
        dtype: the dtype of the accumulators.

    Examples:

    ```python
    masked_lm = keras_gmlp.models.gMLPMaskedLM(backbone, preprocessor)
    masked_lm.compile(
        weighted_metrics=[
            keras_gmlp.models.MaskedLMAccuracy(),
            keras_gmlp.models.MaskedLMPerplexity(),
        ]
    )
    masked_lm.evaluate(texts)["masked_lm_perplexity"]

    metric = keras_gmlp.models.MaskedLMPerplexity()
    metric(np.array([[3, 0]]), np.zeros((1, 2, 10)))  # 10.0: uniform guess
    ```
    """

    def __init__(
        self,
        from_logits=True,
        padding_token_id=0,
        name="masked_lm_perplexity",
        dtype="float32",
    ):
        super().__init__(
            from_logits=from_logits,
            padding_token_id=padding_token_id,
            name=name,
            dtype=dtype,
        )
