import keras
from keras import ops

from keras_gmlp.layers._kernels import gelu
from keras_gmlp.layers._layer_normalization import LastAxisLayerNormalization
from keras_gmlp.layers._ops import call_sublayer
from keras_gmlp.layers._ops import dense_on_last_axis
from keras_gmlp.layers._ops import drop_branch
from keras_gmlp.layers._quantization import serialized_dtype
from keras_gmlp.layers._validation import check_padding_mask
from keras_gmlp.layers._validation import check_positive_int
from keras_gmlp.layers._validation import check_rank
from keras_gmlp.layers._validation import check_rate
from keras_gmlp.layers.stochastic_depth import StochasticDepth


@keras.saving.register_keras_serializable(package="keras_gmlp")
class MixerBlock(keras.layers.Layer):
    """An MLP-Mixer block: a token-mixing MLP, then a channel-mixing MLP.

    Both MLPs are pre-norm residual branches (`LayerNorm`, `Dense`, exact
    GELU, `Dense`) as in timm's `MixerBlock`; the token-mixing MLP acts
    along the token axis, so the block needs exactly `sequence_length`
    tokens.

    For text, pad to `sequence_length` and pass `padding_mask`: padded
    tokens then enter the token-mixing MLP as zeros, so the outputs of real
    tokens do not depend on what the padded positions hold (the paper's
    MLP-Mixer baseline for masked language modelling, its Table 3).

    Args:
        hidden_dim: int, channels of the input and output.
        tokens_mlp_dim: int, hidden width of the token-mixing MLP.
        channels_mlp_dim: int, hidden width of the channel-mixing MLP.
        sequence_length: int, the number of tokens.
        drop_path_rate: float in `[0, 1)`, stochastic depth rate of both
            residual branches.
        dropout: float in `[0, 1)`, dropout after each MLP.
        layer_norm_epsilon: float, epsilon of both norms.
        kernel_initializer: initializer of the MLP kernels.
        **kwargs: standard layer arguments such as `name` and `dtype`.

    Call arguments:
        inputs: tensor `(batch, sequence_length, hidden_dim)`.
        padding_mask: optional boolean tensor `(batch, sequence_length)`,
            true for real tokens.
        training: bool, whether dropout and stochastic depth are active.

    Examples:

    ```python
    block = keras_gmlp.layers.MixerBlock(
        hidden_dim=768, tokens_mlp_dim=384, channels_mlp_dim=3072,
        sequence_length=196,
    )
    y = block(keras.random.normal((2, 196, 768)))  # shape (2, 196, 768)
    ```
    """

    # LoRA's default targets: the channel-mixing MLP holds most of the
    # weights; the token-mixing MLP acts across the patch grid and is kept.
    CHANNEL_PROJECTIONS = ("channel_expand", "channel_output")

    def __init__(
        self,
        hidden_dim,
        tokens_mlp_dim,
        channels_mlp_dim,
        sequence_length,
        drop_path_rate=0.0,
        dropout=0.0,
        layer_norm_epsilon=1e-6,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value in (
            ("hidden_dim", hidden_dim),
            ("tokens_mlp_dim", tokens_mlp_dim),
            ("channels_mlp_dim", channels_mlp_dim),
            ("sequence_length", sequence_length),
        ):
            check_positive_int(name, value)
        check_rate("drop_path_rate", drop_path_rate)
        check_rate("dropout", dropout)
        self.hidden_dim = hidden_dim
        self.tokens_mlp_dim = tokens_mlp_dim
        self.channels_mlp_dim = channels_mlp_dim
        self.sequence_length = sequence_length
        self.drop_path_rate = float(drop_path_rate)
        self.dropout = float(dropout)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

        def dense(units, name):
            return keras.layers.Dense(
                units,
                kernel_initializer=self.kernel_initializer,
                dtype=self.dtype_policy,
                name=name,
            )

        def norm(name):
            return LastAxisLayerNormalization(
                epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name=name
            )

        self.token_norm = norm("token_norm")
        self.token_expand_dense = dense(tokens_mlp_dim, "token_expand")
        self.token_output_dense = dense(sequence_length, "token_output")
        self.channel_norm = norm("channel_norm")
        self.channel_expand_dense = dense(channels_mlp_dim, "channel_expand")
        self.channel_output_dense = dense(hidden_dim, "channel_output")
        self.dropout_layer = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="dropout"
        )
        self.drop_path = StochasticDepth(
            drop_path_rate, dtype=self.dtype_policy, name="drop_path"
        )

    def build(self, inputs_shape, padding_mask_shape=None):
        check_rank(self.__class__.__name__, "inputs", inputs_shape, 3)
        self._check_shape(inputs_shape)
        self.token_norm.build(inputs_shape)
        self.token_expand_dense.build((None, self.sequence_length))
        self.token_output_dense.build((None, self.tokens_mlp_dim))
        self.channel_norm.build(inputs_shape)
        self.channel_expand_dense.build((None, self.hidden_dim))
        self.channel_output_dense.build((None, self.channels_mlp_dim))
        # Stateless, but `Model.quantize` refuses a model with unbuilt layers.
        self.dropout_layer.build(inputs_shape)
        self.drop_path.build(inputs_shape)

    def _check_shape(self, shape):
        if shape[1] not in (None, self.sequence_length) or shape[-1] != self.hidden_dim:
            raise ValueError(
                "MixerBlock mixes a fixed number of tokens: `inputs` must have "
                f"shape (batch, {self.sequence_length}, {self.hidden_dim}). "
                f"Received: inputs.shape={tuple(shape)}"
            )

    def _mlp(self, expand_dense, output_dense, x, training):
        x = dense_on_last_axis(expand_dense, x)
        x = gelu(x)
        x = dense_on_last_axis(output_dense, x)
        return drop_branch(self.dropout_layer, self.drop_path, x, training)

    def call(self, inputs, padding_mask=None, training=None):
        check_rank(self.__class__.__name__, "inputs", inputs.shape, 3)
        self._check_shape(inputs.shape)
        check_padding_mask(self.__class__.__name__, inputs.shape, padding_mask)
        normalized = call_sublayer(self.token_norm, inputs)
        if padding_mask is not None:
            # Selected, not multiplied: 0 * NaN is NaN, and a padded
            # position may hold anything.
            real = ops.cast(padding_mask, "bool")[:, :, None]
            normalized = ops.where(real, normalized, ops.zeros_like(normalized))
        tokens = ops.transpose(normalized, (0, 2, 1))
        mixed = self._mlp(
            self.token_expand_dense, self.token_output_dense, tokens, training
        )
        x = inputs + ops.transpose(mixed, (0, 2, 1))
        return x + self._mlp(
            self.channel_expand_dense,
            self.channel_output_dense,
            call_sublayer(self.channel_norm, x),
            training,
        )

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        # Records int8 sublayers, so a quantized block reloads as one.
        config["dtype"] = serialized_dtype(self)
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "tokens_mlp_dim": self.tokens_mlp_dim,
                "channels_mlp_dim": self.channels_mlp_dim,
                "sequence_length": self.sequence_length,
                "drop_path_rate": self.drop_path_rate,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
            }
        )
        return config
