"""The masked-LM program's data: the corpus (`_text_input.corpus`) with the
validation and test windows masked once, and BERT's masking of each train
batch, drawn from (--seed, step, shard)."""

# The validation and test masks are the same for every run and seed, so
# runs compare.
HELDOUT_MASK_SEEDS = {"validation": 12346, "test": 12345}


def masked_corpus(parser, args, run):
    """The tokenizer, the train part (`corpus_of_flags`), the validation
    and test windows each masked once (HELDOUT_MASK_SEEDS) as (inputs, labels), the
    train token counts, and the facts the summary reports. Fills in the
    step flags."""
    import numpy as np
    from _text_input.corpus import print_corpus
    from _text_training.training import resolve_steps
    from _token_shards.corpus import corpus_of_flags

    from keras_gmlp.utils import text_corpus

    name = (
        args.dataset
        or args.train_files
        or "pydoc_data.topics (Python Language Reference)"
    )
    tokenizer, train, heldout, counts, per_epoch, corpus = corpus_of_flags(
        parser, args, run, args.sequence_length, text_corpus.reference_documents, name
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
    print_corpus("Corpus", corpus, args.sequence_length, tokenizer.vocabulary_size())
    return tokenizer, train, masked, counts, corpus


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
