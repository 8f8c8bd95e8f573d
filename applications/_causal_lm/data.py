"""The causal-LM program's data: the bundled corpus (--corpus), the corpus
(`_text_input.corpus`) in windows one token longer than the model sees, and
the next-token labels of a window."""


def bundled_documents(args):
    """{name: text} of --corpus."""
    from keras_gmlp.utils import text_corpus

    if args.corpus == "reference":
        return text_corpus.reference_documents()
    documents = {}
    for name in text_corpus.stdlib_module_files():
        text = "\n\n".join(text_corpus.module_docstrings(name))
        if len(text) > 200:
            documents[name] = text
    return documents


def inputs_and_labels(rows):
    """A causal LM's inputs and next-token labels of windows one token
    longer than the model sees."""
    x = {
        "token_ids": rows[:, :-1],
        "padding_mask": (rows[:, :-1] != 0).astype("int32"),
    }
    return x, rows[:, 1:]


def next_token_corpus(parser, args, run):
    """The tokenizer, the train part (`corpus_of_flags`), the validation
    and test windows as (inputs, next-token labels), the train token counts,
    and the facts the summary reports. Fills in the step flags."""
    from _text_input.corpus import print_corpus
    from _text_training.training import resolve_steps
    from _token_shards.corpus import corpus_of_flags

    name = args.token_files or args.dataset or args.train_files or args.corpus
    # One more token than the model sees: inputs and next-token labels.
    tokenizer, train, heldout, counts, per_epoch, corpus = corpus_of_flags(
        parser,
        args,
        run,
        args.sequence_length + 1,
        lambda: bundled_documents(args),
        name,
    )
    resolve_steps(parser, args, per_epoch)
    print_corpus(
        f"Corpus ({name})", corpus, args.sequence_length, tokenizer.vocabulary_size()
    )
    data = {part: inputs_and_labels(rows) for part, rows in heldout.items()}
    return tokenizer, train, data, counts, corpus


# Windows GPTQ calibrates on (Keras' default sample count).
CALIBRATION_WINDOWS = 128


def calibration_windows(train, tokenizer, length, count=CALIBRATION_WINDOWS):
    """The first `count` windows of `length` ids of the train part (a
    token-shard `ShardSet` or a `DocumentSource`): what --quantize gptq
    fits the quantized blocks to."""
    from _token_shards.shard_set import ShardSet

    if isinstance(train, ShardSet):
        from _token_shards.corpus import cut_windows

        ids = train.leading_ids(count * (length - 1))
        return cut_windows(ids, length, tokenizer.token_to_id("[CLS]"), count)
    from _text_input.windows import take_arrays
    from _text_input.windows import token_windows

    return take_arrays(token_windows(train.dataset(), tokenizer, length), count)


def bundled_calibration(args, tokenizer, length):
    """calibration_windows of `length` ids of the bundled corpus
    (--corpus), for a --preset: the preset's own training text is not at
    hand."""
    if args.quantize != "gptq":
        return None
    from _text_input.sources import memory_sources

    documents = {"train": bundled_documents(args), "validation": {}, "test": {}}
    train = memory_sources(documents)["train"]
    return calibration_windows(train, tokenizer, length)
