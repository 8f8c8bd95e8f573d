"""Argument checks shared by the layers, with Keras-style error messages."""


def check_positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(
            f"Argument `{name}` must be a positive integer. Received: {name}={value!r}"
        )


def is_rate(value):
    """Whether `value` is a number (not a bool) in [0, 1)."""
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return is_number and 0.0 <= value < 1.0


def check_rate(name, value):
    if not is_rate(value):
        raise ValueError(
            f"Argument `{name}` must be a float in [0, 1). Received: {name}={value!r}"
        )


def check_rank(layer_name, argument, shape, rank):
    if shape is None or len(shape) != rank:
        raise ValueError(
            f"{layer_name} expects `{argument}` of rank {rank}, "
            f"(batch, sequence_length, channels). Received: "
            f"{argument}.shape={None if shape is None else tuple(shape)}"
        )


def known(dim):
    """`dim` if it is a concrete int; None for unknown or symbolic sizes
    (e.g. the polymorphic shapes of a JAX export)."""
    return dim if isinstance(dim, int) and not isinstance(dim, bool) else None


def check_batch_not_empty(owner, argument, shape):
    """Refuses a batch of 0 samples, where its size is known now.

    Keras' loops have nothing to return for it, so every entry point
    (`__call__`, `predict`, `evaluate`, `fit`, `*_on_batch`) refuses it
    alike, with a ValueError, instead of returning an empty result."""
    if shape is not None and len(shape) > 0 and known(shape[0]) == 0:
        raise ValueError(
            f"{owner} needs at least one sample per batch; `{argument}` is an "
            f"empty batch. Received: {argument}.shape="
            f"{tuple(known(size) for size in shape)}"
        )


def check_length(layer_name, length, max_length):
    length = known(length)
    if length == 0:
        raise ValueError(
            f"{layer_name} needs at least one token; inputs must have length "
            f"in [1, {max_length}]. Received: length 0"
        )
    if length is not None and length > max_length:
        raise ValueError(
            f"{layer_name} was built for at most sequence_length={max_length} "
            f"tokens; inputs must have length <= {max_length}. Received: "
            f"length {length}"
        )


def check_padding_mask(layer_name, inputs_shape, padding_mask):
    """`padding_mask` must be `(batch, length)` of `inputs`, where known."""
    if padding_mask is None:
        return
    mask_shape = tuple(known(d) for d in padding_mask.shape)
    expected = tuple(known(d) for d in inputs_shape[:2])
    compatible = len(mask_shape) == 2 and all(
        a is None or b is None or a == b for a, b in zip(mask_shape, expected)
    )
    if not compatible:
        raise ValueError(
            f"{layer_name} expects `padding_mask` of shape (batch, length) = "
            f"{expected}, matching `inputs`. Received: "
            f"padding_mask.shape={mask_shape}"
        )
