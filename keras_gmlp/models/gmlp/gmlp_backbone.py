import keras
from keras_hub.models import Backbone

from keras_gmlp import distribution
from keras_gmlp.layers import TinyAttention
from keras_gmlp.layers import gMLPBlock
from keras_gmlp.layers._lora import channel_projections
from keras_gmlp.layers._validation import check_positive_int
from keras_gmlp.layers._validation import check_rate
from keras_gmlp.models._lora import LoraTargets
from keras_gmlp.models.gmlp._checks import CheckedTextSteps
from keras_gmlp.models.gmlp._checks import check_input_shapes
from keras_gmlp.utils.export import CheckedExport


def gmlp_embedding_initializer():
    return keras.initializers.TruncatedNormal(stddev=0.02)


def _check_backbone_arguments(
    vocabulary_size,
    num_layers,
    hidden_dim,
    intermediate_dim,
    max_sequence_length,
    num_segments,
    attention_dim,
    dropout,
):
    """Raises `ValueError` for a `gMLPBackbone` argument out of its range."""
    for name, value in (
        ("vocabulary_size", vocabulary_size),
        ("num_layers", num_layers),
        ("hidden_dim", hidden_dim),
        ("intermediate_dim", intermediate_dim),
        ("max_sequence_length", max_sequence_length),
        ("num_segments", num_segments),
    ):
        check_positive_int(name, value)
    if attention_dim is not None:
        check_positive_int("attention_dim", attention_dim)
    check_rate("dropout", dropout)


def _int4_scores_as_quantized(token_embedding):
    """Gives a reloaded int4 token embedding the input quantizer that
    `quantize("int4")` gave it: that of Keras' default
    `Int4QuantizationConfig` (none from Keras 3.15 on: int4 scores the
    vocabulary from float inputs; an `AbsMaxQuantizer` before).

    A backbone makes its layers in `__init__`, so a loaded one rebuilds the
    embedding from its int4 dtype policy alone, and that build always gave
    it an `AbsMaxQuantizer`: on Keras 3.15 the reloaded causal LM's logits
    differed by 6e-3 (of 0.8) with every weight equal. A custom
    `quantization_config` is not restored either way (upstream).
    """
    if (
        token_embedding.quantization_mode == "int4"
        and getattr(token_embedding, "quantization_config", None) is None
    ):
        default = keras.quantizers.Int4QuantizationConfig()
        token_embedding.inputs_quantizer = default.activation_quantizer


def _functional_graph(backbone):
    """The symbolic inputs and outputs dicts of `backbone`, built by calling
    its (already created) layers on `keras.Input`s."""
    token_id_input = keras.Input(shape=(None,), dtype="int32", name="token_ids")
    segment_id_input = keras.Input(shape=(None,), dtype="int32", name="segment_ids")
    padding_mask_input = keras.Input(shape=(None,), dtype="int32", name="padding_mask")
    x = backbone.embeddings_add(
        (
            backbone.token_embedding(token_id_input),
            backbone.segment_embedding(segment_id_input),
        )
    )
    x = backbone.embeddings_dropout(x)
    for block in backbone.gmlp_blocks:
        x = block(x, padding_mask=padding_mask_input)
    sequence_output = backbone.final_layer_norm(x)
    # The pooler multiplies by the mask, and 0 * NaN is NaN: padded rows
    # are replaced first, so whatever they hold cannot reach the mean.
    real_tokens = keras.ops.cast(padding_mask_input, "bool")[:, :, None]
    pooled_output = backbone.pooler(
        keras.ops.where(
            real_tokens, sequence_output, keras.ops.zeros_like(sequence_output)
        ),
        mask=padding_mask_input,
    )
    inputs = {
        "token_ids": token_id_input,
        "segment_ids": segment_id_input,
        "padding_mask": padding_mask_input,
    }
    outputs = {
        "sequence_output": sequence_output,
        "pooled_output": pooled_output,
    }
    return inputs, outputs


@keras.saving.register_keras_serializable(package="keras_gmlp")
class gMLPBackbone(CheckedExport, CheckedTextSteps, LoraTargets, Backbone):
    """The gMLP (or aMLP) text encoder of "Pay Attention to MLPs".

    Token and segment embeddings are summed (there are no position
    embeddings: each block's spatial gating unit carries position) and run
    through `num_layers` pre-norm `gMLPBlock`s and a final layer
    normalisation. With `attention_dim` every block also has a tiny
    single-head attention (aMLP).

    The encoder is built for `max_sequence_length` tokens and accepts any
    shorter length. `padding_mask` reaches every block's spatial gating unit
    and tiny attention, so the outputs of real tokens do not depend on how
    much padding follows them.

    The model has two outputs: `"sequence_output"`, `(batch, length,
    hidden_dim)`, and `"pooled_output"`, `(batch, hidden_dim)`, the mean of
    the sequence output over the real tokens. gMLP has no attention from a
    `[CLS]` token to summarise the sequence (and MLM pretraining never trains
    that token to do it), so the pooled output is a parameter-free masked
    mean, which is also independent of the padding.

    Args:
        vocabulary_size: int, the number of token ids.
        num_layers: int, the number of gMLP blocks.
        hidden_dim: int, the width of the token representations (d_model).
        intermediate_dim: int, the width inside each block (d_ffn), even
            for the split gating.
        max_sequence_length: int, the longest input the spatial weights
            cover.
        num_segments: int, the number of segment ids (2 for sentence pairs).
        attention_dim: optional int, the size of each block's tiny attention
            (aMLP). `None` builds gMLP.
        causal: bool, whether token `i` may only see tokens `<= i`.
        dropout: float in `[0, 1)`, dropout on the embeddings and on each
            block's residual branch.
        gating: str, the spatial gating unit's form: `"split"` (the paper's
            final design) or one of the paper's ablations,
            `"multiplicative"`, `"additive"`, `"linear"` (see
            `keras_gmlp.layers.SpatialGatingUnit`).
        dtype: string or `keras.DTypePolicy`, the dtype policy of the
            computations and weights. Norms and softmax run in float32.
        **kwargs: standard `keras.Model` arguments such as `name`.

    Examples:

    ```python
    input_data = {
        "token_ids": np.array([[2, 7, 9, 3, 0, 0]]),
        "segment_ids": np.zeros((1, 6), dtype="int32"),
        "padding_mask": np.array([[1, 1, 1, 1, 0, 0]]),
    }
    # A small aMLP encoder.
    backbone = keras_gmlp.models.gMLPBackbone(
        vocabulary_size=1000,
        num_layers=2,
        hidden_dim=64,
        intermediate_dim=256,
        max_sequence_length=128,
        attention_dim=32,
    )
    outputs = backbone(input_data)
    outputs["sequence_output"].shape  # (1, 6, 64)
    outputs["pooled_output"].shape  # (1, 64)
    ```
    """

    # LoRA adapts the channel projections of every block (and, in aMLP,
    # the tiny attention's), which the layers name.
    LORA_LAYER_NAMES = channel_projections(gMLPBlock, TinyAttention)

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        hidden_dim,
        intermediate_dim,
        max_sequence_length=512,
        num_segments=2,
        attention_dim=None,
        causal=False,
        dropout=0.1,
        gating="split",
        dtype=None,
        **kwargs,
    ):
        _check_backbone_arguments(
            vocabulary_size,
            num_layers,
            hidden_dim,
            intermediate_dim,
            max_sequence_length,
            num_segments,
            attention_dim,
            dropout,
        )

        # === Layers ===
        self._create_layers(
            vocabulary_size,
            num_layers,
            hidden_dim,
            intermediate_dim,
            max_sequence_length,
            num_segments,
            attention_dim,
            causal,
            dropout,
            gating,
            dtype,
        )

        # === Functional Model ===
        inputs, outputs = _functional_graph(self)
        super().__init__(inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)
        _int4_scores_as_quantized(self.token_embedding)

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.attention_dim = attention_dim
        self.causal = bool(causal)
        self.dropout = dropout
        self.gating = gating

    def _create_layers(
        self,
        vocabulary_size,
        num_layers,
        hidden_dim,
        intermediate_dim,
        max_sequence_length,
        num_segments,
        attention_dim,
        causal,
        dropout,
        gating,
        dtype,
    ):
        """Creates the layers, in the order the saved weights list them."""
        self.token_embedding = keras.layers.ReversibleEmbedding(
            input_dim=vocabulary_size,
            output_dim=hidden_dim,
            embeddings_initializer=gmlp_embedding_initializer(),
            dtype=dtype,
            name="token_embedding",
        )
        self.segment_embedding = keras.layers.Embedding(
            input_dim=num_segments,
            output_dim=hidden_dim,
            embeddings_initializer=gmlp_embedding_initializer(),
            dtype=dtype,
            name="segment_embedding",
        )
        self.embeddings_add = keras.layers.Add(dtype=dtype, name="embeddings_add")
        self.embeddings_dropout = keras.layers.Dropout(
            dropout, dtype=dtype, name="embeddings_dropout"
        )
        self.gmlp_blocks = [
            gMLPBlock(
                hidden_dim=hidden_dim,
                intermediate_dim=intermediate_dim,
                sequence_length=max_sequence_length,
                attention_dim=attention_dim,
                causal=causal,
                dropout=dropout,
                gating=gating,
                layer_norm_epsilon=1e-6,
                dtype=dtype,
                name=f"gmlp_block_{i}",
            )
            for i in range(num_layers)
        ]
        self.final_layer_norm = keras.layers.LayerNormalization(
            epsilon=1e-6, dtype=dtype, name="final_layer_norm"
        )
        # (batch, length, hidden) whatever `keras.config.image_data_format()`.
        self.pooler = keras.layers.GlobalAveragePooling1D(
            "channels_last", dtype=dtype, name="pooler"
        )

    def call(self, inputs, training=None, mask=None, **kwargs):
        # Symbolic calls go through `compute_output_spec`; this runs on real
        # (or traced) tensors, whose shapes are known.
        check_input_shapes(inputs, self.max_sequence_length, self.__class__.__name__)
        return super().call(inputs, training=training, mask=mask, **kwargs)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "num_layers": self.num_layers,
                "hidden_dim": self.hidden_dim,
                "intermediate_dim": self.intermediate_dim,
                "max_sequence_length": self.max_sequence_length,
                "num_segments": self.num_segments,
                "attention_dim": self.attention_dim,
                "causal": self.causal,
                "dropout": self.dropout,
                "gating": self.gating,
            }
        )
        return config

    def count_embedding_params(self):
        """The number of parameters in the token and segment embeddings.

        The convention of scaling-law studies (and of the paper's
        comparison at equal size): embedding tables grow with the
        vocabulary, not with the model's capacity to combine tokens, so
        models are compared by their non-embedding parameters. With tied
        input and output embeddings (`gMLPMaskedLM`, `gMLPCausalLM`) the
        token table is counted once.

        Returns:
            int, `vocabulary_size * hidden_dim + num_segments * hidden_dim`.

        Examples:

        ```python
        backbone = keras_gmlp.models.gMLPBackbone(
            vocabulary_size=1000, num_layers=2, hidden_dim=64,
            intermediate_dim=256, max_sequence_length=128,
        )
        backbone.count_embedding_params()  # (1000 + 2) * 64 = 64128
        backbone.count_non_embedding_params()  # the blocks and final norm
        ```
        """
        return self.token_embedding.count_params() + (
            self.segment_embedding.count_params()
        )

    def count_non_embedding_params(self):
        """The number of parameters outside the embedding tables.

        The blocks (channel projections, spatial weights, norms and, in
        aMLP, the tiny attention) and the final layer normalisation:
        `count_params() - count_embedding_params()`. The spatial weights
        grow as `max_sequence_length ** 2` per block.

        Returns:
            int.
        """
        return self.count_params() - self.count_embedding_params()

    @staticmethod
    def get_layout_map(
        device_mesh,
        model_parallel_dim_name="model",
        data_parallel_dim_name="batch",
    ):
        """A `keras.distribution.LayoutMap` for model-parallel training.

        Delegates to `keras_gmlp.distribution.get_layout_map`: the blocks'
        channel projections are sharded along d_ffn (Megatron-style), the
        embeddings along the hidden axis, the spatial weights replicated.
        Use it with `keras_gmlp.distribution.ModelParallel`, which
        replicates any axis the mesh does not divide instead of failing.

        Args:
            device_mesh: `keras.distribution.DeviceMesh` with both axes.
            model_parallel_dim_name: str, the mesh axis variables are
                sharded along.
            data_parallel_dim_name: str, the mesh axis the batch is split
                along.

        Returns:
            A `keras.distribution.LayoutMap`.

        Examples:

        ```python
        mesh = keras.distribution.DeviceMesh(
            shape=(2, 4), axis_names=("batch", "model"),
            devices=keras.distribution.list_devices(),
        )
        layout_map = keras_gmlp.models.gMLPBackbone.get_layout_map(mesh)
        distribution = keras_gmlp.distribution.ModelParallel(
            layout_map=layout_map, batch_dim_name="batch"
        )
        with distribution.scope():
            backbone = keras_gmlp.models.gMLPBackbone.from_preset(path)
        ```
        """
        return distribution.get_layout_map(
            device_mesh,
            model_parallel_dim_name=model_parallel_dim_name,
            data_parallel_dim_name=data_parallel_dim_name,
        )
