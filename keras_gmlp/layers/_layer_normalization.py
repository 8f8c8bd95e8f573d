"""Keras' LayerNormalization over the last axis, through the library's kernel."""

import keras

from keras_gmlp.layers._kernels import layer_normalization


@keras.saving.register_keras_serializable(package="keras_gmlp")
class LastAxisLayerNormalization(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` over the last axis, same weights.

    Its `call` goes through `_kernels.layer_normalization`, which keeps
    Keras' formula except where a leaner graph was measured to be faster.
    The blocks' configs do not name this class, so saved files do not
    depend on it.
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
        return layer_normalization(self, inputs)
