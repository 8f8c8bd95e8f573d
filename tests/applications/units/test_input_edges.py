"""The edges of the text programs' input, against what the stated rules give
by hand or by the standard library: UTF-8 checks across read chunks,
held-out splits at a size where two roundings differ, the vocabulary
sample's byte bound, train batches per epoch on the shard path when the
last batch is partial, and the throughput a checkpoint period reports,
from a fake clock. tf.data and numpy only: the same on every backend."""

import gzip
import json
import types

import numpy as np
import pytest

from tests.applications.units._file_sources import train_files_refusal

pytestmark = pytest.mark.backend_independent

# Three bytes each, so a read chunk of any size but a multiple of 3 ends
# inside one.
EURO = "€".encode()


def first_bad_byte(data):
    """The offset the standard library's one-shot decoder names."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        return error.start
    return None


@pytest.mark.parametrize("suffix", [".txt", ".txt.gz"])
def test_utf8_is_checked_across_read_chunks_with_the_offset_named(tmp_path, suffix):
    """Files of 120,000 bytes: characters across every chunk boundary are
    valid; a bad byte far past the first chunk, or a character cut short
    across a boundary, is named at its offset."""
    whole = EURO * 40_000
    bad_byte = bytearray(b"a" * 120_000)
    bad_byte[100_001] = 0xFF
    # The character at 65535-65537 (across the 65536th byte) cut short.
    cut = bytearray(whole)
    cut[65_537] = ord("x")
    cases = {"whole": bytes(whole), "bad": bytes(bad_byte), "cut": bytes(cut)}
    assert first_bad_byte(cases["bad"]) == 100_001
    assert first_bad_byte(cases["cut"]) == 65_535
    for name, data in cases.items():
        path = tmp_path / f"{name}{suffix}"
        path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
        message = train_files_refusal(path)
        if name == "whole":
            assert message is None
        else:
            offset = first_bad_byte(data)
            assert message == (
                f"--train-files: {path} is not UTF-8 text: invalid byte at "
                f"offset {offset}"
            )


def test_held_out_splits_of_a_thousand_documents_are_800_100_100():
    """At 0.1, 100 test documents and 100 validation ones: a tenth of all
    the documents each, not a tenth of what the test split left (90)."""
    from _text_input import sources
    from _text_input import windows

    documents = {f"doc{i:04d}": f"text {i}" for i in range(1000)}
    parts = sources.split_documents(documents, 0.1)
    assert {part: len(names) for part, names in parts.items()} == {
        "train": 800,
        "validation": 100,
        "test": 100,
    }
    assert set().union(*parts.values()) == set(documents)
    # Carved by position from a stream (files, tfds): one in ten each.
    stream = sources.memory_sources({"train": documents, "validation": {}, "test": {}})
    carved = sources.carve(stream["train"], 0.1)
    counts = {part: windows.count(s.dataset()) for part, s in carved.items()}
    assert counts == {"train": 800, "validation": 100, "test": 100}


def sample(texts, count, max_bytes):
    from _text_input import sources
    from _text_input import vocabulary

    source = sources.memory_sources(
        {"train": dict(enumerate(texts)), "validation": {}, "test": {}}
    )["train"]
    return list(vocabulary.vocabulary_sample(source, count, max_bytes))


def test_the_vocabulary_sample_ends_with_the_document_its_byte_bound_falls_in():
    """Documents of 10, 20 (10 two-byte characters), 30 and 40 bytes:
    they end at bytes 10, 30, 60 and 100."""
    texts = ["a" * 10, "é" * 10, "c" * 30, "d" * 40]
    assert sample(texts, 10, 35) == texts[:3]  # inside the third
    assert sample(texts, 10, 30) == texts[:2]  # where the third begins
    assert sample(texts, 10, 31) == texts[:3]
    assert sample(texts, 10, 5) == texts[:1]  # below the first: it alone
    assert sample(texts, 2, 1000) == texts[:2]  # --vocabulary-sample first
    assert sample(texts, 10, 1000) == texts


def write_shards(folder, train_tokens, length, validation=None):
    """A shard set whose train shards hold `train_tokens` ids each (one
    document a shard) and held-out shards one window each."""
    from _token_shards import shard_set
    from _token_shards import writer

    from keras_gmlp.models import gMLPTokenizer

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"]
    folder.mkdir()
    (folder / shard_set.VOCABULARY).write_text("\n".join(words) + "\n")
    tokenizer = gMLPTokenizer(vocabulary=words, lowercase=True)
    sources = {part: types.SimpleNamespace(description=part) for part in writer.PARTS}
    manifest = writer.new_manifest(
        {}, sources, folder / shard_set.VOCABULARY, tokenizer
    )
    validation = [length] if validation is None else validation
    sizes = {"train": train_tokens, "validation": validation, "test": [length]}
    rng = np.random.default_rng(0)
    for part, tokens in sizes.items():
        shards = writer.ShardWriter(folder, manifest, part, shard_tokens=1)
        for count in tokens:
            shards.add(rng.integers(5, len(words), count), 1)
        manifest["parts"][part]["finished"] = True
    writer.write_train_counts(folder, manifest, len(words))
    manifest["complete"] = True
    writer.write_manifest(folder, manifest)


def shard_args(tmp_path, **flags):
    args = types.SimpleNamespace(
        token_files=str(tmp_path / "shards"),
        vocabulary_size=None,
        output_dir=tmp_path / "run",
        eval_batches=1,
        batch_size=2,
        steps=None,
        epochs=2,
        eval_every=None,
        save_every=None,
        warmup_steps=None,
        **flags,
    )
    args.output_dir.mkdir(exist_ok=True)
    return args


NOT_RESUMING = types.SimpleNamespace(resuming=False)


def test_shard_batches_per_epoch_count_a_partial_last_batch(tmp_path):
    """Windows of 5 (4 ids after [CLS]) in train shards of 23 and 17 ids:
    5 + 4 = 9 windows, 5 batches of 2 (the last partial); --epochs 2
    without --steps trains 10 steps. The corpus' facts, counts, kept
    vocabulary and tokenizer are the shard set's."""
    from _text_training.training import resolve_steps
    from _token_shards import shard_set
    from _token_shards.corpus import corpus_of_flags

    write_shards(tmp_path / "shards", [23, 17], 5)
    args = shard_args(tmp_path)
    (args.output_dir / "vocabulary.txt").write_text("left by another run\n")
    tokenizer, train, heldout, counts, per_epoch, facts = corpus_of_flags(
        None, args, NOT_RESUMING, 5, None, "unused"
    )
    assert per_epoch == 5
    resolve_steps(None, args, per_epoch)
    assert (args.steps, args.eval_every, args.save_every) == (10, 5, 5)
    manifest = json.loads((tmp_path / "shards" / shard_set.MANIFEST).read_text())
    parts = manifest["parts"]
    folder = args.token_files
    assert facts == {
        "name": folder,
        "splits": {
            "train": {
                "source": f"{folder}/train (train)",
                "documents": 2,
                "tokens": 40,
                "windows": 10,
            },
            **{
                part: {
                    "source": f"{folder}/{part} ({part})",
                    "documents": 1,
                    "tokens": 5,
                    "windows": 2,
                }
                for part in ("validation", "test")
            },
        },
    }
    ids = np.concatenate(
        [np.load(tmp_path / "shards" / s["file"]) for s in parts["train"]["shards"]]
    )
    np.testing.assert_array_equal(counts, np.bincount(ids, minlength=8))
    assert list(train.tokens) == [23, 17] and set(heldout) == {"validation", "test"}
    assert heldout["validation"].dtype == np.int32
    kept = (args.output_dir / "vocabulary.txt").read_bytes()
    assert kept == (tmp_path / "shards" / shard_set.VOCABULARY).read_bytes()
    assert args.vocabulary_size == 8
    # The shard set's vocabulary is lowercased, as its manifest says.
    np.testing.assert_array_equal(tokenizer(["A b C"])[0], [5, 6, 7])


def refusal(capsys, args, length=5):
    from _token_shards.corpus import corpus_of_flags

    with pytest.raises(SystemExit):
        corpus_of_flags(None, args, NOT_RESUMING, length, None, "unused")
    return capsys.readouterr().err.strip()


def test_shard_sets_too_small_or_unfit_are_refused_naming_them(tmp_path, capsys):
    """9 windows: a batch of 9 trains, one of 10 is refused; another
    vocabulary size and a folder that is no shard set are refused, each
    naming --token-files."""
    from _token_shards.corpus import corpus_of_flags

    write_shards(tmp_path / "shards", [23, 17], 5)
    folder = tmp_path / "shards"
    *_, per_epoch, _ = corpus_of_flags(
        None,
        shard_args(
            tmp_path,
        ),
        NOT_RESUMING,
        5,
        None,
        "unused",
    )
    args = shard_args(tmp_path)
    args.batch_size = 9
    *_, per_epoch, _ = corpus_of_flags(None, args, NOT_RESUMING, 5, None, "unused")
    assert per_epoch == 1
    args.batch_size = 10
    assert refusal(capsys, args) == (
        f"error: the train shards of --token-files {folder} give 9 windows of "
        "5 tokens, fewer than a batch of 10"
    )
    args = shard_args(tmp_path)
    args.vocabulary_size = 500
    assert refusal(capsys, args) == (
        f"error: --vocabulary-size 500 is not the 8 word pieces of --token-files "
        f"{folder}: drop the flag or tokenize again"
    )
    args = shard_args(tmp_path)
    args.token_files = str(tmp_path / "none")
    assert refusal(capsys, args).startswith(f"error: --token-files: {tmp_path}/none")
    write_shards(tmp_path / "empty", [23], 5, validation=[])
    args = shard_args(tmp_path)
    args.token_files = str(tmp_path / "empty")
    assert refusal(capsys, args) == (
        f"error: the validation shards of --token-files {args.token_files} are empty"
    )


def test_the_text_corpus_of_the_flags_without_token_files(tmp_path):
    """No --token-files: the bundled documents (ten, one word a document
    here), split 8/1/1 at 0.1, read with --vocabulary; windows of 3 ids
    after [CLS] across the train documents, each followed by [SEP]."""
    from _token_shards.corpus import corpus_of_flags

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list("abcdefghij")
    (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n")
    bundled = {f"doc{i}": "abcdefghij"[i] * 1 for i in range(10)}
    args = shard_args(
        tmp_path,
        train_files=None,
        dataset=None,
        fast=False,
        heldout_fraction=0.1,
        vocabulary=str(tmp_path / "vocab.txt"),
        vocabulary_sample=100,
        vocabulary_sample_bytes=1000,
    )
    args.token_files = None
    tokenizer, train, heldout, counts, per_epoch, facts = corpus_of_flags(
        None, args, NOT_RESUMING, 4, lambda: bundled, "bundled"
    )
    texts = [t.decode() for t in train.dataset().as_numpy_iterator()]
    assert len(texts) == 8 and set(texts) < set(bundled.values())
    # 8 documents of a word and [SEP]: 16 ids, 5 windows of 3 (one dropped
    # short), 3 batches of 2.
    assert per_epoch == 3
    assert facts["name"] == "bundled"
    assert [
        facts["splits"][p]["documents"] for p in ("train", "validation", "test")
    ] == [8, 1, 1]
    assert facts["splits"]["train"]["windows"] == 6
    assert {len(heldout["validation"]), len(heldout["test"])} == {1}
    assert tokenizer.vocabulary_size() == 15 and counts.sum() == 5 * 4
    assert (args.output_dir / "vocabulary.txt").read_text().split() == words


def test_the_shard_stream_of_one_window_and_of_none(tmp_path):
    """A train shard of 4 ids gives one window of 5 ([CLS] and them), taken
    by every row of every batch, as int32; one of 3 ids gives none,
    refused."""
    from _token_shards import shard_set
    from _token_shards.stream import ShardBatchStream

    def stream(folder, tokens):
        write_shards(folder, [tokens], 5)
        _, parts = shard_set.open_shard_set(folder)
        return ShardBatchStream(
            parts["train"],
            5,
            2,
            2,
            1,
            0,
            period=4,
            snapshots=folder / "s",
            finish=lambda step, shard, rows: (rows, rows),
        )

    one = stream(tmp_path / "one", 4)
    ids = np.load(tmp_path / "one" / shard_set.shard_name("train", 0))
    for _ in range(2):
        rows = one.take()[0]
        assert rows.dtype == np.int32
        np.testing.assert_array_equal(rows, [[2, *ids]] * 2)
    with pytest.raises(ValueError, match="^the train shards give no window of 5 ids$"):
        stream(tmp_path / "none", 3)
