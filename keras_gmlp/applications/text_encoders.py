"""The masked-language-model encoders of "Pay Attention to MLPs".

`gMLPBase`, `gMLPLarge`, `aMLPBase` and `aMLPLarge` build the paper's
configurations (Table 4 of Liu et al., 2021) as `gMLPMaskedLM` models, or as
bare `gMLPBackbone` encoders with `include_top=False`. With the defaults
(a BERT WordPiece vocabulary of 30,522 tokens, sequences of 128 tokens) the
parameter counts match the paper's (`GMLP_TEXT_VARIANTS`). They need
keras-hub, the `hub` extra (`pip install "keras-gmlp[hub]"`).
"""

from keras_gmlp._compat import requires_hub_extra
from keras_gmlp.utils.variants import BACKBONE_ARGUMENTS
from keras_gmlp.utils.variants import GMLP_TEXT_VARIANTS

_BUILDER_DOC = """Builds the {label} masked-language-model encoder of the paper.

    {summary}:
    {paper_params_m}M parameters in the paper. With `include_top=True` (the
    default) the result is a
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
        name: the model's name. Defaults to `"{variant}"`.
        gating: str, the spatial gating unit's form: `"split"` (the paper's
            design) or an ablation of its Table 3, `"multiplicative"`,
            `"additive"` or `"linear"`; these gate all of d_ffn, so their
            output projections, and the parameter count, are larger.

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
    variant,
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
    gating,
):
    """The encoder of `GMLP_TEXT_VARIANTS[variant]`; the other arguments
    are those of `gMLPBase`."""
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
    config = GMLP_TEXT_VARIANTS[variant]
    # keras-hub imports TensorFlow: imported on the first build, so that
    # `import keras_gmlp.applications` stays light; without the `hub` extra
    # the error names the builder.
    with requires_hub_extra(f"keras_gmlp.applications.{config['builder']}"):
        from keras_gmlp.models import gMLPBackbone
        from keras_gmlp.models import gMLPMaskedLM

    name = name or variant
    backbone = gMLPBackbone(
        vocabulary_size=vocabulary_size,
        max_sequence_length=sequence_length,
        num_segments=num_segments,
        causal=causal,
        dropout=dropout,
        gating=gating,
        dtype=dtype,
        name=name if not include_top else None,
        **{key: config[key] for key in BACKBONE_ARGUMENTS},
    )
    model = backbone
    if include_top:
        model = gMLPMaskedLM(backbone, preprocessor=preprocessor, name=name)
    if weights is not None:
        model.load_weights(weights)
    return model


def _summary(config):
    kind = (
        "gMLP"
        if config["attention_dim"] is None
        else (f"aMLP (gMLP with a {config['attention_dim']}-wide tiny attention)")
    )
    return (
        f"{config['num_layers']} {kind} blocks, d_model "
        f"{config['hidden_dim']}, d_ffn {config['intermediate_dim']}"
    )


def _docstring(variant):
    config = GMLP_TEXT_VARIANTS[variant]
    return _BUILDER_DOC.format(
        label=config["title"],
        summary=_summary(config),
        paper_params_m=config["paper_params"] // 1_000_000,
        builder=config["builder"],
        variant=variant,
    )


def gMLPBase(
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
    gating="split",
):
    return _build_text_encoder(
        "gmlp_base",
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
        gating,
    )


def gMLPLarge(
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
    gating="split",
):
    return _build_text_encoder(
        "gmlp_large",
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
        gating,
    )


def aMLPBase(
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
    gating="split",
):
    return _build_text_encoder(
        "amlp_base",
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
        gating,
    )


def aMLPLarge(
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
    gating="split",
):
    return _build_text_encoder(
        "amlp_large",
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
        gating,
    )


gMLPBase.__doc__ = _docstring("gmlp_base")
gMLPLarge.__doc__ = _docstring("gmlp_large")
aMLPBase.__doc__ = _docstring("amlp_base")
aMLPLarge.__doc__ = _docstring("amlp_large")
