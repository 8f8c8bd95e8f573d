"""Models saved on this backend load on the other two, after nothing but
`import keras_gmlp.models`, with the same outputs and the same greedy generations."""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from tests.deployment.cross_backend_models import image_classifier
from tests.deployment.cross_backend_models import make_inputs
from tests.deployment.cross_backend_models import model_outputs
from tests.deployment.cross_backend_models import text_models

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BACKENDS = ("tensorflow", "jax", "torch")


@pytest.mark.slow
def test_saved_models_load_on_the_other_backends(tmp_path):
    masked_lm, causal_lm = text_models()
    models = {
        "image_classifier": image_classifier(),
        "masked_lm": masked_lm,
        "causal_lm": causal_lm,
    }
    inputs = make_inputs()
    np.savez(tmp_path / "inputs.npz", **inputs)
    expected = model_outputs(models, inputs)
    for name, model in models.items():
        model.save(tmp_path / f"{name}.keras")

    # The two loads run side by side: each is mostly interpreter and
    # backend start-up.
    workers = {}
    for backend in (b for b in BACKENDS if b != keras.config.backend()):
        env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=ROOT)
        workers[backend] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.deployment._cross_backend_worker",
                str(tmp_path),
            ],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
    for backend, worker in workers.items():
        _, stderr = worker.communicate()
        assert worker.returncode == 0, f"{backend}: {stderr[-3000:]}"
        got = np.load(tmp_path / f"outputs_{backend}.npz")
        for key, want in expected.items():
            if key == "generated_ids":
                np.testing.assert_array_equal(got[key], want, err_msg=backend)
            else:
                np.testing.assert_allclose(
                    got[key], want, rtol=1e-5, atol=1e-5, err_msg=f"{backend} {key}"
                )
