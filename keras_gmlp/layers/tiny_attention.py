import math

import keras
from keras import ops

from keras_gmlp.layers._ops import dense_on_last_axis
from keras_gmlp.layers._quantization import serialized_dtype
from keras_gmlp.layers._validation import check_padding_mask
from keras_gmlp.layers._validation import check_positive_int
from keras_gmlp.layers._validation import check_rank
from keras_gmlp.layers._validation import known

# Large enough to vanish under softmax in float32, small enough that a row
# with every key masked still gives finite (uniform) weights instead of NaN.
_MASKED_SCORE = -1e9


@keras.saving.register_keras_serializable(package="keras_gmlp")
class TinyAttention(keras.layers.Layer):
    """Single-head "tiny" attention of aMLP.

    Queries, keys and values come from one bias-free projection of the
    block's normalised input to `3 * attention_dim`; the attention output
    `softmax(q k^T / sqrt(attention_dim)) v` is projected to `output_dim`
    (half of the block's `intermediate_dim`) and added to the SGU's
    projected gate. Keys where `padding_mask` is false get no weight; with
    `causal=True` a query never attends to later keys. Scores and softmax
    are computed in float32 under mixed precision.

    Args:
        attention_dim: int, size of the query, key and value vectors
            (64 for aMLP-base, 128 for aMLP-large).
        output_dim: int, size of the output projection.
        causal: bool, whether to hide later tokens from each query.
        kernel_initializer: initializer of both projections' kernels.
        bias_initializer: initializer of the output projection's bias.
        **kwargs: standard layer arguments such as `name` and `dtype`.

    Call arguments:
        inputs: tensor of shape `(batch, length, channels)`.
        padding_mask: optional boolean tensor `(batch, key_length)`, true
            for real tokens.
        cache: optional tensor `(batch, 2, cache_length, attention_dim)`,
            the keys and values of the tokens seen so far (causal layers
            only). The inputs' keys and values are written at
            `cache_update_index` and the queries attend over the cache.
        cache_update_index: int or scalar tensor, position of the first
            input token; required with `cache`.

    Returns:
        A tensor of shape `(batch, length, output_dim)`, or with `cache` the
        tuple `(outputs, updated_cache)`.

    Examples:

    ```python
    attention = keras_gmlp.layers.TinyAttention(attention_dim=64, output_dim=768)
    x = keras.random.normal((2, 128, 512))
    y = attention(x)  # shape (2, 128, 768)
    ```
    """

    # LoRA's default targets in aMLP, beside the block's: its two projections.
    CHANNEL_PROJECTIONS = ("qkv", "output")

    def __init__(
        self,
        attention_dim,
        output_dim,
        causal=False,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("attention_dim", attention_dim)
        check_positive_int("output_dim", output_dim)
        self.attention_dim = attention_dim
        self.output_dim = output_dim
        self.causal = bool(causal)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.qkv_dense = keras.layers.Dense(
            3 * attention_dim,
            use_bias=False,
            kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy,
            name="qkv",
        )
        self.output_dense = keras.layers.Dense(
            output_dim,
            kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer,
            dtype=self.dtype_policy,
            name="output",
        )

    def build(self, inputs_shape, padding_mask_shape=None):
        check_rank(self.__class__.__name__, "inputs", inputs_shape, 3)
        self.qkv_dense.build(inputs_shape)
        self.output_dense.build(tuple(inputs_shape[:-1]) + (self.attention_dim,))

    def _check_call_inputs(self, inputs, padding_mask, cache):
        name = self.__class__.__name__
        check_rank(name, "inputs", inputs.shape, 3)
        if inputs.shape[-1] != self.qkv_dense.kernel.shape[0]:
            raise ValueError(
                f"{name} was built for inputs with "
                f"{self.qkv_dense.kernel.shape[0]} channels. Received: "
                f"inputs.shape={tuple(inputs.shape)}"
            )
        if known(inputs.shape[1]) == 0:
            raise ValueError(
                f"{name} needs at least one token. Received: "
                f"inputs.shape={tuple(inputs.shape)}"
            )
        if cache is None:
            check_padding_mask(name, inputs.shape, padding_mask)
        elif padding_mask is not None:
            check_padding_mask(name, (inputs.shape[0], cache.shape[2]), padding_mask)

    def _write_to_cache(self, cache, key, value, cache_update_index):
        """Writes the new keys and values at `cache_update_index`; returns
        the updated cache and all its keys and values."""
        if not self.causal:
            raise ValueError(
                "A `cache` is only meaningful for causal attention. "
                "Received: cache with causal=False"
            )
        if cache_update_index is None:
            raise ValueError(
                "`cache_update_index` is required with `cache`. "
                "Received: cache_update_index=None"
            )
        update = ops.stack([key, value], axis=1)
        cache = ops.slice_update(
            cache, (0, 0, cache_update_index, 0), ops.cast(update, cache.dtype)
        )
        return cache, cache[:, 0], cache[:, 1]

    def _causal_mask(self, start, query_length, key_length):
        """`(1, query_length, key_length)`, true where the query at
        position `start + i` may see key `j`."""
        # `arange(0, n)`: jax2onnx's `arange` cannot take the `stop=None`
        # that Keras passes on for `arange(n)`.
        query_positions = start + ops.arange(0, query_length)
        key_positions = ops.arange(0, key_length)
        return (key_positions[None, :] <= query_positions[:, None])[None]

    def call(self, inputs, padding_mask=None, cache=None, cache_update_index=None):
        self._check_call_inputs(inputs, padding_mask, cache)
        query, key, value = ops.split(
            dense_on_last_axis(self.qkv_dense, inputs), 3, axis=-1
        )
        start = 0
        if cache is not None:
            start = cache_update_index
            cache, key, value = self._write_to_cache(
                cache, key, value, cache_update_index
            )
            key = ops.cast(key, query.dtype)
            value = ops.cast(value, query.dtype)
        scores = ops.einsum("bqd,bkd->bqk", query, key)
        scores = ops.cast(scores, "float32") / math.sqrt(self.attention_dim)
        allowed = None
        if padding_mask is not None:
            allowed = ops.cast(padding_mask, "bool")[:, None, :]
            # A masked key's weight is exactly 0, but 0 * NaN is NaN: padded
            # values are replaced, not just down-weighted.
            value = ops.where(allowed[:, 0, :, None], value, ops.zeros_like(value))
        if self.causal:
            causal_mask = self._causal_mask(
                start, ops.shape(query)[1], ops.shape(key)[1]
            )
            allowed = causal_mask if allowed is None else allowed & causal_mask
        if allowed is not None:
            scores = ops.where(allowed, scores, _MASKED_SCORE)
        weights = ops.cast(ops.softmax(scores, axis=-1), value.dtype)
        outputs = dense_on_last_axis(
            self.output_dense, ops.einsum("bqk,bkd->bqd", weights, value)
        )
        return outputs if cache is None else (outputs, cache)

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None):
        return tuple(inputs_shape[:-1]) + (self.output_dim,)

    def get_config(self):
        config = super().get_config()
        # Records int8 sublayers, so a quantized block reloads as one.
        config["dtype"] = serialized_dtype(self)
        config.update(
            {
                "attention_dim": self.attention_dim,
                "output_dim": self.output_dim,
                "causal": self.causal,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config
