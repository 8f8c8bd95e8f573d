"""The one home of private Keras and keras-hub names in keras-gmlp, and of
the check that keras-hub, an optional dependency, is installed.

Everything else in the library uses public APIs only; tests/test_compat.py
fails on a private upstream name anywhere but here, and checks each hook
below, naming it, so an upstream release that changes one is caught at
once. Each hook says why no public API does the job.
"""

import contextlib


@contextlib.contextmanager
def requires_hub_extra(feature):
    """Raises one line naming the `hub` extra if the imports inside the
    block find no keras-hub.

    keras-hub, which brings TensorFlow, is the `hub` extra: a plain install
    gives the layers and image builders only. Without this, the error would
    be `No module named 'keras_hub'` from deep in the library, which does
    not say what to install. A `ModuleNotFoundError` of `keras_hub` raised
    by an inner block (`import keras_gmlp.models`) is renamed for `feature`.

    Args:
        feature: the public name that needs keras-hub, e.g.
            `"keras_gmlp.models"`.
    """
    try:
        yield
    except ModuleNotFoundError as error:
        # A module of an installed keras-hub that is missing is another error.
        if (error.name or "").split(".")[0] != "keras_hub" or _has_keras_hub():
            raise
        # The cause would only repeat "No module named 'keras_hub'".
        raise ModuleNotFoundError(
            f'{feature} needs keras-hub: pip install "keras-gmlp[hub]"',
            name="keras_hub",
        ) from None


def _has_keras_hub():
    try:
        import keras_hub  # noqa: F401
    except ModuleNotFoundError as error:
        return error.name != "keras_hub"
    return True


class BackboneLengthFromPreset:
    """Mixin for the gMLP preprocessors loaded with `from_preset`.

    A preset saved by another task (e.g. a classifier made from a pretrained
    masked LM) holds no preprocessor of this class; keras-hub then builds
    one from the tokenizer alone and packs to its default of 512 tokens,
    which may exceed the backbone. Pack to the saved backbone's
    `max_sequence_length` instead.

    Hook: `keras_hub.models.Preprocessor._add_missing_kwargs(loader,
    kwargs)`, the classmethod keras-hub's preset loader calls to fill in
    the constructor arguments of a preprocessor the preset did not save.
    Why private: a task's `from_preset` builds its preprocessor through the
    preset loader without calling the preprocessor's own `from_preset`, and
    the loader takes no constructor arguments for it, so this classmethod
    is the only place that sees both the preset's backbone config and the
    preprocessor's arguments.
    """

    @classmethod
    def _add_missing_kwargs(cls, loader, kwargs):
        kwargs = super()._add_missing_kwargs(loader, kwargs)
        kwargs.setdefault(
            "sequence_length", loader.config["config"]["max_sequence_length"]
        )
        return kwargs


def add_special_token(tokenizer, token, name):
    """Declares `token` a special token of a keras-hub `tokenizer`: sets the
    attributes `name` and `f"{name}_id"`, and lists it in
    `special_tokens` and `special_token_ids`.

    Hook: `keras_hub.tokenizers.Tokenizer._add_special_token(token, name)`.
    Why private: keras-hub's own model tokenizers declare their special
    tokens through it, and it is the only way to have the ids refreshed
    when the vocabulary is set later (`set_vocabulary`, `from_preset`) and
    the tokens reported by the public `special_tokens`; keras-hub has no
    public way to register one.
    """
    tokenizer._add_special_token(token, name)


def tensor_version(tensor):
    """How many times a PyTorch tensor (or a view of it) has been written
    in place: it changes whenever `keras.Variable.assign` writes the
    variable's value on the PyTorch backend.

    Hook: `torch.Tensor._version`.
    Why private: the raw-PyTorch decoding step keeps tensors made from the
    weights (int8 kernels as float32, transposed kernels) across `generate`
    calls and must know when a weight was assigned since; PyTorch's own
    autograd checks saved tensors with this counter, and neither PyTorch
    nor Keras offers a public one (Keras assigns in place, so the tensor
    object stays the same).
    """
    return tensor._version


def int8_matmul(x, kernel):
    """`x @ kernel` of two int8 PyTorch tensors, `(rows, inputs)` and
    `(inputs, outputs)`, as int32 sums: what Keras' int8 layers compute.

    Hook: `torch._int_mm`.
    Why private: `torch.matmul` of int8 tensors sums in int8 and
    overflows, and PyTorch has no public int8 x int8 -> int32 product;
    casting both to int32 first is several times slower than the float
    product this replaces. Keras' own PyTorch `ops.matmul` calls the same
    name for int8 inputs on CUDA.
    """
    import torch

    return torch._int_mm(x, kernel)


def loss_tracker(model):
    """The `keras.metrics.Mean` named "loss" that a compiled model's steps
    update with each batch's loss (the `loss` of `fit`'s logs).

    Hook: `keras.Model._loss_tracker` (Keras 3's `Trainer`).
    Why private: the library's compiled PyTorch steps
    (`keras_gmlp.utils._torch_compiled_steps`) replace Keras' `train_step`
    and `test_step`, which update this metric themselves; `compute_metrics`,
    the public part they reuse, updates the compiled metrics only, and
    `model.metrics` lists the tracker without naming it.
    """
    return model._loss_tracker


def autocast_dtype():
    """The dtype Keras casts float variables to now, inside a layer's
    `__call__` under a mixed dtype policy; None outside one.

    Hook: `keras.src.backend.get_autocast_scope`.
    Why private: `keras_gmlp.layers._ops.call_sublayer` runs a sublayer's
    `call` without Keras' `Layer.__call__` on eager PyTorch, where that
    call costs more than the layer's arithmetic, but only where `__call__`
    would read the variables in the same dtype; Keras has no public way to
    ask which autocast scope is open.
    """
    from keras.src.backend import get_autocast_scope

    scope = get_autocast_scope()
    return None if scope is None else scope.dtype


def rematerializes(layer):
    """Whether `layer` was made inside a `keras.RematScope`, so that its
    `__call__` may recompute its outputs in the backward pass.

    Hook: `keras.Layer._remat_mode` (set from the scope when the layer is
    made).
    Why private: `keras_gmlp.layers._ops.call_sublayer` must leave such a
    layer to its `__call__`, which applies the scope's mode; Keras has no
    public way to ask a layer for it.
    """
    return bool(layer._remat_mode)
