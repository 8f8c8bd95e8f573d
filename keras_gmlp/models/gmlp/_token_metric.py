"""Argument and input checks shared by the per-token language-model metrics."""

from keras import ops


def check_padding_token_id(padding_token_id):
    if padding_token_id is not None and (
        isinstance(padding_token_id, bool)
        or not isinstance(padding_token_id, int)
        or padding_token_id < 0
    ):
        raise ValueError(
            "Argument `padding_token_id` must be None or a non-negative "
            f"integer. Received: padding_token_id={padding_token_id!r}"
        )


def check_token_shapes(metric, y_true, y_pred):
    if len(y_true.shape) != 2 or len(y_pred.shape) != 3:
        raise ValueError(
            f"{metric.__class__.__name__} expects labels of shape "
            "(batch, length) and predictions of shape (batch, length, "
            f"vocabulary_size). Received: y_true.shape={y_true.shape}, "
            f"y_pred.shape={y_pred.shape}"
        )


def per_token_weights(sample_weight):
    """`sample_weight` with one weight per token: a weight per sequence,
    shape `(batch,)` as `fit(sample_weight=...)` takes, applies to each of
    its tokens."""
    if sample_weight is None:
        return None
    sample_weight = ops.cast(sample_weight, "float32")
    if len(sample_weight.shape) == 1:
        sample_weight = ops.expand_dims(sample_weight, -1)
    return sample_weight
