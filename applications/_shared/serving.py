"""Quantized copies of a trained model, for the programs' `--quantize`."""

import warnings


def quantized_copy(model, mode):
    """A copy of `model` with its Dense and Embedding kernels quantized to
    `mode` ("int8" or "float8"); `model` itself stays float, so the
    summary, the plots and the saved presets describe what was trained.

    Args:
        model: a built `keras.Model` (Functional or a keras-hub task).
        mode: a `Model.quantize` mode.
    """
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
        copy.quantize(mode)
    return copy
