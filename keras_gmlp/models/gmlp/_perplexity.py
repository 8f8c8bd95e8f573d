"""Perplexity over real tokens, the computation both LM metrics share."""

import keras_hub
from keras import ops

from keras_gmlp.models.gmlp._token_metric import check_padding_token_id
from keras_gmlp.models.gmlp._token_metric import check_token_shapes
from keras_gmlp.models.gmlp._token_metric import per_token_weights


class TokenPerplexity(keras_hub.metrics.Perplexity):
    """keras-hub's `Perplexity` (`exp` of the mean cross-entropy over the
    tokens whose label is not `padding_token_id` and whose sample weight is
    nonzero), with what it lacks for `fit`/`evaluate` on language models:

    - sample weights of shape `(batch,)`, one per sequence: keras-hub's
      multiplies them with its `(batch, length)` token mask unexpanded,
      which fails to broadcast (or, with `mask_token_id=None`, counts
      sequences instead of tokens);
    - `padding_token_id` and `from_logits` checked in `__init__`, and
      inputs of the wrong rank named in a ValueError;
    - `padding_token_id` as the config key, as saved models already use.
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
        super().__init__(
            from_logits=from_logits,
            mask_token_id=padding_token_id,
            dtype=dtype,
            name=name,
        )
        self.padding_token_id = padding_token_id

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.convert_to_tensor(y_true)
        y_pred = ops.convert_to_tensor(y_pred)
        check_token_shapes(self, y_true, y_pred)
        super().update_state(
            y_true, y_pred, sample_weight=per_token_weights(sample_weight)
        )

    def get_config(self):
        config = super().get_config()
        del config["mask_token_id"]
        config["padding_token_id"] = self.padding_token_id
        return config
