"""`model.quantize("int8")` on the image and text models: outputs stay
within 3% of the float model's largest output, the dense kernels become
int8, and the quantized model survives a save and load."""

import warnings

import keras
import numpy as np
import pytest

from tests.deployment.cross_backend_models import image_classifier
from tests.deployment.cross_backend_models import make_inputs
from tests.deployment.cross_backend_models import text_models

# int8 kernels with per-output-channel scales and int8 activations: on these
# random tiny models the largest error measured was 0.9% (image) and 1.3%
# (masked LM) of the largest output.
RELATIVE_TOLERANCE = 0.03


def quantize_and_compare(model, inputs, tmp_path):
    as_numpy = keras.ops.convert_to_numpy
    reference = as_numpy(model(inputs))
    with warnings.catch_warnings():
        # Keras warns for each layer without int8 weights (norms, the spatial
        # gating unit's token-mixing matrix, adds); those stay in float.
        warnings.simplefilter("ignore", UserWarning)
        model.quantize("int8")
    int8_kernels = [w for w in model.weights if w.dtype == "int8"]
    assert int8_kernels, "no layer was quantized"
    quantized = as_numpy(model(inputs))
    error = np.abs(quantized - reference).max()
    assert 0 < error <= RELATIVE_TOLERANCE * np.abs(reference).max()

    path = tmp_path / "quantized.keras"
    model.save(path)
    reloaded = keras.saving.load_model(path)
    np.testing.assert_allclose(
        as_numpy(reloaded(inputs)), quantized, rtol=1e-6, atol=1e-6
    )


@pytest.mark.slow
def test_int8_image_classifier(tmp_path):
    quantize_and_compare(image_classifier(), make_inputs()["images"], tmp_path)


@pytest.mark.slow
def test_int8_masked_lm(tmp_path):
    masked_lm, _ = text_models()
    inputs = make_inputs()
    text = {
        "token_ids": inputs["token_ids"],
        "segment_ids": np.zeros_like(inputs["token_ids"]),
        "padding_mask": inputs["padding_mask"],
        "mask_positions": inputs["mask_positions"],
    }
    quantize_and_compare(masked_lm, text, tmp_path)
