"""The language-model programs' corpus: the tokenizer, the held-out windows
and the train counts, with bounded memory whatever the corpus' size.

The sources (`sources`) are the bundled documents, --train-files or
--dataset; the vocabulary (`vocabulary`) is trained on the first
--vocabulary-sample train documents or read from --vocabulary. The
validation and test windows (`windows`) are capped at --eval-batches
batches; the train windows stream (`stream`).
"""

import pathlib

from _shared.files import write_text

from . import sources as text_sources
from . import windows as text_windows
from .errors import error_line
from .errors import refuse
from .flags import FAST_DOCUMENTS
from .sources import PARTS
from .vocabulary import VOCABULARY_FILE
from .vocabulary import load_tokenizer


def heldout_windows(sources, tokenizer, length, args):
    """{"validation", "test"} -> windows of `length` ids (numpy), at most
    --eval-batches batches each; a part without one is refused."""
    limit = args.eval_batches * args.batch_size
    windows = {}
    for part in PARTS[1:]:
        windows[part] = text_windows.take_arrays(
            text_windows.token_windows(
                sources[part].dataset(), tokenizer, length, pad_last=True
            ),
            limit,
        )
        if windows[part] is None:
            refuse(
                f"the {part} corpus ({sources[part].description}) gives no window "
                f"of {length} tokens: use more text or a shorter --sequence-length"
            )
    return windows


def train_token_counts(source, tokenizer, length, sample, max_bytes):
    """How often each id occurs in the windows of the first `sample` train
    documents, at most `max_bytes` of them (the unigram baseline's
    counts)."""
    import numpy as np

    counts = np.zeros(tokenizer.vocabulary_size(), dtype="int64")
    documents = text_windows.sample_documents(source.dataset(), sample, max_bytes)
    windows = text_windows.token_windows(documents, tokenizer, length)
    for rows in windows.batch(1024).as_numpy_iterator():
        counts += np.bincount(rows.ravel(), minlength=len(counts))[: len(counts)]
    return counts


def train_steps_per_epoch(source, tokenizer, length, batch_size):
    """Batches in one pass over the train documents (one counting pass,
    the last batch counted whole: the stream repeats); a corpus without a
    window is refused."""
    windows = text_windows.count(
        text_windows.token_windows(source.dataset(), tokenizer, length)
    )
    if windows == 0:
        refuse(
            f"the train corpus ({source.description}) gives no window of {length} "
            "tokens: use more text or a shorter --sequence-length"
        )
    return -(-windows // batch_size)


def language_model_corpus(args, run, sources, length):
    """(tokenizer, held-out windows, train token counts, train batches
    per epoch or None with --steps) of `sources` in windows of `length`."""
    tokenizer = load_tokenizer(args, run, sources["train"])
    heldout = heldout_windows(sources, tokenizer, length, args)
    counts = train_token_counts(
        sources["train"],
        tokenizer,
        length,
        args.vocabulary_sample,
        args.vocabulary_sample_bytes,
    )
    if args.steps is None:
        per_epoch = train_steps_per_epoch(
            sources["train"], tokenizer, length, args.batch_size
        )
    else:
        per_epoch = None
        if counts.sum() == 0:
            refuse(f"the train corpus ({sources['train'].description}) gives no window")
    # Kept once the corpus is accepted: a refused start writes nothing.
    vocabulary = "\n".join(tokenizer.get_vocabulary()) + "\n"
    write_text(pathlib.Path(args.output_dir) / VOCABULARY_FILE, vocabulary)
    return tokenizer, heldout, counts, per_epoch


def corpus_facts(name, sources, heldout, steps_per_epoch, batch_size):
    """The summary's description of the corpus and of which split is
    which: the train documents fit the weights, the validation ones choose
    the checkpoint, the test ones score the chosen weights once."""
    splits = {
        part: {
            "source": sources[part].description,
            "documents": sources[part].documents,
        }
        for part in PARTS
    }
    for part, windows in heldout.items():
        splits[part]["windows"] = int(len(windows))
    if steps_per_epoch is not None:
        splits["train"]["windows"] = steps_per_epoch * batch_size
    return {"name": name, "splits": splits}


def print_corpus(label, corpus, sequence_length, vocabulary_size):
    def describe(part):
        split = corpus["splits"][part]
        windows = split.get("windows")
        return f"{part}: {split['source']}" + (
            f" ({windows} windows)" if windows is not None else " (streamed)"
        )

    print(
        f"{label}: "
        + "; ".join(describe(p) for p in PARTS)
        + f"; windows of {sequence_length} tokens; vocabulary {vocabulary_size} word pieces.",
        flush=True,
    )


def tfds_text_sources(parser, args):
    """The sources of --dataset's text feature (--text-feature, else
    "text" or its only text feature); errors are flag errors."""
    from . import datasets

    try:
        builder = datasets.tfds_builder(args.dataset, args.data_dir)
        features = datasets.text_features(builder)
    except ValueError as error:
        parser.error(f"--dataset: {error}")
    except Exception as error:  # tfds' errors for unprepared data vary
        parser.error(f"--dataset {args.dataset} could not be read: {error}")
    feature = args.text_feature or ("text" if "text" in features else None)
    if feature is None and len(features) == 1:
        feature = features[0]
    if feature not in features:
        parser.error(
            f"--dataset {args.dataset} has the text features {features}; "
            f"pick one with --text-feature (received {feature!r})"
        )
    try:
        sources = text_sources.tfds_sources(builder, feature, args.heldout_fraction)
        sources["train"].dataset().take(1)
    except Exception as error:  # tfds' errors for unprepared data vary
        parser.error(
            f"--dataset {args.dataset} could not be read from --data-dir "
            f"{args.data_dir}: {error_line(error)}"
        )
    return sources


def language_model_sources(parser, args, bundled):
    """{"train", "validation", "test"} sources: --train-files, --dataset,
    or the `bundled` documents ({name: text}, split by document)."""
    if args.train_files:
        try:
            return text_sources.file_sources(args, args.heldout_fraction)
        except ValueError as error:
            parser.error(str(error))
    if args.dataset:
        return tfds_text_sources(parser, args)
    limit = FAST_DOCUMENTS if args.fast else None
    return text_sources.memory_sources(
        text_sources.split_documents(bundled(), args.heldout_fraction, limit)
    )
