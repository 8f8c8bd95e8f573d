"""The bookkeeping shared by the per-token language-model metrics."""

import keras
from keras import ops


class TokenMetric(keras.metrics.Metric):
    """Sums a per-token value over the real tokens of `(batch, length)`
    labels and keeps the number of those tokens.

    A token counts with weight `sample_weight` (keras-hub's preprocessors
    yield 0 for padded mask slots and padded positions) and, when
    `padding_token_id` is set, only if its label is not that id. Either
    signal alone is enough, so the metric is right in `metrics=` (Keras
    passes no sample weights there) and in `weighted_metrics=`.
    Subclasses define `token_values` and `result`.
    """

    def __init__(self, padding_token_id=0, name=None, dtype="float32"):
        if padding_token_id is not None and (
            isinstance(padding_token_id, bool)
            or not isinstance(padding_token_id, int)
            or padding_token_id < 0
        ):
            raise ValueError(
                "Argument `padding_token_id` must be None or a non-negative "
                f"integer. Received: padding_token_id={padding_token_id!r}"
            )
        super().__init__(name=name, dtype=dtype)
        self.padding_token_id = padding_token_id
        self.total = self.add_variable(
            shape=(), initializer="zeros", dtype=self.dtype, name="total"
        )
        self.count = self.add_variable(
            shape=(), initializer="zeros", dtype=self.dtype, name="count"
        )

    def token_values(self, y_true, y_pred):
        raise NotImplementedError

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "int32")
        y_pred = ops.cast(y_pred, "float32")
        if len(y_true.shape) != 2 or len(y_pred.shape) != 3:
            raise ValueError(
                f"{self.__class__.__name__} expects labels of shape "
                "(batch, length) and predictions of shape (batch, length, "
                f"vocabulary_size). Received: y_true.shape={y_true.shape}, "
                f"y_pred.shape={y_pred.shape}"
            )
        weights = ops.ones(ops.shape(y_true), dtype="float32")
        if self.padding_token_id is not None:
            weights = weights * ops.cast(
                ops.not_equal(y_true, self.padding_token_id), "float32"
            )
        if sample_weight is not None:
            sample_weight = ops.cast(sample_weight, "float32")
            if len(sample_weight.shape) == 1:
                # One weight per sequence.
                sample_weight = ops.expand_dims(sample_weight, -1)
            weights = weights * sample_weight
        values = ops.cast(self.token_values(y_true, y_pred), "float32")
        self.total.assign_add(ops.cast(ops.sum(values * weights), self.dtype))
        self.count.assign_add(ops.cast(ops.sum(weights), self.dtype))

    def mean_value(self):
        return ops.divide_no_nan(self.total, self.count)

    def reset_state(self):
        self.total.assign(0.0)
        self.count.assign(0.0)

    def get_config(self):
        config = super().get_config()
        config["padding_token_id"] = self.padding_token_id
        return config
