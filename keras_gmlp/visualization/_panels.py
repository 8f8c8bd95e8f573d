"""What the plotting functions share: choosing indices, reading weights,
and drawing one weight map with its colour bar."""

import keras
import numpy as np

from keras_gmlp.layers import PatchEmbedding


def spread(count, limit):
    """`limit` evenly spaced indices of `range(count)`, first and last included."""
    if count <= limit:
        return list(range(count))
    return sorted({int(round(i)) for i in np.linspace(0, count - 1, limit)})


def check_indices(name, indices, count):
    """`indices` as a list of ints in `[0, count)`; ValueError otherwise."""
    try:
        indices = [int(index) for index in indices]
    except (TypeError, ValueError):
        indices = None
    if not indices or any(not 0 <= index < count for index in indices):
        raise ValueError(
            f"`{name}` must be a non-empty list of indices in [0, {count}). "
            f"Received: {name}={indices if indices is not None else name!r}"
        )
    return indices


def layers_of_type(model, layer_type, function_name):
    """The model's (or its keras-hub backbone's) layers of `layer_type`."""
    model = getattr(model, "backbone", model)
    found = [
        layer for layer in getattr(model, "layers", []) if isinstance(layer, layer_type)
    ]
    if not found:
        raise ValueError(
            f"{function_name} needs a model with {layer_type.__name__} layers. "
            f"Received: model={getattr(model, 'name', model)!r}"
        )
    return found


def token_grid(model, grid_shape):
    """`(rows, columns)` of the patch grid: `grid_shape`, or the model's
    `PatchEmbedding` input."""
    if grid_shape is None:
        stems = [layer for layer in model.layers if isinstance(layer, PatchEmbedding)]
        if not stems:
            raise ValueError(
                "The model has no PatchEmbedding to read the token grid from; "
                "pass `grid_shape=(rows, columns)`. Received: grid_shape=None"
            )
        grid_shape = stems[0].grid_shape(stems[0].input.shape)
    rows, columns = (int(size) for size in grid_shape)
    return rows, columns


def to_numpy(variable):
    return np.asarray(keras.ops.convert_to_numpy(keras.ops.cast(variable, "float32")))


def draw_map(figure, ax, values, limit, cmap, title, colorbar=True):
    """One weight map on a symmetric colour scale (zero is white), with the
    patch grid's cell borders, a title and, optionally, its own colour bar."""
    limit = float(limit) or 1.0
    image = ax.imshow(values, cmap=cmap, vmin=-limit, vmax=limit)
    rows, columns = values.shape
    ax.set_xticks(np.arange(-0.5, columns, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, rows, 1), minor=True)
    if rows * columns <= 32 * 32:
        ax.grid(which="minor", color="0.85", linewidth=0.3)
    ax.tick_params(which="both", length=0, labelbottom=False, labelleft=False)
    ax.set_title(title, fontsize=7)
    if colorbar:
        bar = figure.colorbar(image, ax=ax, shrink=0.8, pad=0.02)
        bar.ax.tick_params(labelsize=5)
    return image
