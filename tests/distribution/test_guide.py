import os

import pytest

from tests.test_guides import EXPECTATIONS
from tests.test_guides import ROOT
from tests.test_guides import run_guide

GUIDE = os.path.join(ROOT, "guides", "distributed_training.py")


@pytest.mark.slow
@pytest.mark.multidevice
def test_distributed_training_guide_runs(tmp_path):
    """The guide's default (JAX, 8 virtual CPU devices) in fast mode,
    whatever backend this pytest run uses: tests/test_guides.py leaves JAX
    to this test, so the guide runs once per backend."""
    results = run_guide(GUIDE, tmp_path, "jax")
    stdout = results.pop("stdout")
    assert "8 devices" in stdout
    # Model-parallel variables really are sharded after fit.
    assert "blocks_0/expand/kernel" in stdout
    assert "P(None, 'model')" in stdout
    for variable, check in EXPECTATIONS["distributed_training.py"].items():
        assert check(results[variable]), f"{variable}={results[variable]}"
