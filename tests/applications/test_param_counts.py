import keras
import pytest

from keras_gmlp import applications

# timm's counts for the same architectures with the 1000-class head.
TIMM_PARAMS = {
    "gMLPTi": 5_867_328,
    "gMLPS": 19_422_656,
    "gMLPB": 73_075_392,
    "MixerS32": 19_104_624,
    "MixerS16": 18_528_264,
    "MixerB32": 60_293_428,
    "MixerB16": 59_880_472,
    "MixerL32": 206_939_264,
    "MixerL16": 208_196_168,
}


@pytest.mark.parametrize("builder", sorted(TIMM_PARAMS))
def test_parameter_count_equals_timm(builder):
    # Variables are created without values: shapes are all count_params
    # needs, and Mixer-L would otherwise allocate 0.8 GB per test.
    with keras.StatelessScope(initialize_variables=False):
        model = getattr(applications, builder)()
    assert model.count_params() == TIMM_PARAMS[builder]
    assert model.output_shape == (None, 1000)
