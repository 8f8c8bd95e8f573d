"""Loads the models a test saved on another backend and writes their
outputs. Run as `python _cross_backend_worker.py DIR` with KERAS_BACKEND set;
it imports nothing from the library but `keras_gmlp.models`, as a user
would."""

import sys

import keras
import numpy as np

import keras_gmlp.models  # noqa: F401  (registers every class the library saves)
from tests.deployment.cross_backend_models import model_outputs


def main(directory):
    models = {
        name: keras.saving.load_model(f"{directory}/{name}.keras")
        for name in ("image_classifier", "masked_lm", "causal_lm")
    }
    outputs = model_outputs(models, np.load(f"{directory}/inputs.npz"))
    np.savez(f"{directory}/outputs_{keras.config.backend()}.npz", **outputs)


if __name__ == "__main__":
    main(sys.argv[1])
