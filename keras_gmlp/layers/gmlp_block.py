import keras
from keras import ops

from keras_gmlp.layers._kernels import gelu
from keras_gmlp.layers._layer_normalization import LastAxisLayerNormalization
from keras_gmlp.layers._ops import call_sublayer
from keras_gmlp.layers._ops import dense_on_last_axis
from keras_gmlp.layers._ops import drop_branch
from keras_gmlp.layers._quantization import serialized_dtype
from keras_gmlp.layers._validation import check_length
from keras_gmlp.layers._validation import check_padding_mask
from keras_gmlp.layers._validation import check_positive_int
from keras_gmlp.layers._validation import check_rank
from keras_gmlp.layers._validation import check_rate
from keras_gmlp.layers.spatial_gating_unit import SpatialGatingUnit
from keras_gmlp.layers.spatial_gating_unit import check_gating
from keras_gmlp.layers.spatial_gating_unit import gated_channels
from keras_gmlp.layers.stochastic_depth import StochasticDepth
from keras_gmlp.layers.tiny_attention import TinyAttention


def _check_block_arguments(
    hidden_dim,
    intermediate_dim,
    sequence_length,
    attention_dim,
    num_heads,
    drop_path_rate,
    dropout,
    gating,
):
    """Raises `ValueError` for a `gMLPBlock` argument out of its range."""
    check_positive_int("hidden_dim", hidden_dim)
    check_positive_int("intermediate_dim", intermediate_dim)
    check_positive_int("sequence_length", sequence_length)
    check_positive_int("num_heads", num_heads)
    if attention_dim is not None:
        check_positive_int("attention_dim", attention_dim)
    check_rate("drop_path_rate", drop_path_rate)
    check_rate("dropout", dropout)
    check_gating(gating)
    if gating == "split" and intermediate_dim % 2:
        raise ValueError(
            "Argument `intermediate_dim` must be even: the spatial gating "
            "unit splits it in two halves. Received: "
            f"intermediate_dim={intermediate_dim}"
        )
    gated = gated_channels(gating, intermediate_dim)
    if gated % num_heads:
        raise ValueError(
            f"Argument `num_heads` must divide the {gated} gated channels. "
            f"Received: num_heads={num_heads}"
        )


@keras.saving.register_keras_serializable(package="keras_gmlp")
class gMLPBlock(keras.layers.Layer):
    """A gMLP block, or an aMLP block when `attention_dim` is set.

    `x + DropPath(V(SGU(GELU(U(LayerNorm(x))))))`: a pre-norm channel MLP
    whose hidden activations are gated by a `SpatialGatingUnit`. With
    `attention_dim`, a `TinyAttention` on the normalised input is added to
    the SGU's projected gate (aMLP). The channel projections run on the
    tokens flattened to a matrix, which XLA's CPU backend executes about
    twice as fast as the batched rank-3 form; the result is the same.

    Args:
        hidden_dim: int, channels of the block's input and output (d_model).
        intermediate_dim: int, width of the expanded activations (d_ffn),
            even for `gating="split"`, where the SGU and the output
            projection see half of it (all of it for the other gatings).
        sequence_length: int, the maximum number of tokens.
        attention_dim: optional int, size of the tiny attention (aMLP).
        causal: bool, whether token `i` may only see tokens `<= i`.
        num_heads: int, number of SGU heads (channel groups with their own
            spatial weights).
        gating: str, the SGU's form: `"split"` (the paper's final design),
            or the ablations `"multiplicative"`, `"additive"`, `"linear"`
            (see `SpatialGatingUnit`).
        drop_path_rate: float in `[0, 1)`, stochastic depth rate of the
            residual branch.
        dropout: float in `[0, 1)`, dropout on the residual branch's output.
        layer_norm_epsilon: float, epsilon of the pre-norm.
        kernel_initializer: initializer of the channel projections.
        **kwargs: standard layer arguments such as `name` and `dtype`.

    Call arguments:
        inputs: tensor `(batch, length, hidden_dim)`, `length <=
            sequence_length`.
        padding_mask: optional boolean tensor `(batch, length)`, true for
            real tokens.
        training: bool, whether dropout and stochastic depth are active.
        cache: optional decoding cache of a causal block (see
            `initial_cache`); the inputs are then the tokens at positions
            `cache_update_index ...` and the call returns
            `(outputs, updated_cache)`.
        cache_update_index: int or scalar tensor, position of the first
            input token; required with `cache`.

    Examples:

    ```python
    block = keras_gmlp.layers.gMLPBlock(
        hidden_dim=256, intermediate_dim=1536, sequence_length=196
    )
    y = block(keras.random.normal((2, 196, 256)))  # shape (2, 196, 256)

    amlp_block = keras_gmlp.layers.gMLPBlock(
        hidden_dim=512, intermediate_dim=3072, sequence_length=128,
        attention_dim=64, causal=True,
    )
    ```
    """

    # LoRA's default targets: they hold nearly all the weights; the spatial
    # weights are n x n, small.
    CHANNEL_PROJECTIONS = ("expand", "output")

    def __init__(
        self,
        hidden_dim,
        intermediate_dim,
        sequence_length,
        attention_dim=None,
        causal=False,
        num_heads=1,
        drop_path_rate=0.0,
        dropout=0.0,
        layer_norm_epsilon=1e-6,
        kernel_initializer="glorot_uniform",
        gating="split",
        **kwargs,
    ):
        super().__init__(**kwargs)
        _check_block_arguments(
            hidden_dim,
            intermediate_dim,
            sequence_length,
            attention_dim,
            num_heads,
            drop_path_rate,
            dropout,
            gating,
        )
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.sequence_length = sequence_length
        self.attention_dim = attention_dim
        self.causal = bool(causal)
        self.num_heads = num_heads
        self.drop_path_rate = float(drop_path_rate)
        self.dropout = float(dropout)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.gating = gating
        # The channels the SGU outputs: what tiny attention adds to, the
        # output projection reads and the decoding cache holds.
        self.gated_dim = gated_channels(gating, intermediate_dim)

        self._create_sublayers()

    def _create_sublayers(self):
        """Creates the sublayers from the validated configuration."""
        self.norm = LastAxisLayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="norm"
        )
        self.expand_dense = keras.layers.Dense(
            self.intermediate_dim,
            kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy,
            name="expand",
        )
        self.spatial_gating_unit = SpatialGatingUnit(
            self.sequence_length,
            gating=self.gating,
            causal=self.causal,
            num_heads=self.num_heads,
            dtype=self.dtype_policy,
            name="spatial_gating_unit",
        )
        self.tiny_attention = None
        if self.attention_dim is not None:
            self.tiny_attention = TinyAttention(
                self.attention_dim,
                self.gated_dim,
                causal=self.causal,
                dtype=self.dtype_policy,
                name="tiny_attention",
            )
        self.output_dense = keras.layers.Dense(
            self.hidden_dim,
            kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy,
            name="output",
        )
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="dropout"
        )
        self.drop_path = StochasticDepth(
            self.drop_path_rate, dtype=self.dtype_policy, name="drop_path"
        )

    def _check_inputs(self, inputs_shape):
        check_rank(self.__class__.__name__, "inputs", inputs_shape, 3)
        if inputs_shape[-1] != self.hidden_dim:
            raise ValueError(
                f"gMLPBlock was configured with hidden_dim={self.hidden_dim}, "
                f"so `inputs` must have {self.hidden_dim} channels. Received: "
                f"inputs.shape={tuple(inputs_shape)}"
            )

    def build(self, inputs_shape, padding_mask_shape=None):
        self._check_inputs(inputs_shape)
        batch, length = inputs_shape[0], inputs_shape[1]
        self.norm.build(inputs_shape)
        self.expand_dense.build((None, self.hidden_dim))
        self.spatial_gating_unit.build((batch, length, self.intermediate_dim))
        if self.tiny_attention is not None:
            self.tiny_attention.build(inputs_shape)
        self.output_dense.build((None, self.gated_dim))
        # Stateless, but `Model.quantize` refuses a model with unbuilt layers.
        self.dropout_layer.build(inputs_shape)
        self.drop_path.build(inputs_shape)

    def call(
        self,
        inputs,
        padding_mask=None,
        training=None,
        cache=None,
        cache_update_index=None,
    ):
        self._check_inputs(inputs.shape)
        if cache is None:
            check_length(self.__class__.__name__, inputs.shape[1], self.sequence_length)
            check_padding_mask(self.__class__.__name__, inputs.shape, padding_mask)
        sgu_cache = attention_cache = None
        if cache is not None:
            if self.tiny_attention is not None:
                sgu_cache, attention_cache = cache
            else:
                sgu_cache = cache
        x = call_sublayer(self.norm, inputs)
        attention_output = None
        if self.tiny_attention is not None:
            attention_output = call_sublayer(
                self.tiny_attention,
                x,
                padding_mask=padding_mask,
                cache=attention_cache,
                cache_update_index=cache_update_index,
            )
            if cache is not None:
                attention_output, attention_cache = attention_output
        z = dense_on_last_axis(self.expand_dense, x)
        z = gelu(z)
        z = call_sublayer(
            self.spatial_gating_unit,
            z,
            padding_mask=padding_mask,
            attention_output=attention_output,
            cache=sgu_cache,
            cache_update_index=cache_update_index,
        )
        if cache is not None:
            z, sgu_cache = z
        y = dense_on_last_axis(self.output_dense, z)
        outputs = inputs + drop_branch(self.dropout_layer, self.drop_path, y, training)
        if cache is None:
            return outputs
        if self.tiny_attention is not None:
            return outputs, (sgu_cache, attention_cache)
        return outputs, sgu_cache

    def initial_cache(self, batch_size, cache_length, dtype=None):
        """An all-zero decoding cache for `call(..., cache=...)`.

        The spatial gating unit caches the normalised gates, `(batch_size,
        cache_length, gated_dim)` (`intermediate_dim // 2` for the split
        gating, `intermediate_dim` otherwise); with tiny attention the cache
        is the tuple `(gates, keys_and_values)`, the latter of shape
        `(batch_size, 2, cache_length, attention_dim)`.
        """
        dtype = dtype or self.compute_dtype
        gates = ops.zeros((batch_size, cache_length, self.gated_dim), dtype=dtype)
        if self.tiny_attention is None:
            return gates
        keys_and_values = ops.zeros(
            (batch_size, 2, cache_length, self.attention_dim), dtype=dtype
        )
        return gates, keys_and_values

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        # Records int8 sublayers, so a quantized block reloads as one.
        config["dtype"] = serialized_dtype(self)
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "intermediate_dim": self.intermediate_dim,
                "sequence_length": self.sequence_length,
                "attention_dim": self.attention_dim,
                "causal": self.causal,
                "num_heads": self.num_heads,
                "drop_path_rate": self.drop_path_rate,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "gating": self.gating,
            }
        )
        return config
