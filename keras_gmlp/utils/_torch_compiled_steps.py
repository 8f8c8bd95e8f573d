"""The library's own compiled steps on PyTorch (`compile(jit_compile=True)`);
imported only on that backend.

Keras' PyTorch trainer wraps its whole `train_step` in `torch.compile`, and
dynamo then traces Keras' Python: `Layer.__call__` writes attributes on
every call (through `TorchLayer._setattr_hook`, so dynamo keeps a cache
entry per layer instance until its recompile limit, keras#21851), checks
numpy dtypes (`train_on_batch` passes host arrays into the step),
binds signatures with `inspect`, and `loss.backward()` ends the graph. A
gMLP-Ti at 32x32 ran as 11 graphs with 25 graph breaks (torch 2.13,
Keras 3.15).

Here the model's Python runs once, outside dynamo: `make_fx` records the
torch operators of Keras' public stateless API (`stateless_call`,
`stateless_compute_loss`, `optimizer.stateless_apply`) on fake tensors, and
`torch.compile(..., fullgraph=True)` compiles the recorded graph. A training
step is then two graphs, forward with loss (whose backward AOTAutograd
compiles) and the optimizer update, with no break and no recompile for
batches of one shape. The metrics update eagerly, as Keras' do.

What the recording fixes is what Python decided then: the layers' branches,
dropout rates, the kernels' forms, the variable lists. A recording is kept
per step kind and input signature (shapes and dtypes), and `compile()`
starts afresh. A model whose Python reads tensor values (e.g. the dynamic
loss scale of `mixed_float16`) cannot be recorded: its steps run eagerly,
with a warning that says why. So do gMLP models on Keras before 3.15, whose
PyTorch `ops.slice` (in the spatial gating unit's projection) guards on its
indices' values.
"""

import warnings

import keras
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from keras_gmlp import _compat

# Input signatures recorded per step kind; past this, the oldest is dropped
# (e.g. many last partial batches of differently sized datasets).
MAX_RECORDINGS = 8

# `torch.compile`'s backend for the recorded graphs. Tests take "aot_eager",
# which splits forward and backward as inductor does but compiles nothing.
COMPILER = "inductor"

# What `_run` returns for a model it cannot record.
REFUSED = object()


def _signature(tree):
    return tuple(
        (tuple(x.shape), x.dtype) if isinstance(x, torch.Tensor) else x
        for x in keras.tree.flatten(tree)
    )


def _to_tensors(batch):
    return keras.tree.map_structure(
        lambda x: None if x is None else keras.ops.convert_to_tensor(x), batch
    )


def _values(variables):
    return [variable.value for variable in variables]


class TorchCompiledSteps:
    """`train`, `test` and `predict` step functions of `model` for Keras'
    PyTorch loops (`model.train_function = steps.train`, ...), each taking
    the list of batches Keras passes and returning what Keras' own steps
    return.

    Args:
        model: a compiled `keras.Model` on the PyTorch backend.
    """

    def __init__(self, model):
        self.model = model
        self._recordings = {}
        self._refused = None

    # ---- recording ----------------------------------------------------

    def _compiled(self, kind, function, arguments):
        key = (kind, _signature(arguments))
        compiled = self._recordings.get(key)
        if compiled is None:
            # Through a plain function: make_fx counts a bound method's
            # parameters with `self`.
            graph = make_fx(lambda *args: function(*args), tracing_mode="fake")(
                *arguments
            )
            compiled = torch.compile(
                graph, backend=COMPILER, fullgraph=True, dynamic=False
            )
            if len(self._recordings) >= MAX_RECORDINGS:
                self._recordings.pop(next(iter(self._recordings)))
            self._recordings[key] = compiled
        return compiled

    def _run(self, kind, function, arguments):
        """`function(*arguments)` compiled, or `REFUSED` where the model's
        Python cannot be recorded (then the caller runs Keras' eager step;
        once refused, always)."""
        if self._refused is not None:
            return REFUSED
        try:
            compiled = self._compiled(kind, function, arguments)
        except Exception as error:  # Reported, then eager.
            self._refused = f"{type(error).__name__}: {error}"[:300]
            warnings.warn(
                f"{self.model.name}: the compiled PyTorch step cannot record "
                f"this model, so its steps run eagerly. Reason: {self._refused}",
                stacklevel=4,
            )
            return REFUSED
        return compiled(*arguments)

    # ---- the functions recorded ----------------------------------------

    def _forward_and_loss(self, trainable, non_trainable, metrics, x, y, weight):
        model = self.model
        y_pred, non_trainable = model.stateless_call(
            trainable, non_trainable, x, training=True
        )
        loss, (_, non_trainable, _) = model.stateless_compute_loss(
            trainable, non_trainable, metrics, x, y, y_pred, weight, training=True
        )
        scaled = model.optimizer.scale_loss(loss)
        return loss, scaled, y_pred, non_trainable

    def _apply_update(self, optimizer_values, gradients, trainable):
        """The optimizer's update, written into the variables' tensors."""
        new_trainable, new_optimizer = self.model.optimizer.stateless_apply(
            optimizer_values, gradients, trainable
        )
        for old, new in zip(
            trainable + optimizer_values, new_trainable + new_optimizer
        ):
            old.copy_(new)

    def _forward(self, trainable, non_trainable, x):
        return self.model.stateless_call(trainable, non_trainable, x)[0]

    def _evaluate(self, trainable, non_trainable, metrics, x, y, weight):
        model = self.model
        y_pred, non_trainable = model.stateless_call(
            trainable, non_trainable, x, training=False
        )
        loss, _ = model.stateless_compute_loss(
            trainable, non_trainable, metrics, x, y, y_pred, weight, training=False
        )
        return loss, y_pred

    # ---- the steps Keras' loops call -------------------------------------

    def train(self, batches):
        logs = None
        for batch in batches:
            logs = self._train_batch(*keras.utils.unpack_x_y_sample_weight(batch))
        return logs

    def _train_batch(self, x, y, weight):
        model = self.model
        x, y, weight = _to_tensors((x, y, weight))
        if not model.optimizer.built:
            model.optimizer.build(model.trainable_variables)
        trainable = _values(model.trainable_variables)
        non_trainable = _values(model.non_trainable_variables)
        arguments = (
            trainable,
            non_trainable,
            _values(model.metrics_variables),
            x,
            y,
            weight,
        )
        outputs = self._run("train", self._forward_and_loss, arguments)
        if outputs is REFUSED:
            return model.train_step((x, y, weight))
        loss, scaled, y_pred, new_non_trainable = outputs
        gradients = list(torch.autograd.grad(scaled, trainable))
        update = (_values(model.optimizer.variables), gradients, trainable)
        with torch.no_grad():
            if self._run("apply", self._apply_update, update) is REFUSED:
                model.optimizer.apply(gradients, model.trainable_variables)
        for variable, value in zip(model.non_trainable_variables, new_non_trainable):
            if value is not variable.value:
                variable.assign(value)
        return self._logs(x, y, weight, loss.detach(), y_pred.detach())

    def _logs(self, x, y, weight, loss, y_pred):
        batch_size = next(i for i in keras.tree.flatten(x) if i is not None).shape[0]
        _compat.loss_tracker(self.model).update_state(loss, sample_weight=batch_size)
        return self.model.compute_metrics(x, y, y_pred, sample_weight=weight)

    def test(self, batches):
        logs = None
        for batch in batches:
            x, y, weight = _to_tensors(keras.utils.unpack_x_y_sample_weight(batch))
            model = self.model
            arguments = (
                _values(model.trainable_variables),
                _values(model.non_trainable_variables),
                _values(model.metrics_variables),
                x,
                y,
                weight,
            )
            with torch.no_grad():
                outputs = self._run("test", self._evaluate, arguments)
                if outputs is REFUSED:
                    logs = model.test_step((x, y, weight))
                    continue
                logs = self._logs(x, y, weight, *outputs)
        return logs

    def predict(self, batches):
        (batch,) = batches
        x, _, _ = keras.utils.unpack_x_y_sample_weight(batch)
        x = _to_tensors(x)
        model = self.model
        arguments = (
            _values(model.trainable_variables),
            _values(model.non_trainable_variables),
            x,
        )
        with torch.no_grad():
            outputs = self._run("predict", self._forward, arguments)
            return model.predict_step((x,)) if outputs is REFUSED else outputs
