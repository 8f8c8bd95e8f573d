import keras

# (path regex, layout with "model" standing for the model-parallel axis).
# Each rule is anchored (^...$): Keras 3.14 and later match rules with
# re.fullmatch, Keras 3.12 and 3.13 with re.search, where an unanchored rule
# matches part of a path. An optional prefix lets the rules also match models
# that nest a block or a backbone under another name.
# Each variable path matches at most one rule (LayoutMap raises otherwise).
_MODEL = "model"
_RULES = (
    # Channel and token MLPs: gMLPBlock.expand, MixerBlock.*_expand.
    (r"^(?:.*/)?(?:token_|channel_)?expand/kernel$", (None, _MODEL)),
    (r"^(?:.*/)?(?:token_|channel_)?expand/bias$", (_MODEL,)),
    # gMLPBlock.output and MixerBlock.*_output, but not tiny_attention/output.
    (
        r"^(?:.*/)?(?!tiny_attention/)[^/]+/(?:token_|channel_)?output/kernel$",
        (_MODEL, None),
    ),
    (r"^(?:.*/)?spatial_gating_unit/norm/(?:gamma|beta)$", (_MODEL,)),
    (r"^(?:.*/)?tiny_attention/output/kernel$", (None, _MODEL)),
    (r"^(?:.*/)?tiny_attention/output/bias$", (_MODEL,)),
    (r"^(?:.*/)?(?:token|segment)_embedding/embeddings$", (None, _MODEL)),
)


def get_layout_map(
    device_mesh,
    model_parallel_dim_name="model",
    data_parallel_dim_name="batch",
):
    """A `keras.distribution.LayoutMap` for gMLP, aMLP and MLP-Mixer.

    Shards the channel MLPs Megatron-style along d_ffn (expand kernels by
    columns, output kernels by rows), the SGU's LayerNorm with the gates
    it normalises, and the text embeddings along the hidden axis; the SGU's
    spatial weights and all small variables are replicated. The module
    docstring of `keras_gmlp.distribution` explains each choice and its
    communication. Variables are never sharded along
    `data_parallel_dim_name`: that axis splits the batch.

    The map holds regular expressions of variable paths, so it does not
    depend on the model's sizes. Pass it to
    `keras_gmlp.distribution.ModelParallel`, which replicates any axis the
    mesh does not divide (with a warning) instead of failing.

    Args:
        device_mesh: `keras.distribution.DeviceMesh` with both axis names.
        model_parallel_dim_name: str, the mesh axis variables are sharded
            along.
        data_parallel_dim_name: str, the mesh axis the batch is split along.

    Returns:
        A `keras.distribution.LayoutMap`.

    Examples:

    ```python
    devices = keras.distribution.list_devices()  # e.g. 8 devices
    mesh = keras.distribution.DeviceMesh(
        shape=(2, 4), axis_names=("batch", "model"), devices=devices
    )
    layout_map = keras_gmlp.distribution.get_layout_map(mesh)
    distribution = keras_gmlp.distribution.ModelParallel(
        layout_map=layout_map, batch_dim_name="batch"
    )
    with distribution.scope():
        model = keras_gmlp.applications.gMLPS()
    ```
    """
    if not isinstance(device_mesh, keras.distribution.DeviceMesh):
        raise ValueError(
            "Argument `device_mesh` must be a `keras.distribution.DeviceMesh`. "
            f"Received: device_mesh={device_mesh!r}"
        )
    for argument, value in (
        ("model_parallel_dim_name", model_parallel_dim_name),
        ("data_parallel_dim_name", data_parallel_dim_name),
    ):
        if value not in device_mesh.axis_names:
            raise ValueError(
                f"Argument `{argument}` must be one of the mesh's axis names "
                f"{list(device_mesh.axis_names)}. Received: {argument}={value!r}"
            )
    if model_parallel_dim_name == data_parallel_dim_name:
        raise ValueError(
            "The model- and data-parallel axes must differ. Received: "
            f"model_parallel_dim_name={model_parallel_dim_name!r}, "
            f"data_parallel_dim_name={data_parallel_dim_name!r}"
        )
    layout_map = keras.distribution.LayoutMap(device_mesh)
    for pattern, axes in _RULES:
        layout_map[pattern] = tuple(
            model_parallel_dim_name if axis == _MODEL else axis for axis in axes
        )
    return layout_map
