"""The causal-LM program's model: a causal gMLP, or aMLP with a tiny causal
attention, of the flags' size, with its preprocessor (so that its presets
take raw text)."""


def build_causal_lm(args, tokenizer):
    """The causal LM of --model, --num-layers, --hidden-dim,
    --intermediate-dim, --attention-dim and --sequence-length over
    `tokenizer`'s vocabulary."""
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPCausalLM
    from keras_gmlp.models import gMLPCausalLMPreprocessor

    backbone = gMLPBackbone(
        vocabulary_size=tokenizer.vocabulary_size(),
        num_layers=args.num_layers,
        hidden_dim=args.hidden_dim,
        intermediate_dim=args.intermediate_dim,
        max_sequence_length=args.sequence_length,
        attention_dim=args.attention_dim,
        causal=True,
        dropout=args.dropout,
    )
    return gMLPCausalLM(
        backbone,
        gMLPCausalLMPreprocessor(tokenizer, sequence_length=args.sequence_length),
    )
