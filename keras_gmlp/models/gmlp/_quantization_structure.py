"""The block structure Keras' GPTQ and AWQ quantize a gMLP language model by.

`Model.quantize("gptq" | "awq", config)` runs the calibration text through
`pre_block_layers`, then quantizes the dense layers of each of the
`sequential_blocks` in turn from the inputs that block receives (keras-hub's
causal LMs give their embedding and transformer layers the same way). In a
gMLP block those are the channel projections and the tiny attention's; the
spatial gating unit's token-mixing matrix, the norms and the tied
embedding stay in float.
"""

import keras


class _BlockInputs(keras.layers.Layer):
    """Token ids to the first block's inputs, as the backbone makes them:
    the token embedding plus segment 0's (calibration text is one segment;
    the embeddings' dropout is off outside training)."""

    def __init__(self, backbone, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone

    def call(self, token_ids):
        backbone = self.backbone
        return backbone.embeddings_add(
            (
                backbone.token_embedding(token_ids),
                backbone.segment_embedding(keras.ops.zeros_like(token_ids)),
            )
        )


def quantization_layer_structure(backbone, mode):
    """`get_quantization_layer_structure`'s answer for a `gMLPBackbone`:
    None but for the structure-aware modes."""
    if mode not in ("gptq", "awq"):
        return None
    return {
        "pre_block_layers": [_BlockInputs(backbone)],
        "sequential_blocks": list(backbone.gmlp_blocks),
    }
