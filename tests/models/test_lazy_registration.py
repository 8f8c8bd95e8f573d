"""`import keras_gmlp` registers every keras-hub model class under the name
its decorator uses, so `keras.saving.load_model` finds saved models."""

import importlib

import keras

import keras_gmlp.models


def test_each_lazy_name_is_the_real_registration():
    for module, names in keras_gmlp.models.LAZY_CLASSES.items():
        real_module = importlib.import_module(module)
        for name in names:
            real = getattr(real_module, name)
            assert keras.saving.get_registered_name(real) == f"keras_gmlp>{name}"
            assert keras.saving.get_registered_object(f"keras_gmlp>{name}") is real
