"""One of 2 TensorFlow workers fitting a small Keras model under
MultiWorkerMirroredStrategy, run as a script: `python _tf_multi_worker.py
INDEX PORT0,PORT1`. Prints the SHA-256 of its trained weights.

Keras 3.15's TensorFlow trainer fails before the first step here (see
test_multi_process.py); the programs refuse --num-processes on TensorFlow
until it does not.
"""

import hashlib
import json
import os
import sys

INDEX, PORTS = int(sys.argv[1]), sys.argv[2].split(",")
os.environ["KERAS_BACKEND"] = "tensorflow"
os.environ["TF_CONFIG"] = json.dumps(
    {
        "cluster": {"worker": [f"127.0.0.1:{port}" for port in PORTS]},
        "task": {"type": "worker", "index": INDEX},
    }
)

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

# Before any op: collectives are configured when the strategy is made.
strategy = tf.distribute.MultiWorkerMirroredStrategy()
keras.utils.set_random_seed(0)
with strategy.scope():
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
rng = np.random.default_rng(0)
features = rng.normal(size=(64, 8)).astype("float32")
labels = rng.integers(0, 2, 64)
# The global batch; the strategy gives each worker its half.
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)
model.fit(dataset, epochs=1, verbose=0)
digest = hashlib.sha256()
for weight in model.get_weights():
    digest.update(np.ascontiguousarray(weight).tobytes())
print(f"worker {INDEX} weights {digest.hexdigest()}")
