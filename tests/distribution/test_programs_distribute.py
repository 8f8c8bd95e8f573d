"""The text programs' --distribute model on 8 virtual JAX devices: the
variables are sharded as the library's layout map says, and training gives
the losses of one device (`_program_worker.py`, in a subprocess)."""

import numpy as np
import pytest

from tests.distribution.test_distribution import run_worker


@pytest.mark.slow
@pytest.mark.multidevice
def test_pretraining_with_distribute_model_shards_as_the_layout_map_says():
    result = run_worker("_program_worker.py")
    assert result["devices"] == 8
    assert result["layout_mismatches"] == []
    # Expand and output kernels and biases, the SGU norm, the embeddings.
    assert result["sharded_variables"] >= 6
    # The train losses of both checkpoint periods, and the validation loss.
    sharded, single = result["losses"]
    np.testing.assert_allclose(sharded, single, rtol=1e-4)
    np.testing.assert_allclose(*result["perplexities"], rtol=1e-4)
