"""Walks the layers nested inside a layer, through public attributes only.

Keras 3 has no public way to list a `Layer`'s sublayers (`Model.layers`
lists a model's top-level ones), yet a layer's sublayers are what Keras
tracks: the layers stored in its attributes, directly or in a list, tuple
or dict. Reading those with `vars()` gives the layers `Model.quantize`
walks, without relying on how Keras stores its tracking.
"""

import keras


def _attribute_layers(layer):
    """The layers `layer` holds in its attributes, one level down."""
    found = list(layer.layers) if isinstance(layer, keras.Model) else []
    for value in vars(layer).values():
        if isinstance(value, dict):
            value = list(value.values())
        candidates = value if isinstance(value, (list, tuple)) else [value]
        found.extend(item for item in candidates if isinstance(item, keras.Layer))
    return found


def nested_sublayers(layer):
    """Every layer inside `layer`, at any depth, each once, `layer` itself
    excluded. `InputLayer`s are left out: they hold no weights, no
    quantization and no state.

    Args:
        layer: a `keras.Layer` (or `keras.Model`).

    Returns:
        A list of layers, parents before their children.
    """
    sublayers, seen, pending = [], {id(layer)}, [layer]
    while pending:
        for child in _attribute_layers(pending.pop(0)):
            if id(child) in seen or isinstance(child, keras.layers.InputLayer):
                continue
            seen.add(id(child))
            sublayers.append(child)
            pending.append(child)
    return sublayers
