"""gMLP and aMLP text models on keras-hub's task classes."""

from keras_gmlp.models.gmlp.causal_lm_perplexity import CausalLMPerplexity
from keras_gmlp.models.gmlp.gmlp_backbone import gMLPBackbone
from keras_gmlp.models.gmlp.gmlp_causal_lm import gMLPCausalLM
from keras_gmlp.models.gmlp.gmlp_causal_lm_preprocessor import gMLPCausalLMPreprocessor
from keras_gmlp.models.gmlp.gmlp_masked_lm import gMLPMaskedLM
from keras_gmlp.models.gmlp.gmlp_masked_lm_preprocessor import gMLPMaskedLMPreprocessor
from keras_gmlp.models.gmlp.gmlp_text_classifier import gMLPTextClassifier
from keras_gmlp.models.gmlp.gmlp_text_classifier_preprocessor import (
    gMLPTextClassifierPreprocessor,
)
from keras_gmlp.models.gmlp.gmlp_tokenizer import gMLPTokenizer
from keras_gmlp.models.gmlp.masked_lm_accuracy import MaskedLMAccuracy
from keras_gmlp.models.gmlp.masked_lm_perplexity import MaskedLMPerplexity
