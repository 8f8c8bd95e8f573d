"""keras.applications-style builders.

Image classifiers: gMLPTi, gMLPS, gMLPB (gMLP Tiny/Small/Base, patch 16)
and MixerS16 ... MixerL32, thin wrappers over the architecture of the
keras-hub image backbones `keras_gmlp.models.gMLPImageBackbone` and
`MLPMixerBackbone`. Text encoders (masked-LM pretraining): gMLPBase,
gMLPLarge, aMLPBase, aMLPLarge, over `keras_gmlp.models.gMLPBackbone`.
Note `gMLPB` (image) versus `gMLPBase` (text). `IMAGE_CLASSIFIER_VARIANTS`
maps each image variant's short name (`"gmlp_s16"`, `"mixer_b16"`, ...) to
its row of the family's variant table: builder name, sizes, patch size,
parameter count, timm name and public ImageNet weights. `enable_lora(model,
rank)` fine-tunes an image model with LoRA factors on its blocks' channel
projections and its head, the other weights frozen.

Importing this package imports only keras. The masked-language-model
encoders (gMLPBase, gMLPLarge, aMLPBase, aMLPLarge) are built on keras-hub,
which they import (with TensorFlow) when first called.
"""

from keras_gmlp.applications.gmlp import gMLPB
from keras_gmlp.applications.gmlp import gMLPS
from keras_gmlp.applications.gmlp import gMLPTi
from keras_gmlp.applications.imagenet_utils import decode_predictions
from keras_gmlp.applications.imagenet_utils import preprocess_input
from keras_gmlp.applications.lora import enable_lora
from keras_gmlp.applications.mlp_mixer import MixerB16
from keras_gmlp.applications.mlp_mixer import MixerB32
from keras_gmlp.applications.mlp_mixer import MixerL16
from keras_gmlp.applications.mlp_mixer import MixerL32
from keras_gmlp.applications.mlp_mixer import MixerS16
from keras_gmlp.applications.mlp_mixer import MixerS32
from keras_gmlp.applications.text_encoders import aMLPBase
from keras_gmlp.applications.text_encoders import aMLPLarge
from keras_gmlp.applications.text_encoders import gMLPBase
from keras_gmlp.applications.text_encoders import gMLPLarge
from keras_gmlp.utils.timm.state_dict import load_timm_weights
from keras_gmlp.utils.timm.state_dict import timm_state_dict
from keras_gmlp.utils.variants import IMAGE_CLASSIFIER_VARIANTS
