import keras
from keras import ops

from keras_gmlp.models.gmlp._token_metric import check_padding_token_id
from keras_gmlp.models.gmlp._token_metric import check_token_shapes
from keras_gmlp.models.gmlp._token_metric import per_token_weights


@keras.saving.register_keras_serializable(package="keras_gmlp")
class MaskedLMAccuracy(keras.metrics.SparseCategoricalAccuracy):
    """The share of real masked tokens whose top-scoring prediction is right.

    A masked LM predicts `mask_selection_length` slots per sequence, and
    keras-hub's preprocessors pad the slots a short sequence does not use
    with label 0 (`"[PAD]"`) and `sample_weight` 0. This metric counts only
    the real slots, so its value does not move with the padding, in
    `compile(metrics=[...])` (labels equal to `padding_token_id` are
    skipped) as in `compile(weighted_metrics=[...])` (the sample weights
    are used as well). Every counted token weighs the same, however many
    masked tokens its sequence has.

    Args:
        padding_token_id: int or `None`, the label of padded slots
            (`"[PAD]"` is 0 in `gMLPTokenizer`). `None` counts every slot
            whose sample weight is nonzero.
        name: string, the metric's name in logs.
        dtype: the dtype of the accumulators.

    Examples:

    ```python
    metric = keras_gmlp.models.MaskedLMAccuracy()
    y_true = np.array([[5, 7, 0]])  # the last slot is padding
    logits = np.zeros((1, 3, 10))
    logits[0, 0, 5] = logits[0, 1, 3] = 1.0
    metric(y_true, logits)  # 0.5: one of the two real tokens is right

    masked_lm.compile(
        weighted_metrics=[
            keras_gmlp.models.MaskedLMAccuracy(),
            keras_gmlp.models.MaskedLMPerplexity(),
        ]
    )
    ```
    """

    def __init__(self, padding_token_id=0, name="masked_lm_accuracy", dtype="float32"):
        check_padding_token_id(padding_token_id)
        super().__init__(name=name, dtype=dtype)
        self.padding_token_id = padding_token_id

    def update_state(self, y_true, y_pred, sample_weight=None):
        # Keras' accuracy weighs each token by its sample weight; the
        # padding label is folded into those weights, so that padded slots
        # drop out under `compile(metrics=...)` too, where Keras passes none.
        y_true = ops.cast(y_true, "int32")
        y_pred = ops.convert_to_tensor(y_pred)
        check_token_shapes(self, y_true, y_pred)
        weights = ops.ones(ops.shape(y_true), dtype="float32")
        if self.padding_token_id is not None:
            weights = ops.cast(ops.not_equal(y_true, self.padding_token_id), "float32")
        sample_weight = per_token_weights(sample_weight)
        if sample_weight is not None:
            weights = weights * sample_weight
        super().update_state(y_true, y_pred, sample_weight=weights)

    def get_config(self):
        config = super().get_config()
        config["padding_token_id"] = self.padding_token_id
        return config
