"""Perplexity over real tokens, the computation both LM metrics share."""

from keras import ops

from keras_gmlp.models.gmlp._token_metric import TokenMetric


class TokenPerplexity(TokenMetric):
    """`exp` of the mean cross-entropy over the counted tokens."""

    def __init__(self, from_logits=True, padding_token_id=0, name=None, dtype="float32"):
        if not isinstance(from_logits, bool):
            raise ValueError(
                "Argument `from_logits` must be a bool. "
                f"Received: from_logits={from_logits!r}"
            )
        super().__init__(padding_token_id=padding_token_id, name=name, dtype=dtype)
        self.from_logits = from_logits

    def token_values(self, y_true, y_pred):
        return ops.sparse_categorical_crossentropy(
            y_true, y_pred, from_logits=self.from_logits
        )

    def result(self):
        # No counted token yet: 0, as Keras' mean metrics report.
        return ops.where(self.count > 0, ops.exp(self.mean_value()), 0.0)

    def get_config(self):
        config = super().get_config()
        config["from_logits"] = self.from_logits
        return config
