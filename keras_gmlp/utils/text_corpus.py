"""Offline text corpora, document splits, token windows and BERT masking.

The text programs (applications/) and the MLM benchmark
(benchmarks/mlm_vs_transformer.py) train on text every CPython carries: the
Python Language Reference (`pydoc_data.topics`) and the docstrings of the
standard library's modules, read from its files with `ast` (nothing is
imported), so the corpus is the same on every backend and every run.

Only the standard library and NumPy are used: no Keras, no tokenizer. The
token ids come from the caller's tokenizer; by the convention of
gMLPTokenizer's trained vocabularies, BERT's special tokens come first:
[PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4.
"""

import ast
import math
import pathlib
import sysconfig

import numpy as np

# The first id that is a word piece rather than a special token.
FIRST_WORD_ID = 5


def reference_documents():
    """{topic: text} of the Python Language Reference in `pydoc_data`."""
    from pydoc_data import topics

    return {name: text for name, text in sorted(topics.topics.items())}


def stdlib_root():
    """The directory of the running Python's standard library."""
    return pathlib.Path(sysconfig.get_paths()["stdlib"])


def stdlib_module_files(package=None):
    """The standard library's own `.py` files (no tests, no site-packages),
    as paths relative to the stdlib directory, sorted."""
    root = stdlib_root()
    start = root / package if package else root
    files = []
    for path in sorted(start.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        parts = relative.split("/")
        if parts[0] == "site-packages" or any(
            part.startswith("test") or part.endswith("_test") for part in parts
        ):
            continue
        files.append(relative)
    return files


def module_docstrings(relative_path):
    """The docstrings of a stdlib file (module, classes, functions), read
    with `ast`; [] if the file does not parse."""
    path = stdlib_root() / relative_path
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
        return []
    nodes = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    texts = (
        ast.get_docstring(node) for node in ast.walk(tree) if isinstance(node, nodes)
    )
    return [text for text in texts if text]


def paragraphs(text, min_chars=40):
    """Blank-line separated paragraphs with their whitespace collapsed."""
    pieces = (" ".join(piece.split()) for piece in text.split("\n\n"))
    return [piece for piece in pieces if len(piece) >= min_chars]


def split_names(names, heldout_fraction, seed=0):
    """Splits document names into (train, held-out), at random but fixed
    by `seed`; at least one document on each side."""
    names = sorted(names)
    if len(names) < 2:
        raise ValueError(
            f"Need at least 2 documents to split into train and held-out; "
            f"received {len(names)}."
        )
    order = np.random.default_rng(seed).permutation(len(names))
    count = min(len(names) - 1, max(1, round(heldout_fraction * len(names))))
    heldout = sorted(names[i] for i in order[:count])
    train = sorted(names[i] for i in order[count:])
    return train, heldout


def pack_windows(
    token_lists, length, start_id, end_id, min_tokens=8, end_every_window=False
):
    """Cuts each document's tokens into rows `[start] tokens ... [end]` of
    `length` ids, padded with 0; windows never cross documents, and
    windows of fewer than `min_tokens` tokens are dropped.

    The end token closes the window where its document ends, or every
    window with `end_every_window=True` (BERT's segments, as the MLM
    benchmark's published runs were made)."""
    body = length - 2
    rows = []
    for tokens in token_lists:
        for start in range(0, len(tokens), body):
            window = tokens[start : start + body]
            if len(window) < min_tokens:
                continue
            row = np.zeros(length, dtype="int32")
            row[0] = start_id
            row[1 : len(window) + 1] = window
            if end_every_window or start + body >= len(tokens):
                row[len(window) + 1] = end_id
            rows.append(row)
    if not rows:
        return np.zeros((0, length), dtype="int32")
    return np.stack(rows)


def mask_slots(sequence_length, mask_rate=0.15):
    """How many masked positions a row of `sequence_length` can have."""
    return int(math.ceil(mask_rate * (sequence_length - 2))) + 1


# keras_hub.layers.MaskedLMMaskGenerator does the same 80/10/10 replacement,
# but it cannot give the masks the programs and the benchmark rely on: it
# takes no seed (it draws from TensorFlow's or Python's global random state),
# so a resumed run cannot redraw an epoch's masks and two models cannot be
# shown the same masked batches; it selects each token with probability
# `mask_selection_rate` (a varying count, possibly none) rather than a fixed
# share of each row; and its random replacements come from the whole
# vocabulary, special tokens included, not from the word pieces only.
def mask_tokens(token_ids, rng, num_slots, mask_id, vocabulary_size, mask_rate=0.15):
    """BERT's masking, drawn from the numpy generator `rng`: `mask_rate` of
    each row's word pieces (ids >= FIRST_WORD_ID; at least one, at most
    `num_slots`) are predicted, chosen uniformly without replacement; of
    those, 80% become [MASK], 10% a random word piece and 10% stay. Returns
    the masked LM's inputs and the labels, 0 ([PAD]) in unused slots; the
    positions ascend in each row. Whole-batch numpy (no loop over rows): it
    runs on every train batch."""
    token_ids = np.asarray(token_ids)
    batch, length = token_ids.shape
    candidates = token_ids >= FIRST_WORD_ID
    available = candidates.sum(axis=1)
    counts = np.minimum(
        num_slots, np.maximum(1, np.rint(mask_rate * available).astype("int64"))
    )
    counts[available == 0] = 0
    # A uniform sample without replacement: the candidates with the
    # smallest random keys.
    keys = np.where(candidates, rng.random((batch, length)), 2.0)
    order = np.argsort(keys, axis=1)[:, :num_slots]
    used = np.arange(num_slots)[None, :] < counts[:, None]
    positions = np.sort(np.where(used, order, length), axis=1)
    used = positions < length
    positions = np.where(used, positions, 0).astype("int32")
    labels = np.where(used, np.take_along_axis(token_ids, positions, 1), 0)
    action = rng.random((batch, num_slots))
    random_ids = rng.integers(FIRST_WORD_ID, vocabulary_size, size=(batch, num_slots))
    chosen = np.take_along_axis(token_ids, positions, 1)
    replaced = np.where(
        action < 0.8, mask_id, np.where(action < 0.9, random_ids, chosen)
    )
    inputs = token_ids.copy()
    rows = np.broadcast_to(np.arange(batch)[:, None], positions.shape)
    inputs[rows[used], positions[used]] = replaced[used]
    x = {
        "token_ids": inputs,
        "segment_ids": np.zeros_like(inputs),
        "padding_mask": (token_ids != 0).astype("int32"),
        "mask_positions": positions,
    }
    return x, labels.astype("int32")


def unigram_perplexity(train_ids, labels, vocabulary_size, first_scored_id):
    """Perplexity of guessing each real label (> 0) from its frequency in
    `train_ids` alone (add-one smoothed, ids below `first_scored_id` not
    counted): what a model scores by ignoring context. Returns
    (perplexity, counts)."""
    counts = np.bincount(train_ids.ravel(), minlength=vocabulary_size)[:vocabulary_size]
    counts[:first_scored_id] = 0
    return unigram_perplexity_of_counts(counts, labels, first_scored_id), counts


def unigram_perplexity_of_counts(counts, labels, first_scored_id):
    """`unigram_perplexity` from the train ids' `counts` (per id)."""
    counts = np.array(counts, dtype="int64")
    counts[:first_scored_id] = 0
    probabilities = (counts + 1) / (counts + 1).sum()
    real = labels[labels > 0]
    return float(np.exp(-np.log(probabilities[real]).mean()))
