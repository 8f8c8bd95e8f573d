"""What the gMLP and MLP-Mixer image backbones share: input checks, the
channels-first wrapper, the feature grid and intermediate outputs, and
`from_preset` for timm checkpoints."""

import keras
from keras_hub.models import Backbone

from keras_gmlp.layers._patch_mlp import block_drop_path_rates
from keras_gmlp.layers._patch_mlp import check_data_format
from keras_gmlp.layers._patch_mlp import check_image_shape
from keras_gmlp.layers._patch_mlp import patch_mlp
from keras_gmlp.layers._validation import check_batch_not_empty
from keras_gmlp.layers._validation import check_positive_int
from keras_gmlp.layers._validation import known
from keras_gmlp.models._lora import LoraTargets
from keras_gmlp.models._timm_presets import TimmPresetsMixin
from keras_gmlp.utils._checked_steps import CheckedSteps
from keras_gmlp.utils.export import CheckedExport

# Docstring text both image backbones share: what `from_preset` loads
# besides the family's preset names, and the Args after the block widths.
FROM_TIMM_LAYOUT_DOC = """handle or a local directory in timm's Hugging Face layout
    (`config.json` with `architecture` and `pretrained_cfg`, and
    `model.safetensors`), converted without torch."""

COMMON_BACKBONE_ARGS_DOC = """        image_shape: `(height, width, channels)` (`(channels, height,
            width)` with `"channels_first"`), height and width multiples of
            `patch_size`. Defaults to `(224, 224, 3)`.
        drop_path_rate: float in `[0, 1)`, stochastic depth rate of the last
            block, increasing linearly from 0 over the blocks; or a list of
            one rate per block. A timm checkpoint's rate goes to every
            block, as timm's `MlpMixer` applies it.
        data_format: `"channels_last"` or `"channels_first"`; defaults to
            `keras.config.image_data_format()`.
        dtype: string or `keras.DTypePolicy`, the dtype policy of the
            computations and weights. Norms compute in float32.
        **kwargs: standard `keras.Model` arguments such as `name`."""


class PatchMLPImageBackbone(
    CheckedExport, CheckedSteps, TimmPresetsMixin, LoraTargets, Backbone
):
    """Base of the patch-MLP image backbones; subclasses give the blocks.

    The model maps images `(batch, height, width, channels)` (channels
    first with `data_format="channels_first"`, and `image_shape` then
    `(channels, height, width)`, as in keras-hub) to the normalised token grid
    `(batch, rows, columns, hidden_dim)`, the features timm's head pools.
    """

    def __init__(
        self,
        make_block,
        patch_size,
        num_layers,
        hidden_dim,
        image_shape,
        drop_path_rate,
        data_format,
        dtype,
        **kwargs,
    ):
        data_format = check_data_format(data_format)

        # === Functional Model ===
        image_input = keras.Input(shape=tuple(image_shape), name="images")
        x = image_input
        if data_format == "channels_first":
            # The blocks are channels-last on every backend (PatchEmbedding).
            x = keras.layers.Permute((2, 3, 1), dtype=dtype, name="to_channels_last")(x)
        features = patch_mlp(
            x,
            make_block,
            num_layers,
            hidden_dim,
            patch_size,
            drop_path_rate=drop_path_rate,
            dtype=dtype,
        )
        self.stem = features["stem"]
        self.blocks = features["blocks"]
        self.norm = features["norm"]
        self._block_outputs = features["block_outputs"]
        grid = features["grid"]
        outputs = self._to_grid(
            features["tokens"], grid, hidden_dim, data_format, dtype, "feature_map"
        )
        super().__init__(inputs=image_input, outputs=outputs, dtype=dtype, **kwargs)

        # === Config ===
        self.patch_size = patch_size
        self.num_layers = num_layers
        self.hidden_dim = hidden_dim
        self.image_shape = tuple(image_shape)
        self.drop_path_rate = drop_path_rate
        self.data_format = data_format
        self.grid_shape = grid

    def call(self, inputs, training=None, mask=None, **kwargs):
        # Symbolic calls go through `compute_output_spec`; this runs on real
        # (or traced) tensors. Keras' input spec lets a last axis of 1
        # through, and a traced TensorFlow step may not know the sizes:
        # `check_batch_inputs` covers that.
        check_images_shape(
            inputs, self.image_shape, self.data_format, self.__class__.__name__
        )
        return super().call(inputs, training=training, mask=mask, **kwargs)

    def check_batch_inputs(self, x):
        check_images_shape(
            x, self.image_shape, self.data_format, self.__class__.__name__
        )

    @staticmethod
    def _to_grid(tokens, grid, hidden_dim, data_format, dtype, name):
        x = keras.layers.Reshape(grid + (hidden_dim,), dtype=dtype, name=name)(tokens)
        if data_format == "channels_first":
            x = keras.layers.Permute(
                (3, 1, 2), dtype=dtype, name=f"{name}_channels_first"
            )(x)
        return x

    def feature_extractor(self, indices=None, norm=False, name=None):
        """A model returning the outputs of chosen blocks.

        The Keras counterpart of timm's `forward_intermediates(...,
        intermediates_only=True)`: the result shares this backbone's input
        and weights, and maps images to a dict `{"blocks_{i}": features}`,
        each a grid `(batch, rows, columns, hidden_dim)` (channels first
        with `data_format="channels_first"`, timm's `output_fmt="NCHW"`).

        Args:
            indices: which blocks: `None` for all, an int `n` for the last
                `n`, or a list of block indices (negative ones count from
                the end), as in timm.
            norm: bool, whether to apply the final layer normalisation to
                each output (timm's `norm=True`).
            name: optional name of the returned model.

        Returns:
            A `keras.Model`.

        Examples:

        ```python
        backbone = keras_gmlp.models.gMLPImageBackbone.from_preset(
            "hf://timm/gmlp_s16_224.ra3_in1k"
        )
        extractor = backbone.feature_extractor(indices=[9, 19, 29])
        features = extractor(images)  # {"blocks_9": (batch, 14, 14, 256), ...}
        ```
        """
        count = self.num_layers
        if indices is None:
            chosen = list(range(count))
        elif isinstance(indices, int) and not isinstance(indices, bool):
            if not 1 <= indices <= count:
                raise ValueError(
                    f"An int `indices` takes the last n of the {count} blocks, "
                    f"1 <= n <= {count}. Received: indices={indices}"
                )
            chosen = list(range(count - indices, count))
        elif isinstance(indices, (list, tuple)):
            chosen = []
            for index in indices:
                if (
                    isinstance(index, bool)
                    or not isinstance(index, int)
                    or not (-count <= index < count)
                ):
                    raise ValueError(
                        f"`indices` must be block indices in [{-count}, "
                        f"{count - 1}]. Received: indices={indices!r}"
                    )
                chosen.append(index % count)
        else:
            raise ValueError(
                "`indices` must be None, an int or a list of ints. "
                f"Received: indices={indices!r}"
            )
        outputs = {}
        for index in chosen:
            x = self._block_outputs[index]
            if norm:
                x = self.norm(x)
            outputs[f"blocks_{index}"] = self._to_grid(
                x,
                self.grid_shape,
                self.hidden_dim,
                self.data_format,
                self.dtype_policy,
                f"blocks_{index}_grid",
            )
        return keras.Model(self.input, outputs, name=name or f"{self.name}_features")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "patch_size": self.patch_size,
                "num_layers": self.num_layers,
                "hidden_dim": self.hidden_dim,
                "image_shape": self.image_shape,
                "drop_path_rate": self.drop_path_rate,
                "data_format": self.data_format,
            }
        )
        return config


def check_images_shape(images, image_shape, data_format, owner):
    """Raises unless `images` (a batch, or None) has the backbone's
    `image_shape` in every size known now, and at least one image."""
    shape = getattr(images, "shape", None)
    if shape is None:
        return
    check_batch_not_empty(owner, "images", shape)
    shape = tuple(known(size) for size in shape)
    if len(shape) == 4 and all(
        size is None or size == want for size, want in zip(shape[1:], image_shape)
    ):
        return
    layout = (
        "channels, height, width"
        if data_format == "channels_first"
        else ("height, width, channels")
    )
    raise ValueError(
        f"{owner} was built for `images` of shape (batch, {layout}) = "
        f"(batch, {', '.join(str(size) for size in image_shape)}). "
        f"Received: images.shape={shape}"
    )


def check_backbone_arguments(
    patch_size, num_layers, dims, image_shape, drop_path_rate, data_format
):
    """Checks the shared arguments before any layer is built."""
    check_positive_int("patch_size", patch_size)
    check_positive_int("num_layers", num_layers)
    for name, value in dims.items():
        check_positive_int(name, value)
    block_drop_path_rates(drop_path_rate, num_layers)
    check_image_shape(image_shape, patch_size, check_data_format(data_format))
