"""Checks on the text models' inputs and on mismatched model parts.

Shapes are checked in the backbone's `call` (on every call whose shapes are
known, traced or not) and, through `CheckedSteps`, on every batch of `fit`,
`evaluate` and `predict` before the compiled step. Token and segment ids
are range-checked only on values in host memory: the batches of those
methods (numpy arrays, or tensors that the data pipeline made on the CPU)
before the step copies them to the device. The forward pass never reads
them, since that would copy every batch back from the device. A direct
call checks ids given as numpy arrays or lists (in `__call__`); given as
device tensors they are not checked: TensorFlow's and torch's gather raise
their own error, and JAX's gather fills the row with NaN, so a NaN output
under JAX points at bad ids. The preprocessors' tokenizers cannot
produce ids outside the vocabulary, and the tasks check at construction
that the tokenizer fits the backbone.
"""

import keras
import numpy as np

from keras_gmlp.layers._validation import check_batch_not_empty
from keras_gmlp.layers._validation import known
from keras_gmlp.utils._checked_steps import CheckedSteps


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


def host_values(x):
    """`x` as a numeric numpy array if it is in host memory (a numpy array,
    list or tuple, or an eager tensor on the CPU), else None: checking a
    device tensor's values would copy it to the host and synchronise the
    device on every step."""
    if isinstance(x, (np.ndarray, np.generic, list, tuple)):
        try:
            values = np.asarray(x)
        except ValueError:  # ragged lists: left to the conversion to tensors
            return None
    elif keras.ops.is_tensor(x) and _on_cpu(x):
        values = concrete_values(x)
    else:
        return None
    if values is None or values.dtype.kind not in "iuf":
        return None
    return values


def _on_cpu(tensor):
    backend = keras.config.backend()
    if backend == "tensorflow":
        return "CPU" in (getattr(tensor, "device", "") or "").upper()
    if backend == "jax":
        import jax

        if isinstance(tensor, jax.core.Tracer):
            return False
        return all(device.platform == "cpu" for device in tensor.devices())
    if backend == "torch":
        return tensor.device.type == "cpu"
    return False


def check_id_range(values, size, argument, owner, size_name):
    """Raises if the host `values` of `argument` fall outside `[0, size)`."""
    values = host_values(values)
    if values is None or values.size == 0:
        return
    low, high = int(values.min()), int(values.max())
    if low < 0 or high >= size:
        bad = low if low < 0 else high
        raise ValueError(
            f"{owner} has {size_name}={size}, so `{argument}` must be in "
            f"[0, {size - 1}]. Received: a {argument[:-1].replace('_', ' ')} "
            f"of {bad}."
        )


def check_input_values(inputs, vocabulary_size, num_segments, owner):
    """Range-checks the token and segment ids of an input dict whose values
    are in host memory."""
    if not isinstance(inputs, dict):
        return
    if "token_ids" in inputs:
        check_id_range(
            inputs["token_ids"],
            vocabulary_size,
            "token_ids",
            owner,
            "vocabulary_size",
        )
    if "segment_ids" in inputs:
        check_id_range(
            inputs["segment_ids"],
            num_segments,
            "segment_ids",
            owner,
            "num_segments",
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
    if sequence_length is not None and sequence_length > backbone.max_sequence_length:
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
    compiled step runs): `token_ids` of rank 2, at least one sequence, a
    length in `[1, max_sequence_length]`, and every other input of the same
    shape."""
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
    check_batch_not_empty(owner, "token_ids", token_shape)
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


class CheckedTextSteps(CheckedSteps):
    """`CheckedSteps` for the gMLP text models: each batch's token ids,
    segment ids and padding mask are checked against the backbone (shapes
    always, id ranges on host values) before the compiled step. A direct
    call checks the ids given as numpy arrays or lists, as Keras checks a
    layer's inputs in `__call__`, before they become tensors."""

    def check_batch_inputs(self, x):
        backbone = getattr(self, "backbone", self)
        owner = self.__class__.__name__
        check_input_shapes(x, backbone.max_sequence_length, owner)
        check_input_values(x, backbone.vocabulary_size, backbone.num_segments, owner)

    def __call__(self, *args, **kwargs):
        inputs = args[0] if args else kwargs.get("inputs")
        if isinstance(inputs, dict):
            # Tensors are left alone: reading a device tensor's values would
            # copy it back and synchronise the device.
            arrays = {
                name: value
                for name, value in inputs.items()
                if isinstance(value, (np.ndarray, np.generic, list, tuple))
            }
            backbone = getattr(self, "backbone", self)
            check_input_values(
                arrays,
                backbone.vocabulary_size,
                backbone.num_segments,
                self.__class__.__name__,
            )
        return super().__call__(*args, **kwargs)
