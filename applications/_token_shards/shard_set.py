"""The token-shard format: a corpus tokenized once, as a folder

    manifest.json            what is there and how it was made
    vocabulary.txt           the WordPiece vocabulary (BERT's vocab.txt)
    train/00000.npy ...      each part a list of shards: 1-D arrays of ids,
    validation/00000.npy ... every document's word pieces followed by [SEP]
    test/00000.npy ...
    train_token_counts.npy   how often each id occurs in the train part

Why plain `.npy` files: training reads windows of consecutive ids at random
positions, and a shard is one flat array, so a window is one read at a
known offset (`os.pread`): no parsing, no per-record cost, no dependency
beyond numpy, which every backend has (nanoGPT's `train.bin` and
Megatron's indexed datasets are flat arrays too). ArrayRecord through Grain
stores records (a document or a window each), adds packages that a JAX or
PyTorch host may not have, and fixes the window length when the shards are
written. Reads go through `pread`, not a memory map: mapped pages would
count in the process' resident memory, which then grows with the corpus.
Ids are uint16 where the vocabulary fits (2 bytes a token), else uint32.

Integrity: a shard is written under a temporary name and renamed, then
listed in the manifest (written the same way) with its documents, tokens
and SHA-256. `open_shard_set` checks the manifest, the vocabulary's digest
and every shard's length and digest before any training; an interrupted
tokenization (`"complete": false`) is refused with the command that
finishes it.
"""

import hashlib
import json
import os
import pathlib

import numpy as np

FORMAT = "keras-gmlp token shards"
VERSION = 1
MANIFEST = "manifest.json"
VOCABULARY = "vocabulary.txt"
TRAIN_COUNTS = "train_token_counts.npy"
PARTS = ("train", "validation", "test")


class ShardSetError(ValueError):
    """A shard set that cannot be trained on; the message says why."""


def file_digest(path):
    """The SHA-256 of a file, hex."""
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def ids_dtype(vocabulary_size):
    """The narrowest unsigned dtype holding every id."""
    return np.dtype("uint16" if vocabulary_size <= 1 << 16 else "uint32")


def shard_name(part, index):
    return f"{part}/{index:05d}.npy"


def read_manifest(folder):
    """The manifest of the shard set in `folder` (a ShardSetError says why
    not)."""
    path = pathlib.Path(folder) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ShardSetError(
            f"{folder} has no {MANIFEST}: not a shard set of tokenize_corpus.py"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ShardSetError(f"{path} is damaged: {error}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ShardSetError(f"{path} is not a manifest of {FORMAT}")
    if manifest.get("version") != VERSION:
        raise ShardSetError(
            f"{path} has version {manifest.get('version')!r}; this program reads "
            f"version {VERSION}: tokenize the corpus again"
        )
    return manifest


def data_offset(path):
    """(offset of the ids in the `.npy` file, dtype, length), from its
    header."""
    with open(path, "rb") as file:
        version = np.lib.format.read_magic(file)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(file)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(file)
        if len(shape) != 1:
            raise ValueError(f"shape {shape}, not one dimension")
        return file.tell(), dtype, shape[0]


def check_shard(folder, entry, dtype):
    """Raises a ShardSetError if the shard `entry` of the manifest is
    missing, has another dtype or length, or another digest."""
    path = pathlib.Path(folder) / entry["file"]
    try:
        offset, found, length = data_offset(path)
        size = path.stat().st_size
    except (OSError, ValueError) as error:
        raise ShardSetError(f"shard {path} is damaged: {error}") from None
    if found != dtype or length != entry["tokens"]:
        raise ShardSetError(
            f"shard {path} is damaged: {length} ids of {found}, the manifest "
            f"lists {entry['tokens']} of {dtype}"
        )
    if size != offset + length * dtype.itemsize or file_digest(path) != entry["sha256"]:
        raise ShardSetError(
            f"shard {path} is damaged: its SHA-256 is not the manifest's; "
            "tokenize the corpus again"
        )


class ShardSet:
    """The shards of one part, read without loading them: `read(shard,
    start, count)` gives ids as int32.

    Args:
        folder: the shard set's folder.
        entries: the manifest's shards of the part.
        dtype: the ids' numpy dtype.
    """

    def __init__(self, folder, entries, dtype):
        self.paths = [pathlib.Path(folder) / entry["file"] for entry in entries]
        self.tokens = np.array([entry["tokens"] for entry in entries], dtype="int64")
        self.dtype = np.dtype(dtype)
        self.offsets = [None] * len(entries)
        self.handles = {}

    def read(self, shard, start, count):
        """`count` ids of shard `shard` from id `start`."""
        handle = self.handles.get(shard)
        if handle is None:
            self.offsets[shard] = data_offset(self.paths[shard])[0]
            handle = self.handles[shard] = os.open(self.paths[shard], os.O_RDONLY)
        size = self.dtype.itemsize
        data = os.pread(handle, count * size, self.offsets[shard] + start * size)
        return np.frombuffer(data, self.dtype).astype("int32")

    def close(self):
        for handle in self.handles.values():
            os.close(handle)
        self.handles = {}

    def window_counts(self, body):
        """Windows of `body` ids each shard gives, cut within the shard (a
        shard's last partial window is dropped)."""
        return self.tokens // body

    def leading_ids(self, count):
        """The first `count` ids of the part's shards read one after
        another (fewer if the part has fewer)."""
        pieces, left = [], count
        for shard, tokens in enumerate(self.tokens):
            if left <= 0:
                break
            take = int(min(left, tokens))
            pieces.append(self.read(shard, 0, take))
            left -= take
        return np.concatenate(pieces) if pieces else np.zeros([0], "int32")


def open_shard_set(folder):
    """(manifest, {part: ShardSet}) of a checked shard set: complete, its
    vocabulary and every shard as the manifest lists them."""
    folder = pathlib.Path(folder)
    manifest = read_manifest(folder)
    if not manifest.get("complete"):
        raise ShardSetError(
            f"{folder} is an interrupted tokenization: run tokenize_corpus.py "
            f"again with the same flags and --output-dir {folder} to finish it"
        )
    vocabulary = folder / VOCABULARY
    try:
        digest = file_digest(vocabulary)
    except OSError as error:
        raise ShardSetError(f"{vocabulary} cannot be read: {error.strerror}") from None
    if digest != manifest["vocabulary"]["sha256"]:
        raise ShardSetError(
            f"{vocabulary} is not the vocabulary the shards were made with "
            "(its SHA-256 differs from the manifest's)"
        )
    dtype = np.dtype(manifest["dtype"])
    parts = {}
    for part in PARTS:
        entries = manifest["parts"][part]["shards"]
        for entry in entries:
            check_shard(folder, entry, dtype)
        parts[part] = ShardSet(folder, entries, dtype)
    return manifest, parts
