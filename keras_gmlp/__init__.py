"""keras-gmlp: gMLP, aMLP and MLP-Mixer for Keras 3.

`import keras_gmlp` imports only Keras: it brings in the layers, the
keras.applications-style builders, the distribution helpers and the
plotting helpers, and registers the layers with Keras. The model families
in `keras_gmlp.models` subclass keras-hub, which imports TensorFlow, so
they load with `import keras_gmlp.models`; that import also registers
them, so `keras.saving.load_model` finds saved text and keras-hub image
models.
"""

from keras_gmlp import applications
from keras_gmlp import distribution
from keras_gmlp import layers
from keras_gmlp import visualization
from keras_gmlp.utils import _tensorflow_start

__version__ = "0.1.0"

# On the TensorFlow backend: no `failed call to cuInit` error line on a
# machine without a GPU driver.
_tensorflow_start.initialise_tensorflow_devices_quietly()

__all__ = ["applications", "distribution", "layers", "visualization"]
