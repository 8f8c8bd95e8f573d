"""A corpus' train, validation and test parts tokenized into token shards
(`shard_set`), resumably: each shard is renamed into place, then the
manifest (also renamed into place) lists it with the documents it holds,
so an interrupted run skips those documents and goes on from the next
shard. TensorFlow (tf.data and keras-hub's tokenizer) does the reading and
tokenizing; it is imported when a function is called.
"""

import json
import os
import pathlib
import time

import numpy as np
from _shared.files import reserve_temporary_file
from _shared.files import write_text

from . import shard_set
from .shard_set import PARTS

# Documents tokenized together: one tf.data element, one tokenizer call.
DOCUMENTS_PER_BATCH = 256


def document_ids(documents, tokenizer, batch=DOCUMENTS_PER_BATCH):
    """(ids, documents) batches of `batch` texts of a dataset: each batch's word
    pieces, every document's followed by [SEP], as one flat array (as
    `_text_input.windows.token_windows` joins them)."""
    import tensorflow as tf
    from _text_input.windows import valid_utf8

    end = tokenizer.token_to_id("[SEP]")

    def ids(texts):
        pieces = tf.cast(tokenizer(valid_utf8(texts)), "int32")
        ends = tf.RaggedTensor.from_tensor(tf.fill([tf.size(texts), 1], end))
        return tf.concat([pieces, ends], axis=1).flat_values, tf.size(texts)

    batches = documents.batch(batch).map(
        ids, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
    )
    return batches.prefetch(2).as_numpy_iterator()


def save_shard(folder, name, ids):
    """Writes `ids` to `folder/name` (renamed into place) and returns its
    SHA-256."""
    path = pathlib.Path(folder) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = reserve_temporary_file(path.parent, f".{path.stem}-", ".npy")
    try:
        np.save(staging, ids, allow_pickle=False)
        digest = shard_set.file_digest(staging)
        os.replace(staging, path)
    finally:
        staging.unlink(missing_ok=True)
    return digest


def write_manifest(folder, manifest):
    write_text(
        pathlib.Path(folder) / shard_set.MANIFEST, json.dumps(manifest, indent=1)
    )


class ShardWriter:
    """Gathers a part's ids and writes a shard each time `shard_tokens` are
    reached (at a batch's end), then the manifest.

    Args:
        folder: the shard set's folder.
        manifest: the manifest being written (its parts are updated).
        part: "train", "validation" or "test".
        shard_tokens: ids per shard, at least.
    """

    def __init__(self, folder, manifest, part, shard_tokens):
        self.folder, self.manifest, self.part = folder, manifest, part
        self.entry = manifest["parts"][part]
        self.shard_tokens = shard_tokens
        self.dtype = np.dtype(manifest["dtype"])
        self.pending, self.pending_tokens, self.pending_documents = [], 0, 0

    def add(self, ids, documents):
        self.pending.append(ids.astype(self.dtype))
        self.pending_tokens += len(ids)
        self.pending_documents += int(documents)
        if self.pending_tokens >= self.shard_tokens:
            self.flush()

    def flush(self):
        if not self.pending_documents:
            return
        ids = np.concatenate(self.pending)
        name = shard_set.shard_name(self.part, len(self.entry["shards"]))
        digest = save_shard(self.folder, name, ids)
        self.entry["shards"].append(
            {
                "file": name,
                "documents": self.pending_documents,
                "tokens": len(ids),
                "sha256": digest,
            }
        )
        self.entry["documents"] += self.pending_documents
        self.entry["tokens"] += len(ids)
        self.pending, self.pending_tokens, self.pending_documents = [], 0, 0
        write_manifest(self.folder, self.manifest)


def tokenize_part(
    folder, manifest, part, source, tokenizer, shard_tokens, batch=DOCUMENTS_PER_BATCH
):
    """Tokenizes the documents of `source` that the manifest's shards of
    `part` do not hold yet, `batch` at a time, shard by shard (a shard
    ends with a batch); marks the part finished."""
    import keras

    entry = manifest["parts"][part]
    if entry["finished"]:
        return
    writer = ShardWriter(folder, manifest, part, shard_tokens)
    progress = keras.utils.Progbar(source.documents, unit_name="document")
    progress.update(entry["documents"])
    started, tokens = time.perf_counter(), entry["tokens"]
    documents = source.dataset().skip(entry["documents"])
    for ids, count in document_ids(documents, tokenizer, batch):
        writer.add(ids, count)
        progress.add(int(count))
    writer.flush()
    entry["finished"] = True
    write_manifest(folder, manifest)
    seconds = max(time.perf_counter() - started, 1e-9)
    print(
        f"{part}: {entry['documents']:,} documents, {entry['tokens']:,} tokens in "
        f"{len(entry['shards'])} shards ({(entry['tokens'] - tokens) / seconds:,.0f} "
        "tokens/s this run).",
        flush=True,
    )


def write_train_counts(folder, manifest, vocabulary_size):
    """Counts each id over the train shards (the unigram baseline's counts)
    and saves them (renamed into place)."""
    counts = np.zeros(vocabulary_size, dtype="int64")
    parts = shard_set.ShardSet(
        folder, manifest["parts"]["train"]["shards"], manifest["dtype"]
    )
    chunk = 1 << 22
    for shard, tokens in enumerate(parts.tokens):
        for start in range(0, int(tokens), chunk):
            ids = parts.read(shard, start, int(min(chunk, tokens - start)))
            counts += np.bincount(ids, minlength=vocabulary_size)[:vocabulary_size]
    parts.close()
    path = pathlib.Path(folder) / shard_set.TRAIN_COUNTS
    staging = reserve_temporary_file(folder, ".counts-", ".npy")
    try:
        np.save(staging, counts)
        os.replace(staging, path)
    finally:
        staging.unlink(missing_ok=True)


def shard_vocabulary(args, train_source, manifest):
    """(tokenizer, path of vocabulary.txt in --output-dir): the resumed
    run's (`manifest` not None; its digest checked), --vocabulary, or one
    trained on the train documents (`_text_input.vocabulary`)."""
    import types

    from _text_input.errors import refuse
    from _text_input.vocabulary import load_tokenizer
    from _text_input.vocabulary import read_vocabulary

    path = pathlib.Path(args.output_dir) / shard_set.VOCABULARY
    if manifest is not None and (
        not path.exists()
        or shard_set.file_digest(path) != manifest["vocabulary"]["sha256"]
    ):
        refuse(f"{path} is not the vocabulary of the interrupted tokenization")
    if manifest is not None and args.vocabulary:
        # The flag names the same file, but its word pieces may have changed
        # since: the shards already written hold the old ones' ids.
        try:
            given = read_vocabulary(args.vocabulary)
        except ValueError as error:
            refuse(f"--vocabulary: {error}")
        if given != read_vocabulary(path):
            refuse(
                f"--vocabulary {args.vocabulary} changed since the interrupted "
                f"tokenization in {args.output_dir} began: restore it, or use "
                "another --output-dir"
            )
    run = types.SimpleNamespace(resuming=manifest is not None)
    tokenizer = load_tokenizer(args, run, train_source)
    if manifest is None:
        write_text(path, "\n".join(tokenizer.get_vocabulary()) + "\n")
    return tokenizer, path


def new_manifest(made_with, sources, vocabulary, tokenizer):
    """The manifest of a shard set not yet written: how it is made (the
    flags, the sources), its vocabulary, and empty parts."""
    size = tokenizer.vocabulary_size()
    return {
        "format": shard_set.FORMAT,
        "version": shard_set.VERSION,
        "complete": False,
        "made_with": made_with,
        "sources": {part: sources[part].description for part in PARTS},
        "vocabulary": {
            "file": shard_set.VOCABULARY,
            "sha256": shard_set.file_digest(vocabulary),
            "size": size,
            "lowercase": True,
        },
        "dtype": shard_set.ids_dtype(size).name,
        "parts": {
            part: {"documents": 0, "tokens": 0, "shards": [], "finished": False}
            for part in PARTS
        },
    }
