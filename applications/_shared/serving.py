"""Quantized copies of a trained model, for the programs' `--quantize`."""

import warnings


def quantize_in_place(model, mode, keep=()):
    """`model.quantize(mode)` but for the layers named in `keep` (a new
    head that should train), for --quantize-base: LoRA then trains float
    factors beside the quantized kernels."""
    with warnings.catch_warnings():
        # As in quantized_copy: the norms and the spatial gating unit stay
        # float by design.
        warnings.simplefilter("ignore", UserWarning)
        model.quantize(mode, filters=lambda layer: layer.name not in keep)


def quantized_copy(model, mode, calibration=None):
    """A copy of `model` with its Dense and Embedding kernels quantized to
    `mode` ("int8", "float8", "int4", or "gptq": 4-bit weights fitted block
    by block to the `calibration` windows); `model` itself stays float, so
    the summary, the plots and the saved presets describe what was trained.

    Args:
        model: a built `keras.Model` (Functional or a keras-hub task).
        mode: a `Model.quantize` mode.
        calibration: for "gptq", token ids (windows x length) the quantized
            blocks should reproduce.
    """
    import keras

    copy = type(model).from_config(model.get_config())
    copy.set_weights(model.get_weights())
    preprocessor = getattr(model, "preprocessor", None)
    if preprocessor is not None:
        # Host-side, with assets (a vocabulary) that a config does not hold.
        copy.preprocessor = preprocessor
    with warnings.catch_warnings():
        # Keras warns for each layer it leaves in float (norms, the spatial
        # gating unit's token-mixing matrix): that is the design.
        warnings.simplefilter("ignore", UserWarning)
        if mode != "gptq":
            copy.quantize(mode)
            return copy
        config = keras.quantizers.GPTQConfig(
            dataset=calibration,
            # Keras asks for one; the windows are token ids already.
            tokenizer=preprocessor.tokenizer if preprocessor else (lambda text: text),
            weight_bits=4,
            num_samples=len(calibration),
            sequence_length=calibration.shape[1],
            # Scales per 128 inputs (Keras' default). Not -1, one per output:
            # Keras 3.15.1 then starts a new scale every 128 inputs anyway
            # and fails on wider kernels (the default LM's 256-input one).
            group_size=128,
        )
        copy.quantize("gptq", config=config)
    return copy
