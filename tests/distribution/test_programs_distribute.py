"""The text programs' --distribute model on 8 virtual JAX devices: the
variables are sharded as the library's layout map says, and training gives
the losses of one device (`_program_worker.py`, in a subprocess). The same
losses with --distribute data on 2 TensorFlow replicas
(`_tf_program_worker.py`)."""

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


@pytest.mark.slow
@pytest.mark.multidevice
def test_text_programs_train_on_two_tensorflow_replicas_as_on_one_device(tmp_path):
    pretrain = run_worker("_tf_program_worker.py", "pretrain", str(tmp_path / "mlm"))
    preset = str(tmp_path / "mlm" / "none" / "final_preset")
    finetune = run_worker(
        "_tf_program_worker.py", "finetune", str(tmp_path / "classifier"), preset
    )
    for losses in (pretrain, finetune):
        # Keras averages the replicas' mean losses, and the masked LM's
        # replicas hold different numbers of masked tokens: close, not
        # equal. Batches skipped after Keras' model-building iteration
        # changed the second period's loss by 2e-3.
        np.testing.assert_allclose(losses["data"], losses["none"], rtol=5e-4)
