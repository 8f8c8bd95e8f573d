"""TensorFlow as the programs' input pipeline only.

On the JAX and PyTorch backends the programs use TensorFlow (when it is
installed, as the `all` extra installs it) for tf.data and keras-hub's
tokenizers alone. When its runtime starts it takes nearly all of every
GPU's memory it sees, which the backend that trains then lacks; so the
GPUs are hidden from it first.
"""

import sys


def keep_tensorflow_off_gpus():
    """Hides the GPUs from TensorFlow unless Keras runs on it; returns
    whether it did. Call it before TensorFlow runs anything (it cannot
    change its devices once its runtime has started): the programs call it
    right after their flags are read. Without TensorFlow it does nothing.
    Imports Keras (this module may be imported before the flags are)."""
    import keras

    if keras.backend.backend() == "tensorflow":
        return False
    try:
        import tensorflow as tf
    except ImportError:
        return False
    try:
        tf.config.set_visible_devices([], "GPU")
    except RuntimeError as error:  # its runtime has started already
        print(f"TensorFlow keeps its GPUs: {error}", file=sys.stderr, flush=True)
        return False
    return True
