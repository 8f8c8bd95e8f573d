"""The masked-LM program's model: a small gMLP/aMLP encoder, or one of the
paper's configurations (keras_gmlp.applications)."""

from .recipe import PAPER_MODELS


def build_masked_lm(args, vocabulary_size):
    import keras_gmlp
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPMaskedLM

    if args.model in PAPER_MODELS:
        builder = getattr(keras_gmlp.applications, PAPER_MODELS[args.model])
        return builder(
            vocabulary_size=vocabulary_size,
            sequence_length=args.sequence_length,
            dropout=args.dropout,
        )
    backbone = gMLPBackbone(
        vocabulary_size=vocabulary_size,
        num_layers=args.num_layers,
        hidden_dim=args.hidden_dim,
        intermediate_dim=args.intermediate_dim,
        max_sequence_length=args.sequence_length,
        attention_dim=args.attention_dim,
        dropout=args.dropout,
    )
    return gMLPMaskedLM(backbone)
