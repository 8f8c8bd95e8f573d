"""TensorFlow MirroredStrategy check, run as a script on 2 logical CPUs.

Run by test_distribution.py in a subprocess: logical devices must be
configured before TensorFlow initialises its runtime, and the backend is
fixed when keras is imported. Prints the per-step losses as JSON.
"""

import os

os.environ["KERAS_BACKEND"] = "tensorflow"

import json  # noqa: E402
import sys  # noqa: E402

import tensorflow as tf  # noqa: E402

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration()] * 2
)

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_gmlp.applications.gmlp import gMLP  # noqa: E402

BATCH, STEPS = 16, 3


def small_gmlp():
    return gMLP(
        num_blocks=2,
        hidden_dim=16,
        intermediate_dim=64,
        patch_size=2,
        input_shape=(8, 8, 3),
        classes=10,
        classifier_activation=None,
        include_preprocessing=False,
    )


class BatchLosses(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.losses = []

    def on_train_batch_end(self, batch, logs=None):
        self.losses.append(float(logs["loss"]))


def fit_losses(weights, strategy):
    with strategy.scope():
        model = small_gmlp()
        model.set_weights(weights)
        model.compile(
            optimizer=keras.optimizers.Adam(1e-2),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (BATCH * STEPS, 8, 8, 3)).astype("float32")
    y = rng.integers(0, 10, (BATCH * STEPS,))
    record = BatchLosses()
    model.fit(
        x, y, batch_size=BATCH, epochs=1, shuffle=False, callbacks=[record], verbose=0
    )
    return model, record.losses


def main():
    keras.utils.set_random_seed(0)
    weights = small_gmlp().get_weights()
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    single_model, single = fit_losses(weights, tf.distribute.get_strategy())
    mirrored_model, parallel = fit_losses(weights, mirrored)
    json.dump(
        {
            "replicas": mirrored.num_replicas_in_sync,
            "single_losses": single,
            "mirrored_losses": parallel,
            "max_loss_diff": max(abs(a - b) for a, b in zip(single, parallel)),
            "max_weight_diff": max(
                float(np.max(np.abs(a - b)))
                for a, b in zip(
                    single_model.get_weights(), mirrored_model.get_weights()
                )
            ),
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
