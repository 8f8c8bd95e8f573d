"""Checks on concrete input values and on mismatched model parts.

Token ids can only be range-checked where their values exist in Python:
eager calls on every backend. Inside a compiled function (`jit_compile`,
`tf.function`) the ids are symbolic; there TensorFlow's gather raises on its
own, torch runs eagerly by default, and JAX's gather fills out-of-range rows
with NaN, so a NaN output under JAX points at bad token ids.
"""

import keras
import numpy as np

from keras_gmlp.layers._validation import known
from keras_gmlp.models._variable_guard import VariableGuard


def concrete_values(x):
    """`x` as a numpy array if its values are known now, else None."""
    if isinstance(x, (np.ndarray, np.generic, list, tuple)):
        return np.asarray(x)
    backend = keras.config.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        if tf.executing_eagerly() and hasattr(x, "numpy"):
            return x.numpy()
        return None
    if backend == "jax":
        import jax

        if isinstance(x, jax.core.Tracer):
            return None
        return np.asarray(x)
    if backend == "torch":
        import torch

        if torch.compiler.is_compiling() or x.device.type == "meta":
            return None
        return x.detach().cpu().numpy()
    return None


def check_token_ids(token_ids, vocabulary_size, owner):
    """Raises if concrete `token_ids` fall outside `[0, vocabulary_size)`."""
    values = concrete_values(token_ids)
    if values is None or values.size == 0:
        return
    low, high = int(values.min()), int(values.max())
    if low < 0 or high >= vocabulary_size:
        bad = low if low < 0 else high
        raise ValueError(
            f"{owner} has vocabulary_size={vocabulary_size}, so `token_ids` "
            f"must be in [0, {vocabulary_size - 1}]. Received: a token id "
            f"of {bad}. Check that the tokenizer and the backbone share a "
            "vocabulary."
        )


def check_sequence_length(length, max_sequence_length, owner):
    length = known(length)
    if length == 0:
        raise ValueError(
            f"{owner} needs at least one token per sequence; inputs must "
            f"have between 1 and {max_sequence_length} tokens. Received: "
            "sequence length 0"
        )
    if length is not None and length > max_sequence_length:
        raise ValueError(
            f"{owner} was built with max_sequence_length="
            f"{max_sequence_length}; inputs must have at most "
            f"{max_sequence_length} tokens. Received: sequence length "
            f"{length}. Shorten the inputs (the preprocessor's "
            "`sequence_length`) or build the backbone for longer sequences."
        )


def check_preprocessor_matches(backbone, preprocessor, owner):
    """Raises if `preprocessor` produces inputs `backbone` cannot take."""
    if preprocessor is None:
        return
    sequence_length = getattr(preprocessor, "sequence_length", None)
    if (
        sequence_length is not None
        and sequence_length > backbone.max_sequence_length
    ):
        raise ValueError(
            f"{owner}: the preprocessor packs sequences of "
            f"sequence_length={sequence_length}, longer than the backbone's "
            f"max_sequence_length={backbone.max_sequence_length}. Pass "
            f"`sequence_length<={backbone.max_sequence_length}` to the "
            "preprocessor."
        )
    tokenizer = getattr(preprocessor, "tokenizer", None)
    if tokenizer is None or getattr(tokenizer, "vocabulary", None) is None:
        return
    tokenizer_size = tokenizer.vocabulary_size()
    if tokenizer_size > backbone.vocabulary_size:
        raise ValueError(
            f"{owner}: the tokenizer has {tokenizer_size} tokens but the "
            f"backbone's vocabulary_size={backbone.vocabulary_size}; token "
            "ids would fall outside the embedding. Build the backbone with "
            f"`vocabulary_size={tokenizer_size}` (or larger)."
        )


def check_input_shapes(inputs, max_sequence_length, owner):
    """Checks a backbone's input dict by its shapes alone (known before a
    compiled step runs): `token_ids` of rank 2 and a length in
    `[1, max_sequence_length]`, and every other input of the same shape."""
    if not isinstance(inputs, dict) or "token_ids" not in inputs:
        return
    token_shape = getattr(inputs["token_ids"], "shape", None)
    if token_shape is None:
        return
    token_shape = tuple(known(d) for d in token_shape)
    if len(token_shape) != 2:
        raise ValueError(
            f"{owner} expects `token_ids` of rank 2, (batch, sequence_length). "
            f"Received: token_ids.shape={token_shape}"
        )
    check_sequence_length(token_shape[1], max_sequence_length, owner)
    for name in ("segment_ids", "padding_mask"):
        value = inputs.get(name)
        shape = getattr(value, "shape", None)
        if shape is None:
            continue
        shape = tuple(known(d) for d in shape)
        same = len(shape) == 2 and all(
            a is None or b is None or a == b for a, b in zip(shape, token_shape)
        )
        if not same:
            raise ValueError(
                f"{owner}: `{name}` must have the shape of `token_ids`, "
                f"{token_shape}. Received: {name}.shape={shape}"
            )


class TextInputGuard(VariableGuard):
    """`VariableGuard` for the gMLP text models: batches of token ids are
    checked against the backbone before `fit`, `evaluate` or `predict`
    compiles a step (raw strings are checked by the preprocessor)."""

    def check_step_inputs(self, x):
        backbone = getattr(self, "backbone", self)
        check_input_shapes(
            x, backbone.max_sequence_length, self.__class__.__name__
        )
