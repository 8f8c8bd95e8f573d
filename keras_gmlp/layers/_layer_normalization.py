"""Keras' LayerNormalization with a graph XLA differentiates more cheaply."""

import keras
from keras import ops

from keras_gmlp.layers._ops import xla_on_cpu


@keras.saving.register_keras_serializable(package="keras_gmlp")
class LastAxisLayerNormalization(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` over the last axis, same weights.

    On JAX, Keras' generic formula folds `gamma` into the inverse standard
    deviation, which materialises an input-sized tensor that the backward
    pass then reads again; XLA's CPU backend spends measurable time on it in
    every block. This computes `(x - mean) * rsqrt(var + epsilon) * gamma +
    beta` instead (equal up to float rounding), on CPUs, where it was
    measured. Other backends keep Keras' implementation: TensorFlow's XLA
    gained nothing from the change and PyTorch calls its fused kernel.
    """

    def __init__(self, **kwargs):
        # Keras stores the axis as a list, so a config round trip gives [-1].
        if kwargs.get("axis", -1) not in (-1, [-1], (-1,)):
            raise ValueError(
                "LastAxisLayerNormalization normalises the last axis only. "
                f"Received: axis={kwargs['axis']}"
            )
        super().__init__(**kwargs)

    def call(self, inputs):
        if keras.backend.backend() != "jax" or not xla_on_cpu() or self.rms_scaling:
            return super().call(inputs)
        # At least float32, as Keras does, so half-precision training is stable.
        compute_dtype = keras.backend.result_type(inputs.dtype, "float32")
        x = ops.cast(inputs, compute_dtype)
        mean = ops.mean(x, axis=-1, keepdims=True)
        centered = x - mean
        variance = ops.mean(ops.square(centered), axis=-1, keepdims=True)
        outputs = centered * ops.rsqrt(variance + self.epsilon)
        if self.scale:
            outputs = outputs * ops.cast(self.gamma, compute_dtype)
        if self.center:
            outputs = outputs + ops.cast(self.beta, compute_dtype)
        return ops.cast(outputs, self.compute_dtype)
