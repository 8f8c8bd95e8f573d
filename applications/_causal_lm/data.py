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
    """The tokenizer, the train documents' source, the validation and
    test windows as (inputs, next-token labels), the train token counts,
    and the facts the summary reports. Fills in the step flags."""
    from _text_input.corpus import corpus_facts
    from _text_input.corpus import language_model_corpus
    from _text_input.corpus import language_model_sources
    from _text_input.corpus import print_corpus
    from _text_training.training import resolve_steps

    sources = language_model_sources(parser, args, lambda: bundled_documents(args))
    # One more token than the model sees: inputs and next-token labels.
    tokenizer, heldout, counts, per_epoch = language_model_corpus(
        args, run, sources, args.sequence_length + 1
    )
    resolve_steps(parser, args, per_epoch)
    name = args.dataset or args.train_files or args.corpus
    corpus = corpus_facts(name, sources, heldout, per_epoch, args.batch_size)
    print_corpus(
        f"Corpus ({name})", corpus, args.sequence_length, tokenizer.vocabulary_size()
    )
    data = {part: inputs_and_labels(rows) for part, rows in heldout.items()}
    return tokenizer, sources["train"], data, counts, corpus
