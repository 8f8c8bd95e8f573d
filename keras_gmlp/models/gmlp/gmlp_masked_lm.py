import keras
from keras_hub.layers import MaskedLMHead
from keras_hub.models import MaskedLM

from keras_gmlp.layers._kernels import gelu
from keras_gmlp.layers._sublayers import nested_sublayers
from keras_gmlp.models.gmlp._checks import CheckedTextSteps
from keras_gmlp.models.gmlp._checks import check_preprocessor_matches
from keras_gmlp.models.gmlp._quantization_structure import quantization_layer_structure
from keras_gmlp.models.gmlp.gmlp_backbone import gmlp_embedding_initializer
from keras_gmlp.models.gmlp.gmlp_backbone import gMLPBackbone
from keras_gmlp.models.gmlp.gmlp_masked_lm_preprocessor import gMLPMaskedLMPreprocessor
from keras_gmlp.utils.export import CheckedExport


@keras.saving.register_keras_serializable(package="keras_gmlp")
class gMLPMaskedLM(CheckedExport, CheckedTextSteps, MaskedLM):
    """A gMLP or aMLP encoder with a masked-language-modeling head.

    The head gathers the encoder's outputs at `"mask_positions"`, applies a
    dense layer with GELU and a layer normalisation (keras-hub's
    `MaskedLMHead`, as in BERT) and scores every token of the vocabulary
    with the transposed token embedding, so input and output embeddings are
    tied. Logits have shape `(batch, num_masked, vocabulary_size)`.

    With a `preprocessor`, `fit()`, `evaluate()` and `predict()` take raw
    strings and mask them on the fly; with `preprocessor=None` they take the
    preprocessor's output, e.g. from a `tf.data` pipeline. `compile()` has
    defaults: sparse categorical cross-entropy on logits, Adam 5e-5, and a
    weighted accuracy that ignores padded mask positions.

    Args:
        backbone: a `gMLPBackbone`.
        preprocessor: a `gMLPMaskedLMPreprocessor` or `None`. Its
            `sequence_length` and vocabulary must fit the backbone.

    Examples:

    ```python
    preprocessor = keras_gmlp.models.gMLPMaskedLMPreprocessor(
        tokenizer, sequence_length=128
    )
    backbone = keras_gmlp.models.gMLPBackbone(
        vocabulary_size=tokenizer.vocabulary_size(),
        num_layers=2,
        hidden_dim=64,
        intermediate_dim=256,
        max_sequence_length=128,
        attention_dim=32,
    )
    masked_lm = keras_gmlp.models.gMLPMaskedLM(backbone, preprocessor)
    masked_lm.fit(x=["The quick brown fox jumped.", "Call me Ishmael."])
    ```
    """

    backbone_cls = gMLPBackbone
    preprocessor_cls = gMLPMaskedLMPreprocessor

    def __init__(self, backbone, preprocessor=None, **kwargs):
        check_preprocessor_matches(backbone, preprocessor, self.__class__.__name__)
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.masked_lm_head = MaskedLMHead(
            vocabulary_size=backbone.vocabulary_size,
            token_embedding=backbone.token_embedding,
            # Keras' exact "gelu" is `erfc` on TensorFlow, which ONNX has no
            # operator for; this is the same GELU through `erf`.
            intermediate_activation=gelu,
            layer_norm_epsilon=1e-6,
            kernel_initializer=gmlp_embedding_initializer(),
            dtype=backbone.dtype_policy,
            name="mlm_head",
        )

        # === Functional Model ===
        inputs = {
            **backbone.input,
            "mask_positions": keras.Input(
                shape=(None,), dtype="int32", name="mask_positions"
            ),
        }
        sequence_output = backbone(backbone.input)["sequence_output"]
        outputs = self.masked_lm_head(sequence_output, inputs["mask_positions"])
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

    def get_quantization_layer_structure(self, mode=None):
        """The embedding, then the gMLP blocks: what `quantize("gptq")`
        and `quantize("awq")` calibrate block by block."""
        return quantization_layer_structure(self.backbone, mode)

    def get_config(self):
        config = super().get_config()
        # The head is built with the backbone's dtype policy, so after
        # `quantize()` its int8 layers are recorded in the backbone's policy
        # map; otherwise a reloaded head would be float and refuse the
        # saved int8 weights.
        head_layers = nested_sublayers(self.masked_lm_head)
        quantized = {
            layer.path: layer.dtype_policy
            for layer in head_layers
            if layer.quantization_mode is not None
        }
        if quantized:
            backbone_config = dict(config["backbone"]["config"])
            policy = keras.dtype_policies.get(backbone_config["dtype"])
            if not isinstance(policy, keras.dtype_policies.DTypePolicyMap):
                policy = keras.dtype_policies.DTypePolicyMap(default_policy=policy)
            for path, layer_policy in quantized.items():
                if path not in policy:  # the tied embedding is there already
                    policy[path] = layer_policy
            backbone_config["dtype"] = keras.dtype_policies.serialize(policy)
            config["backbone"] = dict(config["backbone"], config=backbone_config)
        return config
