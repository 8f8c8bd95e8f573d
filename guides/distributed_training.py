"""
Title: Distributed training with keras-gmlp
Author: keras-gmlp contributors
Date created: 2025/01/01
Last modified: 2026/11/23
Description: Data- and model-parallel training of gMLP with keras.distribution on JAX and tf.distribute on TensorFlow.
Accelerator: None (runs on virtual CPU devices); the same code on GPU/TPU
"""

"""
## Introduction

keras-gmlp does not bring its own distributed runtime. It runs on the ones
your backend already has:

| Backend | Data parallel | Model parallel | Multi-host |
| --- | --- | --- | --- |
| JAX | `keras.distribution.DataParallel` | `keras_gmlp.distribution.ModelParallel` + `get_layout_map` | `keras.distribution.initialize()` |
| TensorFlow | `tf.distribute.MirroredStrategy`, `TPUStrategy` | not offered (see below) | `TPUStrategy` (not `MultiWorkerMirroredStrategy`, see below) |
| PyTorch | your own `DistributedDataParallel` loop | no | `torchrun` |

With JAX (the default here) this guide runs on 8 *virtual* CPU devices, so
it finishes on a laptop; on a GPU or TPU host, delete the `XLA_FLAGS` line
and the same code uses the real accelerators. With
`KERAS_BACKEND=tensorflow` it runs `MirroredStrategy` on 2 logical CPUs;
with `KERAS_BACKEND=torch` it trains on one device (see the last section).
"""

"""
## Setup

Devices are fixed when the runtime starts: XLA reads `XLA_FLAGS` when JAX
is first imported, and TensorFlow's logical devices must be configured
before it runs anything. Both happen before `import keras`.
"""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")
BACKEND = os.environ["KERAS_BACKEND"]
if BACKEND == "jax":
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    )
elif BACKEND == "tensorflow":
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )

import keras
import numpy as np
from sklearn.datasets import load_digits

import keras_gmlp
import keras_gmlp.models
from keras_gmlp.applications.gmlp import gMLP

# `KERAS_GMLP_GUIDE_FAST=1` trains for fewer epochs, so CI can run the guide.
FAST = os.environ.get("KERAS_GMLP_GUIDE_FAST") == "1"
EPOCHS = 2 if FAST else 10
keras.utils.set_random_seed(42)

if BACKEND == "jax":
    devices = keras.distribution.list_devices()
elif BACKEND == "tensorflow":
    devices = [device.name for device in tf.config.list_logical_devices("CPU")]
else:  # PyTorch: Keras' fit uses one device, the first GPU if any
    import torch

    devices = ["cuda:0" if torch.cuda.is_available() else "cpu"]
print(f"{len(devices)} devices:", devices)

"""
## Data and model

scikit-learn's handwritten digits (8x8 pixels, shipped with the library),
as RGB images in `[0, 255]`, and a small gMLP with 2x2 patches. The global
batch must be a multiple of the number of data-parallel replicas; so are
the sizes of the training and test sets, so that no batch is partial.
"""

digits = load_digits()
images = np.repeat(digits.images[..., None] * (255.0 / 16.0), 3, axis=-1)
images, labels = images.astype("float32"), digits.target
train_images, train_labels = images[:1408], labels[:1408]
test_images, test_labels = images[1408:1792], labels[1408:1792]
BATCH_SIZE = 64


def make_model():
    model = gMLP(
        num_blocks=2,
        hidden_dim=32,
        intermediate_dim=128,
        patch_size=2,
        input_shape=(8, 8, 3),
        classes=10,
        name="gmlp_digits",
    )
    model.compile(
        optimizer=keras.optimizers.AdamW(3e-3),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def train_and_test(model):
    model.fit(
        train_images, train_labels, batch_size=BATCH_SIZE, epochs=EPOCHS, verbose=2
    )
    _, accuracy = model.evaluate(
        test_images, test_labels, batch_size=BATCH_SIZE, verbose=0
    )
    print(f"Test accuracy: {accuracy:.3f} (chance: 0.1)")
    return accuracy


"""
## Data parallelism

`DataParallel` replicates every variable on every device and splits each
batch along the devices; gradients are averaged by an all-reduce that XLA
inserts. The losses are those of single-device training up to float
round-off (the test suite checks 3 steps to 1e-5).
"""

if BACKEND == "jax":
    data_parallel = keras.distribution.DataParallel(devices=devices)
    with data_parallel.scope():
        test_accuracy = train_and_test(make_model())

"""
## Model parallelism

When the weights (or their optimizer state) no longer fit one device,
shard them. A `DeviceMesh` names two axes: `"batch"` splits the data,
`"model"` splits the variables. `keras_gmlp.distribution.get_layout_map`
returns the rules for every model in the library:

- the channel MLP is sharded Megatron-style along d_ffn: the `expand`
  kernel by columns, the `output` kernel by rows, so each block needs one
  all-reduce of its `(batch, length, d)` output;
- the spatial gating unit's LayerNorm follows its channel-sharded gates
  (an all-reduce of the mean and variance per token), while its token
  projection `W` is replicated: it mixes tokens, not channels, so every
  device applies it to its own channels without communicating;
- the split of the gates into halves `u` and `v` does not line up with a
  contiguous d_ffn sharding, so XLA reshards them (an exchange of about
  half of each device's activations per block). The results are exact;
- text embeddings are sharded along the hidden axis (BERT's 30,522-token
  vocabulary does not divide by 4 or 8).
"""

if BACKEND == "jax":
    mesh = keras.distribution.DeviceMesh(
        shape=(2, 4), axis_names=("batch", "model"), devices=devices
    )
    layout_map = keras_gmlp.distribution.get_layout_map(mesh)
    for pattern, layout in layout_map.items():
        print(f"{pattern:68s} {layout.axes}")

"""
Use `keras_gmlp.distribution.ModelParallel`, a drop-in for Keras' class.
A `LayoutMap` sees only variable paths, not shapes; this class checks each
variable when it is created and replicates an axis that the mesh does not
divide, with a warning, instead of failing as Keras' `ModelParallel` does.
"""

if BACKEND == "jax":
    model_parallel = keras_gmlp.distribution.ModelParallel(
        layout_map=layout_map, batch_dim_name="batch"
    )
    with model_parallel.scope():
        model = make_model()
        test_accuracy = train_and_test(model)
    for variable in model.weights[4:12]:
        print(f"{variable.path:45s} {variable.value.sharding.spec}")

"""
The text models work the same way; `gMLPBackbone.get_layout_map` returns
the same map in keras-hub's style:

```python
mesh = keras.distribution.DeviceMesh((2, 4), ("batch", "model"), devices)
distribution = keras_gmlp.distribution.ModelParallel(
    layout_map=keras_gmlp.models.gMLPBackbone.get_layout_map(mesh),
    batch_dim_name="batch",
)
with distribution.scope():
    masked_lm = keras_gmlp.models.gMLPMaskedLM.from_preset("./my_preset")
```

Instead of a scope you may call `keras.distribution.set_distribution(...)`
once, before building any model.
"""

"""
## Many hosts (TPU pods, multi-node GPU)

Every host runs the same program. Call `keras.distribution.initialize()`
first: on Cloud TPU it reads the pod's configuration from the environment;
on GPU clusters pass the coordinator's address, the number of processes
and this process's id (or set `KERAS_DISTRIBUTION_JOB_ADDRESSES`,
`KERAS_DISTRIBUTION_NUM_PROCESSES`, `KERAS_DISTRIBUTION_PROCESS_ID`).
`list_devices()` then returns the devices of all hosts, and the mesh spans
them. Give each host its own shard of the data: a `tf.data.Dataset` passed
to `fit` is sharded per process automatically (`auto_shard_dataset=True`).

```python
keras.distribution.initialize(
    job_addresses="10.0.0.1:1234", num_processes=2, process_id=0
)
devices = keras.distribution.list_devices()  # all hosts' devices
mesh = keras.distribution.DeviceMesh((len(devices) // 8, 8),
                                     ("batch", "model"), devices)
```

Keep the `"model"` axis within a host (8 devices here): its all-reduces
run once per block, while the `"batch"` axis communicates once per step.

The programs in `applications/` take the same three facts as flags. Two
processes on one machine train as two hosts would (on JAX, CPU collectives
go over gloo); on two hosts, use the first host's address and start one
command on each. Each process reads its own shards of the input and
`--batch-size` stays the global batch; only process 0 writes outputs, and
if one process dies the other stops with one line, and rerunning both
resumes from the last checkpoint:

```shell
for i in 0 1; do
  KERAS_BACKEND=jax .venv/bin/python applications/pretrain_mlm.py --distribute data \
    --coordinator 127.0.0.1:8476 --num-processes 2 --process-id $i &
done; wait
```

The programs run several processes on JAX; on TensorFlow they train in
one process (`MirroredStrategy` over its devices).
"""

"""
## TensorFlow: tf.distribute

With `KERAS_BACKEND=tensorflow`, build and compile the model inside a
strategy's scope; `fit` then splits each batch over the replicas and
averages the gradients (`tests/distribution/_tf_worker.py` checks that
`MirroredStrategy` on two logical CPUs reproduces single-device losses).
Here the two logical CPUs configured in the setup stand in for two GPUs;
`tf.distribute.MirroredStrategy()` without arguments takes every local GPU.

On TPU, connect first and use `TPUStrategy` the same way:

```python
resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.TPUStrategy(resolver)
```
"""

if BACKEND == "tensorflow":
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    print("Replicas in sync:", strategy.num_replicas_in_sync)
    with strategy.scope():
        model = make_model()
    # The batch is global: 32 examples per replica here.
    test_accuracy = train_and_test(model)

"""
These strategies are data-parallel (variables mirrored). Keras 3.15's
`fit` fails under `MultiWorkerMirroredStrategy` before its first step
(keras-team/keras#20585; `tests/distribution/test_multi_process.py` says
when that changes): train across hosts with JAX. Keras' own
`keras.distribution` support for TensorFlow (DTensor) is an experimental
prototype; for sharded variables, use the JAX backend.

## PyTorch

Keras 3 has no `keras.distribution` implementation for the torch backend
and `fit` runs on one device, as below. A Keras model is a
`torch.nn.Module`, so data parallelism works with a hand-written training
loop under `torch.nn.parallel.DistributedDataParallel` launched by
`torchrun` (see the keras.io guide "Multi-GPU distributed training with
PyTorch"); model parallelism is not supported there.
"""

if BACKEND == "torch":
    test_accuracy = train_and_test(make_model())
