import math
import warnings

import keras


class ModelParallel(keras.distribution.ModelParallel):
    """`keras.distribution.ModelParallel` that never shards a non-dividing axis.

    A `LayoutMap` is looked up by variable path only, so a rule such as
    "shard the expand kernel's columns along `model`" cannot know whether
    the mesh's `model` axis divides a particular model's d_ffn. This
    distribution checks each variable when it is created: an axis whose
    size is not a multiple of the number of shards assigned to it is
    replicated instead, with a `UserWarning` naming the variable, the axis
    and both sizes. Layouts that divide are used unchanged, so with a mesh
    that fits the model this behaves exactly like Keras' class.

    Args:
        layout_map: `keras.distribution.LayoutMap`, e.g. from
            `keras_gmlp.distribution.get_layout_map`.
        batch_dim_name: optional str, the mesh axis that splits the batch;
            defaults to the mesh's first axis.
        auto_shard_dataset: bool, whether to shard a `tf.data` dataset
            between processes in a multi-process run.
        **kwargs: further arguments of `keras.distribution.ModelParallel`.

    Examples:

    ```python
    mesh = keras.distribution.DeviceMesh((2, 4), ("batch", "model"))
    distribution = keras_gmlp.distribution.ModelParallel(
        layout_map=keras_gmlp.distribution.get_layout_map(mesh),
        batch_dim_name="batch",
    )
    keras.distribution.set_distribution(distribution)
    # d_ffn = 6 is not divisible by 4: the expand kernel is replicated and
    # a warning says so.
    model = keras_gmlp.applications.gmlp.gMLP(
        num_blocks=1, hidden_dim=8, intermediate_dim=6, patch_size=4,
        input_shape=(16, 16, 3), classes=10,
    )
    ```
    """

    def get_variable_layout(self, variable):
        layout = super().get_variable_layout(variable)
        # A backend-native layout set on the variable by the user is theirs.
        if not isinstance(layout, keras.distribution.TensorLayout):
            return layout
        mesh_sizes = dict(zip(self.device_mesh.axis_names, self.device_mesh.shape))
        axes = list(layout.axes)
        for index, (mesh_axes, size) in enumerate(zip(axes, variable.shape)):
            if mesh_axes is None:
                continue
            names = (mesh_axes,) if isinstance(mesh_axes, str) else mesh_axes
            shards = math.prod(mesh_sizes[name] for name in names)
            if size % shards:
                warnings.warn(
                    f"Variable '{variable.path}' of shape {tuple(variable.shape)}: "
                    f"axis {index} (size {size}) is not divisible by the "
                    f"{shards} shards of mesh axis {mesh_axes!r}; replicating "
                    "that axis instead.",
                    stacklevel=2,
                )
                axes[index] = None
        if axes == list(layout.axes):
            return layout
        return keras.distribution.TensorLayout(axes, self.device_mesh)
