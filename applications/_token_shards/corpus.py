"""A language-model program's corpus from a shard set (--token-files): the
tokenizer of its vocabulary, the validation and test windows, the train
counts and batches per epoch, as `_text_input.corpus` gives them for text.
numpy and keras-hub only: no TensorFlow."""

import pathlib

import numpy as np
from _shared.files import write_text
from _text_input.errors import refuse

from . import shard_set


def cut_windows(ids, length, start_id, limit):
    """At most `limit` windows of `length` ids: [CLS] then `length - 1` ids
    of `ids` each, the last padded with [PAD] (0), as held-out windows
    keep all their text."""
    body = length - 1
    count = min(limit, -(-len(ids) // body))
    rows = np.zeros((count, body), dtype="int32")
    flat = ids[: count * body]
    rows.reshape(-1)[: len(flat)] = flat
    return np.concatenate([np.full((count, 1), start_id, "int32"), rows], axis=1)


def check_vocabulary(args, run, manifest, folder):
    """The shard set's vocabulary against the model: --vocabulary-size, if
    given, and a resumed run's kept vocabulary must be the shard set's."""
    from _text_input.vocabulary import VOCABULARY_FILE

    size = manifest["vocabulary"]["size"]
    if args.vocabulary_size is not None and args.vocabulary_size != size:
        refuse(
            f"--vocabulary-size {args.vocabulary_size} is not the {size} word "
            f"pieces of --token-files {folder}: drop the flag or tokenize again"
        )
    args.vocabulary_size = size
    kept = pathlib.Path(args.output_dir) / VOCABULARY_FILE
    if run.resuming and kept.exists():
        if shard_set.file_digest(kept) != manifest["vocabulary"]["sha256"]:
            refuse(
                f"the run in {args.output_dir} was trained with another vocabulary "
                f"than --token-files {folder}: use another --output-dir or --restart"
            )


def heldout_windows(parts, tokenizer, length, args):
    windows = {}
    limit = args.eval_batches * args.batch_size
    for part in shard_set.PARTS[1:]:
        ids = parts[part].leading_ids(limit * (length - 1))
        windows[part] = cut_windows(ids, length, tokenizer.token_to_id("[CLS]"), limit)
        if not len(windows[part]):
            refuse(f"the {part} shards of --token-files {args.token_files} are empty")
    return windows


def shard_corpus(args, run, length):
    """(manifest, {part: ShardSet}, tokenizer, held-out windows, train
    counts, train batches per epoch) of --token-files in windows of
    `length`; a bad shard set or one that does not fit the model is
    refused in one line."""
    from _text_input.vocabulary import VOCABULARY_FILE
    from _text_input.vocabulary import read_vocabulary

    from keras_gmlp.models import gMLPTokenizer

    folder = pathlib.Path(args.token_files).expanduser()
    try:
        manifest, parts = shard_set.open_shard_set(folder)
        tokens = read_vocabulary(folder / shard_set.VOCABULARY)
    except ValueError as error:
        refuse(f"--token-files: {error}")
    check_vocabulary(args, run, manifest, folder)
    tokenizer = gMLPTokenizer(
        vocabulary=tokens, lowercase=manifest["vocabulary"]["lowercase"]
    )
    heldout = heldout_windows(parts, tokenizer, length, args)
    counts = np.load(folder / shard_set.TRAIN_COUNTS)
    windows = int(parts["train"].window_counts(length - 1).sum())
    if windows < args.batch_size:
        refuse(
            f"the train shards of --token-files {folder} give {windows} windows of "
            f"{length} tokens, fewer than a batch of {args.batch_size}"
        )
    write_text(
        pathlib.Path(args.output_dir) / VOCABULARY_FILE, "\n".join(tokens) + "\n"
    )
    return manifest, parts, tokenizer, heldout, counts, -(-windows // args.batch_size)


def shard_corpus_facts(manifest, folder, heldout, steps_per_epoch, batch_size):
    """The summary's description of a shard set's splits (as
    `_text_input.corpus.corpus_facts`)."""
    splits = {}
    for part in shard_set.PARTS:
        entry = manifest["parts"][part]
        splits[part] = {
            "source": f"{folder}/{part} ({manifest['sources'][part]})",
            "documents": entry["documents"],
            "tokens": entry["tokens"],
        }
    for part, windows in heldout.items():
        splits[part]["windows"] = int(len(windows))
    splits["train"]["windows"] = steps_per_epoch * batch_size
    return {"name": str(folder), "splits": splits}


def corpus_of_flags(parser, args, run, length, bundled, name):
    """(tokenizer, train part, held-out windows of `length`, train counts,
    train batches per epoch or None, the summary's facts) of the corpus the
    flags choose: --token-files (the train part a `ShardSet`), else the
    text of --train-files, --dataset or `bundled` ({name: text}), named
    `name` (the train part a `DocumentSource`)."""
    from _text_input import corpus as text_corpus

    if args.token_files:
        manifest, parts, tokenizer, heldout, counts, per_epoch = shard_corpus(
            args, run, length
        )
        facts = shard_corpus_facts(
            manifest, args.token_files, heldout, per_epoch, args.batch_size
        )
        return tokenizer, parts["train"], heldout, counts, per_epoch, facts
    sources = text_corpus.language_model_sources(parser, args, bundled)
    tokenizer, heldout, counts, per_epoch = text_corpus.language_model_corpus(
        args, run, sources, length
    )
    facts = text_corpus.corpus_facts(name, sources, heldout, per_epoch, args.batch_size)
    return tokenizer, sources["train"], heldout, counts, per_epoch, facts
