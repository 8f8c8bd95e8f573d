"""Keeps a model usable when a JAX training or inference step raises.

Keras' JAX trainer detaches every variable's value at the start of `fit`,
`evaluate` and `predict` (the jitted step takes the weights as arguments,
and the detached copies would double the memory) and attaches the values
again when the loop ends. When the step raises instead, for example when a
layer refuses an input that is too long while the step is being traced,
the values are never attached again and every later call fails with
"'NoneType' object is not callable". The methods below put them back.
"""

import keras


def _call_restoring_variables(model, method, args, kwargs):
    model.check_step_inputs(args[0] if args else kwargs.get("x"))
    if keras.config.backend() != "jax":
        return method(*args, **kwargs)
    # References, not copies: JAX arrays are immutable. A step that ran may
    # have donated these buffers, but then its results are in the trainer's
    # state and `jax_state_sync` restores from there.
    saved = [(v, v.value) for v in _all_variables(model)]
    try:
        return method(*args, **kwargs)
    except BaseException:
        model.jax_state_sync()
        for variable, value in saved:
            # `_value is None` is how the trainer marks a detached value.
            if getattr(variable, "_value", True) is None:
                variable.assign(value)
        raise


def _all_variables(model):
    variables = list(model.variables)
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None:
        variables += list(optimizer.variables)
    variables += list(model.metrics_variables)
    unique = {id(v): v for v in variables}
    return list(unique.values())


class VariableGuard:
    """Mixin for `keras.Model` subclasses: on the JAX backend, a `fit`,
    `evaluate`, `predict` or `*_on_batch` call that raises leaves the
    model's (and its optimizer's and metrics') variables as they were after
    the last completed step, instead of detached.

    Put it first among the bases: `class MyModel(VariableGuard, keras.Model)`.

    Before those methods start, `check_step_inputs(x)` may refuse `x` by its
    shapes: inside a compiled step a length can be unknown (TensorFlow
    retraces with relaxed shapes), and a backend error would then replace
    the `ValueError` the model raises on a direct call.
    """

    def check_step_inputs(self, x):
        """Raises `ValueError` if the model cannot take `x`; a no-op here."""

    def fit(self, *args, **kwargs):
        return _call_restoring_variables(self, super().fit, args, kwargs)

    def evaluate(self, *args, **kwargs):
        return _call_restoring_variables(self, super().evaluate, args, kwargs)

    def predict(self, *args, **kwargs):
        return _call_restoring_variables(self, super().predict, args, kwargs)

    def train_on_batch(self, *args, **kwargs):
        return _call_restoring_variables(
            self, super().train_on_batch, args, kwargs
        )

    def test_on_batch(self, *args, **kwargs):
        return _call_restoring_variables(
            self, super().test_on_batch, args, kwargs
        )

    def predict_on_batch(self, *args, **kwargs):
        return _call_restoring_variables(
            self, super().predict_on_batch, args, kwargs
        )
