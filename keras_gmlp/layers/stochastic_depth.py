import keras
from keras import ops

from keras_gmlp.layers._validation import check_rate


@keras.saving.register_keras_serializable(package="keras_gmlp")
class StochasticDepth(keras.layers.Layer):
    """Drops a residual branch for whole samples during training.

    Each sample of the batch keeps its branch with probability
    `1 - rate`; kept branches are scaled by `1 / (1 - rate)` so the
    expected output is unchanged. At inference the layer is the identity.
    The drop decision is the same for every token of a sample, so the layer
    never mixes information across positions (causal models stay causal).

    Args:
        rate: float in `[0, 1)`, the probability of dropping the branch.
        seed: optional int, seed of the layer's random generator. On
            PyTorch, as for `keras.layers.Dropout`, leave it out for speed:
            an unseeded layer draws with PyTorch's own generator (seeded by
            `keras.utils.set_random_seed`) on the device, where a seeded one
            reads its seed back to the host at every call.
        **kwargs: standard layer arguments such as `name` and `dtype`.

    Examples:

    ```python
    drop_path = keras_gmlp.layers.StochasticDepth(rate=0.1, seed=0)
    branch = keras.random.normal((8, 196, 256))
    outputs = drop_path(branch, training=True)  # some samples are zeroed
    ```
    """

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        check_rate("rate", rate)
        self.rate = float(rate)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.supports_masking = True

    def call(self, inputs, training=None):
        if not training or self.rate == 0.0:
            return inputs
        batch_size = ops.shape(inputs)[0]
        noise_shape = (batch_size,) + (1,) * (len(inputs.shape) - 1)
        # Keras' own dropout of a sample's scale: where the layer has no seed,
        # PyTorch draws it with its own dropout. A seeded draw there makes a
        # `torch.Generator` from the seed read back to the host: a GPU sync
        # per call, and a step that the compiled PyTorch path cannot record.
        scale = keras.random.dropout(
            ops.ones(noise_shape, "float32"), self.rate, seed=self.seed_generator
        )
        return inputs * ops.cast(scale, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({"rate": self.rate, "seed": self.seed})
        return config
