"""Perplexity over real tokens, the computation both LM metrics share."""

import keras
from keras import ops

from keras_gmlp.models.gmlp._token_metric import check_padding_token_id
from keras_gmlp.models.gmlp._token_metric import check_token_shapes
from keras_gmlp.models.gmlp._token_metric import per_token_weights


class TokenPerplexity(keras.metrics.Metric):
    """`exp` of the mean cross-entropy over the tokens whose label is not
    `padding_token_id` and whose sample weight is nonzero, pooled over every
    batch seen: the sum of cross-entropies over the count of tokens.

    keras-hub's `Perplexity` is not the base: before keras-hub 0.32 it
    weighted each batch's mean by the batch size, not by its tokens, so the
    value moved with how evaluation data was batched. It also multiplies
    sample weights of shape `(batch,)`, one per sequence, with its
    `(batch, length)` token mask unexpanded. Here a weight per sequence
    applies to each of its tokens, `padding_token_id` and `from_logits` are
    checked in `__init__`, and inputs of the wrong rank are named in a
    ValueError.
    """

    def __init__(
        self, from_logits=True, padding_token_id=0, name=None, dtype="float32"
    ):
        if not isinstance(from_logits, bool):
            raise ValueError(
                "Argument `from_logits` must be a bool. "
                f"Received: from_logits={from_logits!r}"
            )
        check_padding_token_id(padding_token_id)
        super().__init__(name=name, dtype=dtype)
        self.from_logits = from_logits
        self.padding_token_id = padding_token_id
        self.crossentropy_sum = self.add_variable(
            shape=(), initializer="zeros", name="crossentropy_sum"
        )
        self.token_count = self.add_variable(
            shape=(), initializer="zeros", name="token_count"
        )

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.convert_to_tensor(y_true)
        y_pred = ops.convert_to_tensor(y_pred)
        check_token_shapes(self, y_true, y_pred)
        weights = ops.ones(ops.shape(y_true), dtype=self.dtype)
        if self.padding_token_id is not None:
            real = ops.not_equal(y_true, self.padding_token_id)
            weights = weights * ops.cast(real, self.dtype)
        if sample_weight is not None:
            weights = weights * ops.cast(per_token_weights(sample_weight), self.dtype)
        crossentropy = keras.losses.sparse_categorical_crossentropy(
            y_true, ops.cast(y_pred, self.dtype), from_logits=self.from_logits
        )
        self.crossentropy_sum.assign_add(ops.sum(crossentropy * weights))
        self.token_count.assign_add(ops.sum(weights))

    def result(self):
        # 0 before any token is seen, as keras-hub's Perplexity reports.
        count = ops.convert_to_tensor(self.token_count)
        return ops.where(
            ops.equal(count, 0),
            ops.zeros((), self.dtype),
            ops.exp(self.crossentropy_sum / ops.maximum(count, 1e-12)),
        )

    def get_config(self):
        return {
            "name": self.name,
            "dtype": self.dtype,
            "from_logits": self.from_logits,
            "padding_token_id": self.padding_token_id,
        }
