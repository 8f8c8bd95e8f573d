"""The masked-LM program's training: the model with its preprocessor,
fitted on the masked train stream, the checkpoint chosen on the validation
windows."""

from .data import masking
from .model import build_masked_lm


def train(args, run, tokenizer, train_source, validation):
    """Builds and trains the masked LM, choosing the checkpoint on
    `validation`; returns (model, trainer, history, initial Toeplitz
    scores)."""
    import keras
    from _text_training.training import fit_language_model
    from _text_training.training import language_model_stream

    from keras_gmlp.models import MaskedLMAccuracy
    from keras_gmlp.models import MaskedLMPerplexity
    from keras_gmlp.models import gMLPMaskedLMPreprocessor

    vocabulary_size = tokenizer.vocabulary_size()
    num_slots = validation[1].shape[1]
    keras.utils.set_random_seed(args.seed)
    model = build_masked_lm(args, vocabulary_size)
    # The batches are masked here; the preprocessor goes into the presets,
    # so they take raw text.
    model.preprocessor = gMLPMaskedLMPreprocessor(
        tokenizer, sequence_length=args.sequence_length, mask_selection_length=num_slots
    )
    stream = language_model_stream(
        args,
        train_source,
        tokenizer,
        args.sequence_length,
        masking(args, tokenizer, num_slots),
    )
    trainer, history, initial_scores = fit_language_model(
        model,
        stream,
        validation,
        args,
        run,
        [MaskedLMAccuracy(), MaskedLMPerplexity()],
        monitor="val_masked_lm_perplexity",
    )
    return model, trainer, history, initial_scores
