"""Quantized copies of a trained model, for the programs' `--quantize`."""

import warnings


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
            group_size=-1,
        )
        copy.quantize("gptq", config=config)
    return copy
