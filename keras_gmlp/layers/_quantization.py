"""Keeps `model.quantize()` across a save and load for composite layers.

`Model.quantize` quantizes the Dense layers *inside* a block, but a block's
config records only the block's own dtype policy, so a reloaded block would
rebuild float Dense layers and refuse the saved int8 weights. keras-hub's
backbones solve this with a `keras.dtype_policies.DTypePolicyMap` (layer
path -> policy) as their `dtype`; sublayers created with the parent's
policy look their own path up in it. The blocks do the same.
"""

import keras

from keras_gmlp.layers._sublayers import nested_sublayers


def serialized_dtype(layer):
    """The `dtype` entry of `layer`'s config: its policy, or a policy map
    holding the policy of every quantized layer nested in it, if any."""
    policy = layer.dtype_policy
    if not isinstance(policy, keras.dtype_policies.DTypePolicyMap):
        quantized = {
            sublayer.path: sublayer.dtype_policy
            for sublayer in nested_sublayers(layer)
            if sublayer.quantization_mode is not None
        }
        if quantized:
            policy_map = keras.dtype_policies.DTypePolicyMap(default_policy=policy)
            for path, sublayer_policy in quantized.items():
                policy_map[path] = sublayer_policy
            policy = policy_map
    return keras.dtype_policies.serialize(policy)
