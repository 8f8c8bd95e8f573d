"""The causal-LM program's training: the model (`model`) fitted on the
train stream of next-token windows, the checkpoint chosen on the
validation windows."""

from .data import inputs_and_labels
from .model import build_causal_lm


def train(args, run, tokenizer, train_source, validation):
    """Builds and trains the causal LM, choosing the checkpoint on the
    validation windows; returns (causal_lm, trainer, history, initial
    Toeplitz scores)."""
    import keras
    from _text_training.training import fit_language_model
    from _text_training.training import language_model_stream

    from keras_gmlp.models import CausalLMPerplexity

    keras.utils.set_random_seed(args.seed)
    causal_lm = build_causal_lm(args, tokenizer)
    stream = language_model_stream(
        args,
        train_source,
        tokenizer,
        args.sequence_length + 1,
        lambda step, shard, rows: inputs_and_labels(rows),
    )
    trainer, history, initial_scores = fit_language_model(
        causal_lm,
        stream,
        validation,
        args,
        run,
        [CausalLMPerplexity()],
        monitor="val_causal_lm_perplexity",
    )
    return causal_lm, trainer, history, initial_scores
