"""The masked-LM program's data: the corpus (`_text_input.corpus`) with the
validation and test windows masked once, and BERT's masking of each train
batch, drawn from (--seed, step, shard)."""

# The validation and test masks are the same for every run and seed, so
# runs compare.
HELDOUT_MASK_SEEDS = {"validation": 12346, "test": 12345}


def masked_corpus(parser, args, run):
    """The tokenizer, the train documents' source, the validation and test
    windows each masked once (HELDOUT_MASK_SEEDS) as (inputs, labels), the
    train token counts, and the facts the summary reports. Fills in the
    step flags."""
    import numpy as np
    from _text_input.corpus import corpus_facts
    from _text_input.corpus import language_model_corpus
    from _text_input.corpus import language_model_sources
    from _text_input.corpus import print_corpus
    from _text_training.training import resolve_steps

    from keras_gmlp.utils import text_corpus

    sources = language_model_sources(parser, args, text_corpus.reference_documents)
    tokenizer, heldout, counts, per_epoch = language_model_corpus(
        args, run, sources, args.sequence_length
    )
    resolve_steps(parser, args, per_epoch)
    num_slots = text_corpus.mask_slots(args.sequence_length)
    masked = {
        part: text_corpus.mask_tokens(
            heldout[part],
            np.random.default_rng(seed),
            num_slots,
            tokenizer.token_to_id("[MASK]"),
            tokenizer.vocabulary_size(),
        )
        for part, seed in HELDOUT_MASK_SEEDS.items()
    }
    name = (
        args.dataset
        or args.train_files
        or "pydoc_data.topics (Python Language Reference)"
    )
    corpus = corpus_facts(name, sources, heldout, per_epoch, args.batch_size)
    print_corpus("Corpus", corpus, args.sequence_length, tokenizer.vocabulary_size())
    return tokenizer, sources["train"], masked, counts, corpus


def masking(args, tokenizer, num_slots):
    """`finish(step, shard, rows)` of the train stream: BERT's masking of
    a shard's batch, drawn from (--seed, step, shard), as (inputs, labels)."""
    import numpy as np

    from keras_gmlp.utils.text_corpus import mask_tokens

    mask_id, size = tokenizer.token_to_id("[MASK]"), tokenizer.vocabulary_size()

    def finish(step, shard, rows):
        rng = np.random.default_rng([args.seed, step, 1, shard])
        return mask_tokens(rows, rng, num_slots, mask_id, size)

    return finish
