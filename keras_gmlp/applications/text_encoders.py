"""The masked-language-model encoders of "Pay Attention to MLPs".

`gMLPBase`, `gMLPLarge`, `aMLPBase` and `aMLPLarge` build the paper's
configurations (Table 4 of Liu et al., 2021) as `gMLPMaskedLM` models, or as
bare `gMLPBackbone` encoders with `include_top=False`. With the defaults
(a BERT WordPiece vocabulary of 30,522 tokens, sequences of 128 tokens) the
parameter counts match the paper: 130M, 365M, 109M and 316M.
"""

# Depth, widths and tiny-attention size of each paper configuration.
TEXT_ENCODER_CONFIGS = {
    "gMLPBase": {
        "num_layers": 48,
        "hidden_dim": 512,
        "intermediate_dim": 3072,
        "attention_dim": None,
    },
    "gMLPLarge": {
        "num_layers": 96,
        "hidden_dim": 768,
        "intermediate_dim": 3072,
        "attention_dim": None,
    },
    "aMLPBase": {
        "num_layers": 36,
        "hidden_dim": 512,
        "intermediate_dim": 3072,
        "attention_dim": 64,
    },
    "aMLPLarge": {
        "num_layers": 72,
        "hidden_dim": 768,
        "intermediate_dim": 3072,
        "attention_dim": 128,
    },
}

_DEFAULT_NAMES = {
    "gMLPBase": "gmlp_base",
    "gMLPLarge": "gmlp_large",
    "aMLPBase": "amlp_base",
    "aMLPLarge": "amlp_large",
}

_BUILDER_DOC = """Builds the {label} masked-language-model encoder of the paper.

    {summary} With `include_top=True` (the default) the result is a
    `keras_gmlp.models.gMLPMaskedLM` whose output layer is tied to the token
    embedding; with `include_top=False` it is the bare
    `keras_gmlp.models.gMLPBackbone`, with `"sequence_output"` and
    `"pooled_output"` outputs. Both are functional Keras models, compiled
    with keras-hub's defaults, and save to presets with `save_to_preset()`.

    Args:
        include_top: bool, whether to return the masked LM (encoder and
            MLM head) or the encoder alone.
        weights: `None` (random initialisation) or the path of a Keras
            `.weights.h5` file saved from the same configuration.
        vocabulary_size: int, the number of token ids (30,522 for BERT's
            uncased WordPiece vocabulary).
        sequence_length: int, the longest input; the spatial gating units
            hold `sequence_length ** 2` weights per block.
        num_segments: int, the number of segment ids.
        causal: bool, whether token `i` may only see tokens `<= i`.
        dropout: float, dropout on the embeddings and residual branches.
        preprocessor: optional `gMLPMaskedLMPreprocessor` attached to the
            masked LM (`include_top=True` only), so `fit()` takes raw text.
        dtype: optional dtype policy, e.g. `"mixed_bfloat16"`.
        name: the model's name. Defaults to `"{name}"`.

    Returns:
        A `gMLPMaskedLM` or, with `include_top=False`, a `gMLPBackbone`.

    Examples:

    ```python
    encoder = keras_gmlp.applications.{builder}(include_top=False)
    masked_lm = keras_gmlp.applications.{builder}(
        vocabulary_size=tokenizer.vocabulary_size(),
        preprocessor=keras_gmlp.models.gMLPMaskedLMPreprocessor(
            tokenizer, sequence_length=128
        ),
    )
    masked_lm.fit(text_dataset, epochs=1)
    ```
    """


def _build_text_encoder(
    config_name,
    include_top,
    weights,
    vocabulary_size,
    sequence_length,
    num_segments,
    causal,
    dropout,
    preprocessor,
    dtype,
    name,
):
    if weights is not None and not (
        isinstance(weights, str) and weights.endswith(".weights.h5")
    ):
        raise ValueError(
            "Argument `weights` must be None or the path of a `.weights.h5` "
            f"file. Received: weights={weights!r}"
        )
    if preprocessor is not None and not include_top:
        raise ValueError(
            "A `preprocessor` can only be attached to the masked LM: pass "
            "`include_top=True`, or apply the preprocessor to your data. "
            f"Received: include_top={include_top!r}"
        )
    # keras-hub imports TensorFlow: imported on the first build, so that
    # `import keras_gmlp.applications` stays light.
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPMaskedLM

    name = name or _DEFAULT_NAMES[config_name]
    backbone = gMLPBackbone(
        vocabulary_size=vocabulary_size,
        max_sequence_length=sequence_length,
        num_segments=num_segments,
        causal=causal,
        dropout=dropout,
        dtype=dtype,
        name=name if not include_top else None,
        **TEXT_ENCODER_CONFIGS[config_name],
    )
    model = backbone
    if include_top:
        model = gMLPMaskedLM(backbone, preprocessor=preprocessor, name=name)
    if weights is not None:
        model.load_weights(weights)
    return model


def _make_builder(config_name, label, summary):
    def builder(
        include_top=True,
        weights=None,
        vocabulary_size=30522,
        sequence_length=128,
        num_segments=2,
        causal=False,
        dropout=0.1,
        preprocessor=None,
        dtype=None,
        name=None,
    ):
        return _build_text_encoder(
            config_name,
            include_top=include_top,
            weights=weights,
            vocabulary_size=vocabulary_size,
            sequence_length=sequence_length,
            num_segments=num_segments,
            causal=causal,
            dropout=dropout,
            preprocessor=preprocessor,
            dtype=dtype,
            name=name,
        )

    builder.__name__ = builder.__qualname__ = config_name
    builder.__doc__ = _BUILDER_DOC.format(
        label=label,
        summary=summary,
        builder=config_name,
        name=_DEFAULT_NAMES[config_name],
    )
    return builder


gMLPBase = _make_builder(
    "gMLPBase",
    "gMLP-base",
    "48 gMLP blocks, d_model 512, d_ffn 3072: 130M parameters.",
)
gMLPLarge = _make_builder(
    "gMLPLarge",
    "gMLP-large",
    "96 gMLP blocks, d_model 768, d_ffn 3072: 365M parameters.",
)
aMLPBase = _make_builder(
    "aMLPBase",
    "aMLP-base",
    "36 aMLP blocks (gMLP with a 64-wide tiny attention), d_model 512, "
    "d_ffn 3072: 109M parameters.",
)
aMLPLarge = _make_builder(
    "aMLPLarge",
    "aMLP-large",
    "72 aMLP blocks (gMLP with a 128-wide tiny attention), d_model 768, "
    "d_ffn 3072: 316M parameters.",
)
