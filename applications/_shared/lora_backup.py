"""The LoRA factors of an interrupted --lora-rank run, kept with its backup
(`callbacks.fit_resumably` adds the callback for a model with LoRA).

Keras saves a LoRA layer's kernel merged with its factors and, loading it,
sets the factors to zero: the epoch backup restores the function the model
computed but not its factors, and with both factors at zero their gradients
are zero too. So each epoch's frozen kernels and factors are kept beside the
backup and put back when a resumed fit begins.
"""

import zipfile

import keras
import numpy as np

from .files import atomic_path
from .files import is_writer
from .run_state import damaged


def lora_layer_variables(model):
    """The variables of the layers of `model` with LoRA enabled: those whose
    path shares its layer's prefix with a `lora_kernel_a`."""
    layers = {
        v.path.rpartition("/")[0]
        for v in model.weights
        if v.path.endswith("/lora_kernel_a")
    }
    return [v for v in model.weights if v.path.rpartition("/")[0] in layers]


class LoraFactorBackup(keras.callbacks.Callback):
    """Writes `lora-epoch-k.npz` in `backup_dir` at the end of epoch k (the
    variables of every LoRA layer: frozen kernel, factors, bias), before the
    epoch's backup names epoch k as the latest; keeps the previous epoch's
    file, which the backup may still name. A fit that starts after epoch
    k > 0 (resumed, its backup restored when training began) loads epoch
    k's file at its first epoch's beginning."""

    def __init__(self, backup_dir):
        super().__init__()
        self.backup_dir = backup_dir

    def path(self, epoch):
        return self.backup_dir / f"lora-epoch-{epoch}.npz"

    def variables(self):
        return lora_layer_variables(self.model)

    def on_train_begin(self, logs=None):
        self.first_epoch = True

    def on_epoch_begin(self, epoch, logs=None):
        if not self.first_epoch:
            return
        self.first_epoch = False
        if epoch == 0:
            return
        path = self.path(epoch)
        try:
            with np.load(path) as saved:
                values = [saved[v.path] for v in self.variables()]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
            raise damaged(path, str(error) or type(error).__name__) from None
        for variable, value in zip(self.variables(), values):
            variable.assign(value)

    def on_epoch_end(self, epoch, logs=None):
        arrays = {v.path: keras.ops.convert_to_numpy(v) for v in self.variables()}
        if is_writer():
            self.backup_dir.mkdir(parents=True, exist_ok=True)
        with atomic_path(self.path(epoch + 1)) as temporary:
            np.savez(temporary, **arrays)
        if is_writer():
            for old in self.backup_dir.glob("lora-epoch-*.npz"):
                if int(old.stem.split("-")[-1]) < epoch:
                    old.unlink(missing_ok=True)
