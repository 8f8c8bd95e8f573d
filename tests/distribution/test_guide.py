import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUIDE = os.path.join(ROOT, "guides", "distributed_training.py")


@pytest.mark.slow
@pytest.mark.multidevice
def test_distributed_training_guide_runs():
    """The guide's default (JAX, 8 virtual CPU devices) runs as a script,
    whatever backend this pytest run uses."""
    env = dict(
        os.environ, KERAS_BACKEND="jax", PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2"
    )
    result = subprocess.run(
        [sys.executable, GUIDE],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "8 devices" in result.stdout
    # Model-parallel variables really are sharded after fit.
    assert "blocks_0/expand/kernel" in result.stdout
    assert "P(None, 'model')" in result.stdout
