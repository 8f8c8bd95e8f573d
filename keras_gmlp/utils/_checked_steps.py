"""Input checks on every batch of `fit`, `evaluate` and `predict`.

A model's `call` checks its inputs' shapes, but inside a compiled step it
cannot always see them: after a first batch, TensorFlow retraces the step
with relaxed shapes (unknown lengths), so a batch that is too long reaches
the graph and fails there with a backend error. And `call` never reads
token ids (on a GPU that would synchronise the device every step). So the
step functions Keras makes are wrapped: each batch is checked while it is
still in host memory, by its shapes and, for ids, by its values, before
the compiled step runs. `make_train_function`, `make_test_function` and
`make_predict_function` are the `keras.Model` methods meant for wrapping
steps. Keras calls them when each `fit`, `evaluate` and `predict` starts,
so the wrapper also knows a loop's first step: where Keras calls it before
taking a batch (all loops on JAX, `fit` and `evaluate` on TensorFlow), an
input with no samples is refused there with a ValueError.

On JAX the wrapper also keeps the model usable after a refused batch.
Keras' JAX trainer detaches the variables' values when `fit`, `evaluate`
or `predict` starts (the step takes them as arguments) and reattaches them
when the loop ends, but not when a step raises, e.g. while it is traced:

    class Model(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(2)

        def call(self, x):
            if x.shape[-1] != 4:
                raise ValueError("x must have 4 features")
            return self.dense(x)

    model = Model()
    model.predict(np.ones((1, 4)))
    model.predict(np.ones((1, 5)))  # ValueError, as it should
    model.predict(np.ones((1, 4)))  # TypeError: 'NoneType' object is not
                                    # callable (Keras 3.15, JAX backend)

The same happens when `predict` gets no data at all: JAX's loop detaches
the values, calls the step, which finds no batch, and ends without
reattaching them (Keras 3.15, JAX backend):

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.predict(np.ones((0, 4)))  # UnboundLocalError: 'batch_outputs'
    model.predict(np.ones((1, 4)))  # TypeError: 'NoneType' object is not
                                    # callable

The step receives those values as its `state`, so when the checks or the
step refuse a batch, or find none, the wrapper assigns them back before
raising.
"""

import itertools
import weakref

import keras

from keras_gmlp.utils._keras_version import keras_version

# The step functions `_checked` made, so a step Keras keeps is not wrapped twice.
_CHECKED_STEPS = weakref.WeakSet()

# The checked steps whose next call is the first of a `fit`, `evaluate` or
# `predict`: Keras makes (or fetches) the step when each of them starts.
_FIRST_CALL_PENDING = weakref.WeakSet()

# The public method that runs each kind of step, for messages.
_LOOPS = {"train": "fit", "test": "evaluate", "predict": "predict"}

# The variables behind each part of the JAX trainer's `state`, in order:
# `train_step`, `test_step` and `predict_step` unpack their state so.
_JAX_STATE_PARTS = {
    "train": ("trainable", "non_trainable", "optimizer", "metrics"),
    "test": ("trainable", "non_trainable", "metrics"),
    "predict": ("trainable", "non_trainable"),
}


def _state_variables(model, part):
    if part == "trainable":
        return model.trainable_variables
    if part == "non_trainable":
        return model.non_trainable_variables
    if part == "optimizer":
        return model.optimizer.variables
    return model.metrics_variables


def _compiled_torch_by_default(compile_kwargs):
    """Whether `compile(jit_compile="auto")` takes the compiled steps: on
    PyTorch with CUDA, one step per execution, and Keras 3.15 or later
    (before it the spatial gating unit's `ops.slice` cannot be recorded)."""
    if keras.config.backend() != "torch":
        return False
    if compile_kwargs.get("steps_per_execution", 1) != 1:
        return False
    if keras_version() < (3, 15):
        return False
    import torch

    return torch.cuda.is_available()


def _reattach_jax_state(model, kind, state):
    """Assigns the values of a JAX step's `state` back to the variables
    they came from. Buffers a step already consumed (donated) are skipped:
    they are gone, and their successors are in the trainer's state."""
    for part, values in zip(_JAX_STATE_PARTS[kind], state):
        for variable, value in zip(_state_variables(model, part), values):
            if not getattr(value, "is_deleted", lambda: False)():
                variable.assign(value)


class CheckedSteps:
    """Mixin for `keras.Model` subclasses: `check_batch_inputs(x)` runs on
    the inputs of every batch of `fit`, `evaluate`, `predict` and the
    `*_on_batch` methods, before the compiled step, on every backend.

    Put it first among the bases: `class MyModel(CheckedSteps, keras.Model)`.
    """

    def check_batch_inputs(self, x):
        """Raises `ValueError` if the model cannot take the batch inputs
        `x` (arrays still in host memory); a no-op here."""

    def compile(self, *args, jit_compile="auto", **kwargs):
        # Keras' "auto" runs PyTorch eagerly. On a CUDA device the library's
        # compiled step is the fastest correct path (one H200: gMLP-S/16
        # training 3.3x eager, benchmarks/docs/accelerator.md), so "auto"
        # takes it there; on CPUs eager stays, since compiling takes minutes
        # there and short runs would not win them back.
        if jit_compile == "auto" and _compiled_torch_by_default(kwargs):
            jit_compile = True
        super().compile(*args, jit_compile=jit_compile, **kwargs)

    @property
    def uses_compiled_torch_steps(self):
        """Whether `fit`, `evaluate` and `predict` run the library's
        compiled steps (PyTorch with `jit_compile` True, or "auto" on a CUDA
        device); they still run eagerly, with a warning, where a model
        cannot be recorded."""
        return keras.config.backend() == "torch" and bool(self.jit_compile)

    def make_train_function(self, force=False):
        if not self._make_torch_compiled_step("train", force):
            super().make_train_function(force=force)
        self.train_function = self._checked(self.train_function, "train")
        return self.train_function

    def make_test_function(self, force=False):
        if not self._make_torch_compiled_step("test", force):
            super().make_test_function(force=force)
        self.test_function = self._checked(self.test_function, "test")
        return self.test_function

    def make_predict_function(self, force=False):
        if not self._make_torch_compiled_step("predict", force):
            super().make_predict_function(force=force)
        self.predict_function = self._checked(self.predict_function, "predict")
        return self.predict_function

    def _make_torch_compiled_step(self, kind, force):
        """On PyTorch with `jit_compile=True`, sets the library's compiled
        step of `kind` (see `keras_gmlp.utils._torch_compiled_steps`) in
        place of Keras' `torch.compile` of its whole step; False elsewhere."""
        if keras.config.backend() != "torch" or not self.jit_compile:
            return False
        attribute = f"{kind}_function"
        if getattr(self, attribute) is not None and not force:
            return True
        if self.steps_per_execution > 1:
            raise ValueError(
                "`steps_per_execution` must be 1 with the PyTorch backend. "
                f"Received: steps_per_execution={self.steps_per_execution}"
            )
        from keras_gmlp.utils._torch_compiled_steps import TorchCompiledSteps

        # `compile()` resets the step functions, so its recordings go too.
        setattr(self, attribute, getattr(TorchCompiledSteps(self), kind))
        return True

    def _checked(self, step, kind):
        if step in _CHECKED_STEPS:
            _FIRST_CALL_PENDING.add(step)
            return step  # made before and kept by Keras (`force=False`)
        if keras.config.backend() == "jax":

            def checked_step(state, iterator):
                try:
                    batches = self._take_checked_batches(iterator, kind, checked_step)
                    return step(state, iter(batches))
                except BaseException:
                    _reattach_jax_state(self, kind, state)
                    raise

        else:

            def checked_step(data):
                # TensorFlow's and torch's steps also take a list of batches.
                return step(self._take_checked_batches(data, kind, checked_step))

        _CHECKED_STEPS.add(checked_step)
        _FIRST_CALL_PENDING.add(checked_step)
        return checked_step

    def _take_checked_batches(self, iterator, kind, checked_step):
        """The batches of one step execution, each checked."""
        first_call = checked_step in _FIRST_CALL_PENDING
        _FIRST_CALL_PENDING.discard(checked_step)
        batches = list(itertools.islice(iterator, self.steps_per_execution))
        if not batches and first_call:
            # Keras would end the loop as if the data had run out and, in
            # `predict`, fail with an UnboundLocalError. JAX's loops, and
            # TensorFlow's `fit` and `evaluate`, call the step before they
            # take a batch, so empty data is seen here.
            raise ValueError(
                f"{_LOOPS[kind]}() of the model {self.name!r} needs at least "
                "one sample; the input is empty. Received: 0 batches"
            )
        if not batches:
            raise StopIteration
        for batch in batches:
            x, _, _ = keras.utils.unpack_x_y_sample_weight(batch)
            self.check_batch_inputs(x)
        return batches
