import keras
from keras import ops

from keras_gmlp.layers._kernels import spatial_projection
from keras_gmlp.layers._layer_normalization import LastAxisLayerNormalization
from keras_gmlp.layers._ops import call_sublayer
from keras_gmlp.layers._validation import check_length
from keras_gmlp.layers._validation import check_padding_mask
from keras_gmlp.layers._validation import check_positive_int
from keras_gmlp.layers._validation import check_rank

# The forms of the gate the paper compares (Table 3): what the unit
# multiplies or adds to the spatial projection `f(Z) = W Z + b`.
GATINGS = ("split", "multiplicative", "additive", "linear")


def check_gating(gating):
    if gating not in GATINGS:
        raise ValueError(
            f"Argument `gating` must be one of {', '.join(map(repr, GATINGS))}. "
            f"Received: gating={gating!r}"
        )


def gated_channels(gating, channels):
    """The channels a unit of this `gating` outputs (and projects) for
    `channels` input channels: the split form gates half of them."""
    return channels // 2 if gating == "split" else channels


@keras.saving.register_keras_serializable(package="keras_gmlp")
class _HeadwiseIdentity(keras.initializers.Initializer):
    """An identity matrix per head, for kernels of shape `(heads, n, n)`
    (Keras' `Identity` takes 2-D shapes only)."""

    def __call__(self, shape, dtype=None):
        eye = ops.eye(shape[-1], dtype=dtype or "float32")
        # A copy per head (a broadcast view cannot be assigned on torch).
        return ops.tile(eye[None], (shape[0], 1, 1))


@keras.saving.register_keras_serializable(package="keras_gmlp")
class SpatialGatingUnit(keras.layers.Layer):
    """The spatial gating unit (SGU) of gMLP.

    The channels are split in two halves. The first half `u` is the gate's
    multiplicand; the second half `v` is layer-normalised and projected
    along the token axis, `v'[m] = sum_n W[m, n] v[n] + b[m]`, and the
    output is `u * v'`. `W` starts near zero and `b` at one, so a fresh unit
    passes `u` through unchanged (the block starts as a plain FFN).

    `gating` chooses among the paper's ablations (its Table 3), with
    `f(Z) = W norm(Z) + b` over the tokens:

    - `"split"` (the paper's final design, the default): `Z1 * f(Z2)` for
      the two halves `Z1, Z2` of the channels; outputs half the channels.
    - `"multiplicative"`: `Z * f(Z)`, all channels.
    - `"additive"`: `Z + f(Z)`, all channels.
    - `"linear"`: `f(Z)`, all channels.

    Each starts close to passing `Z` (or `Z1`) through: by default `b`
    starts at zero for the additive form, and the linear form's `W` at the
    identity (at zero it would start by discarding its input).

    A unit built for `sequence_length=n` accepts any length `m <= n` and then
    uses `W[:m, :m]` and `b[:m]`. Tokens where `padding_mask` is false
    contribute nothing to the projection, so the outputs of real tokens do
    not depend on how much padding follows them. With `causal=True` the
    projection is lower-triangular: token `i` never sees tokens after `i`.

    The leading block `W[:m, :m]` suits sequences, where token `i` is the
    same position at every length. Flattened image grids are different: a
    smaller grid changes which token sits next to which, so image models
    are built for one grid and their weights resampled to another
    (`keras_gmlp.applications.load_timm_weights`).

    Args:
        sequence_length: int, the maximum number of tokens `n`.
        gating: str, one of `"split"`, `"multiplicative"`, `"additive"` or
            `"linear"` (above).
        causal: bool, whether to mask the projection to be lower-triangular.
        num_heads: int, number of channel groups, each with its own `W` and
            `b` (the multi-head SGU). Must divide the gated channel count
            (half the channels for `"split"`, all of them otherwise).
        epsilon: float, epsilon of the layer normalisation of `v`.
        kernel_initializer: initializer of `W`. Defaults to a normal
            distribution with standard deviation 1e-6 (the identity for
            `"linear"`).
        bias_initializer: initializer of `b`. Defaults to ones (zeros for
            `"additive"` and `"linear"`).
        kernel_regularizer: optional regularizer of `W`.
        bias_regularizer: optional regularizer of `b`.
        **kwargs: standard layer arguments such as `name` and `dtype`.

    Call arguments:
        inputs: tensor of shape `(batch, length, channels)`, `channels` even
            for `"split"`.
        padding_mask: optional boolean tensor `(batch, length)`, true for
            real tokens.
        attention_output: optional tensor `(batch, length, gated)` added to
            the projected gate before it gates (aMLP); `gated` is
            `channels // 2` for `"split"` and `channels` otherwise.
        cache: optional tensor `(batch, cache_length, gated)` for
            incremental decoding (causal units only): the normalised gates of
            the tokens seen so far. The inputs are the tokens at positions
            `cache_update_index ...`; their gates are written into the cache
            and each one is projected from the cache, so a new token costs
            `O(cache_length * channels)` instead of recomputing the prefix.
        cache_update_index: int or scalar tensor, position of the first
            input token; required with `cache`.

    Returns:
        A tensor of shape `(batch, length, gated)`, or with `cache`
        the tuple `(outputs, updated_cache)`.

    Examples:

    ```python
    sgu = keras_gmlp.layers.SpatialGatingUnit(sequence_length=128)
    x = keras.random.normal((2, 100, 512))
    mask = keras.ops.arange(100)[None, :] < keras.ops.array([[100], [60]])
    y = sgu(x, padding_mask=mask)  # shape (2, 100, 256)
    ```
    """

    def __init__(
        self,
        sequence_length,
        gating="split",
        causal=False,
        num_heads=1,
        epsilon=1e-5,
        kernel_initializer=None,
        bias_initializer=None,
        kernel_regularizer=None,
        bias_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("sequence_length", sequence_length)
        check_positive_int("num_heads", num_heads)
        check_gating(gating)
        if epsilon <= 0:
            raise ValueError(
                f"Argument `epsilon` must be positive. Received: epsilon={epsilon}"
            )
        self.sequence_length = sequence_length
        self.gating = gating
        self.causal = bool(causal)
        self.num_heads = num_heads
        self.epsilon = epsilon
        if kernel_initializer is None and gating == "linear":
            kernel_initializer = _HeadwiseIdentity()
        elif kernel_initializer is None:
            kernel_initializer = keras.initializers.RandomNormal(stddev=1e-6)
        if bias_initializer is None:
            bias_initializer = "zeros" if gating in ("additive", "linear") else "ones"
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.norm = LastAxisLayerNormalization(
            epsilon=epsilon, dtype=self.dtype_policy, name="norm"
        )

    def build(self, inputs_shape, padding_mask_shape=None, attention_output_shape=None):
        check_rank(self.__class__.__name__, "inputs", inputs_shape, 3)
        channels = inputs_shape[-1]
        if channels is None or (self.gating == "split" and channels % 2):
            raise ValueError(
                "SpatialGatingUnit splits the channels in two halves, so the "
                "last axis of `inputs` must be even. Received: "
                f"inputs.shape={tuple(inputs_shape)}"
            )
        gate_dim = self.gated_channels(channels)
        if gate_dim % self.num_heads:
            raise ValueError(
                f"Argument `num_heads` must divide the gated channel count "
                f"({gate_dim}). Received: num_heads={self.num_heads}"
            )
        check_length(self.__class__.__name__, inputs_shape[1], self.sequence_length)
        self.norm.build(tuple(inputs_shape[:-1]) + (gate_dim,))
        n = self.sequence_length
        self.kernel = self.add_weight(
            name="kernel",
            shape=(self.num_heads, n, n),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
        )
        self.bias = self.add_weight(
            name="bias",
            shape=(self.num_heads, n),
            initializer=self.bias_initializer,
            regularizer=self.bias_regularizer,
        )

    def call(
        self,
        inputs,
        padding_mask=None,
        attention_output=None,
        cache=None,
        cache_update_index=None,
    ):
        name = self.__class__.__name__
        check_rank(name, "inputs", inputs.shape, 3)
        if self.gated_channels(inputs.shape[-1]) != self.norm.gamma.shape[-1]:
            raise ValueError(
                f"{name} was built for inputs with {self._built_channels()} "
                f"channels. Received: inputs.shape={tuple(inputs.shape)}"
            )
        check_length(name, inputs.shape[1], self.sequence_length)
        check_padding_mask(name, inputs.shape, padding_mask)
        if self.gating == "split":
            u, v = ops.split(inputs, 2, axis=-1)
        else:
            u = v = inputs
        v = ops.cast(call_sublayer(self.norm, v), u.dtype)
        if padding_mask is not None:
            # Zeroed after the norm, so a padded token adds nothing to W @ v.
            # Selected, not multiplied: 0 * NaN is NaN, and a padded position
            # may hold anything.
            real = ops.cast(padding_mask, "bool")[:, :, None]
            v = ops.where(real, v, ops.zeros_like(v))
        length = inputs.shape[1]
        if cache is None:
            check_length(self.__class__.__name__, length, self.sequence_length)
            if length is None:
                length = ops.shape(inputs)[1]
            start, context = 0, v
        else:
            self._check_cache(cache, cache_update_index, length)
            start = cache_update_index
            context = ops.slice_update(cache, (0, start, 0), ops.cast(v, cache.dtype))
        projected = self._project(start, length, ops.cast(context, v.dtype))
        if attention_output is not None:
            projected = projected + ops.cast(attention_output, v.dtype)
        outputs = self._gate(u, projected)
        return outputs if cache is None else (outputs, context)

    def gated_channels(self, channels):
        """The channels the unit outputs (and projects) for `channels`
        input channels."""
        return gated_channels(self.gating, channels)

    def _built_channels(self):
        gated = self.norm.gamma.shape[-1]
        return 2 * gated if self.gating == "split" else gated

    def _gate(self, z, projected):
        if self.gating == "additive":
            return z + projected
        if self.gating == "linear":
            return projected
        return z * projected

    def _check_cache(self, cache, cache_update_index, length):
        if not self.causal:
            raise ValueError(
                "A `cache` is only meaningful for causal models: a "
                "bidirectional SpatialGatingUnit needs every token at once. "
                "Received: cache with causal=False"
            )
        if cache_update_index is None:
            raise ValueError(
                "`cache_update_index` (the position of the first input token) "
                "is required with `cache`. Received: cache_update_index=None"
            )
        check_length(self.__class__.__name__, cache.shape[1], self.sequence_length)
        if isinstance(cache_update_index, int) and length is not None:
            check_length(
                f"{self.__class__.__name__}'s cache",
                cache_update_index + length,
                cache.shape[1],
            )

    def _project(self, start, rows, context):
        """`W[start:start + rows, :L] @ context + b[start:start + rows]`.

        `context` holds the normalised gates of the first `L` tokens (all of
        the input, or the decoding cache); the causal mask hides each row's
        future, including cache slots not written yet.
        """
        # One `ops.shape` call (see `dense_on_last_axis`).
        batch, columns = ops.shape(context)[:2]
        kernel, bias = self._weights_for(start, rows, columns)
        kernel = ops.cast(kernel, context.dtype)
        bias = ops.cast(bias, context.dtype)
        if self.causal:
            # `arange(0, n)`: jax2onnx's `arange` cannot take the `stop=None`
            # that Keras passes on for `arange(n)`.
            positions = start + ops.arange(0, rows)
            visible = ops.arange(0, columns)[None, :] <= positions[:, None]
            kernel = kernel * ops.cast(visible, kernel.dtype)[None]
        return spatial_projection(kernel, bias, context, batch, rows, columns)

    def _weights_for(self, start, rows, columns):
        """`W[:, start:start + rows, :columns]` and `b[:, start:start + rows]`.

        Sliced with Python ints where the sizes are known: PyTorch's
        `ops.slice` with tensor bounds reads them back from the tensors,
        which costs time in eager mode and breaks a compiled graph on
        Keras before 3.15. At the full length no slice is needed at all.
        """
        kernel, bias = self.kernel, self.bias
        if all(isinstance(size, int) for size in (start, rows, columns)):
            if start == 0 and rows == columns == self.sequence_length:
                return kernel.value, bias.value
            return (
                kernel.value[:, start : start + rows, :columns],
                bias.value[:, start : start + rows],
            )
        kernel = ops.slice(
            ops.convert_to_tensor(kernel),
            (0, start, 0),
            (self.num_heads, rows, columns),
        )
        bias = ops.slice(
            ops.convert_to_tensor(bias), (0, start), (self.num_heads, rows)
        )
        return kernel, bias

    def compute_output_shape(
        self, inputs_shape, padding_mask_shape=None, attention_output_shape=None
    ):
        return tuple(inputs_shape[:-1]) + (self.gated_channels(inputs_shape[-1]),)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sequence_length": self.sequence_length,
                "gating": self.gating,
                "causal": self.causal,
                "num_heads": self.num_heads,
                "epsilon": self.epsilon,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "kernel_regularizer": keras.regularizers.serialize(
                    self.kernel_regularizer
                ),
                "bias_regularizer": keras.regularizers.serialize(self.bias_regularizer),
            }
        )
        return config
