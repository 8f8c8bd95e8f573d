"""Token shards (applications/_token_shards/): what tokenize_corpus.py
writes, checked against the documents tokenized one by one; an interrupted
tokenization resumed to the same files; damaged or mismatched shard sets
refused; and the batches of the shard stream: every window once a pass,
the same for any number of processes, and the same after a resume.

Cost per backend: tf.data tokenizing a few dozen short documents; numpy.
"""

import hashlib
import json
import pathlib
import shutil
import types

import numpy as np
import pytest
from _text_input import sources as text_sources
from _token_shards import shard_set
from _token_shards import writer
from _token_shards.stream import ShardBatchStream

from keras_gmlp.models import gMLPTokenizer

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
SEP, CLS = 3, 2


def documents(seed, count):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(1, 12))) for _ in range(count)]


def reference_ids(texts):
    """Each document's ids by hand (one word = one word piece here), then
    [SEP]."""
    ids = []
    for text in texts:
        ids += [VOCABULARY.index(word) for word in text.split()] + [SEP]
    return np.array(ids)


def write_shard_set(folder, texts, shard_tokens=40):
    """A shard set of `texts` (train, and a few held-out documents each)."""
    parts = {"train": texts, "validation": texts[:3], "test": texts[3:6]}
    sources = text_sources.memory_sources(
        {part: dict(enumerate(values)) for part, values in parts.items()}
    )
    tokenizer = gMLPTokenizer(vocabulary=VOCABULARY, lowercase=True)
    folder.mkdir(exist_ok=True)
    vocabulary = folder / shard_set.VOCABULARY
    vocabulary.write_text("\n".join(VOCABULARY) + "\n")
    manifest = writer.new_manifest({"test": True}, sources, vocabulary, tokenizer)
    for part in shard_set.PARTS:
        writer.tokenize_part(
            folder, manifest, part, sources[part], tokenizer, shard_tokens, batch=4
        )
    writer.write_train_counts(folder, manifest, len(VOCABULARY))
    manifest["complete"] = True
    writer.write_manifest(folder, manifest)
    return manifest


TEXTS = documents(0, 60)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """(folder, manifest) of one shard set of TEXTS, written once."""
    folder = tmp_path_factory.mktemp("shards")
    return folder, write_shard_set(folder, TEXTS)


def copy_of(written, tmp_path):
    """A copy of the shard set to damage, and its manifest."""
    shutil.copytree(written[0], tmp_path / "copy")
    return tmp_path / "copy", json.loads(json.dumps(written[1]))


def test_shards_hold_every_documents_ids_then_sep_in_order(written):
    tmp_path, manifest = written
    texts = TEXTS
    train = manifest["parts"]["train"]
    assert len(train["shards"]) > 3
    ids = np.concatenate([np.load(tmp_path / s["file"]) for s in train["shards"]])
    np.testing.assert_array_equal(ids, reference_ids(texts))
    assert ids.dtype == np.uint16
    assert train["documents"] == 60 and train["tokens"] == len(ids)
    assert sum(s["documents"] for s in train["shards"]) == 60
    for entry in train["shards"]:
        data = (tmp_path / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        # A shard ends at a document's end.
        assert np.load(tmp_path / entry["file"])[-1] == SEP
    counts = np.load(tmp_path / shard_set.TRAIN_COUNTS)
    assert counts.dtype == np.int64
    np.testing.assert_array_equal(
        counts, np.bincount(reference_ids(texts), minlength=len(VOCABULARY))
    )
    # The manifest on disk says what made it: the parts' sources and the
    # vocabulary file, its digest, size and case.
    assert json.loads((tmp_path / shard_set.MANIFEST).read_text()) == manifest
    assert sorted(manifest["sources"]) == sorted(shard_set.PARTS)
    vocabulary = (tmp_path / shard_set.VOCABULARY).read_bytes()
    assert manifest["vocabulary"] == {
        "file": "vocabulary.txt",
        "sha256": hashlib.sha256(vocabulary).hexdigest(),
        "size": len(VOCABULARY),
        "lowercase": True,
    }
    held_out = np.load(tmp_path / manifest["parts"]["test"]["shards"][0]["file"])
    np.testing.assert_array_equal(held_out, reference_ids(texts[3:6]))
    assert not [p for p in tmp_path.rglob(".*")]


@pytest.mark.backend_independent
def test_a_shard_ends_with_the_batch_that_brings_it_to_shard_tokens(tmp_path):
    """ShardWriter at its boundary: pending ids one short of --shard-tokens
    write nothing; reaching it writes a shard of every pending id; a flush
    writes the rest, and nothing when nothing is pending."""
    entry = {"documents": 0, "tokens": 0, "shards": [], "finished": False}
    manifest = {"dtype": "uint16", "parts": {"train": entry}}
    sink = writer.ShardWriter(tmp_path, manifest, "train", shard_tokens=5)
    sink.add(np.array([5, 6, 3, 7]), 2)
    assert entry["shards"] == []
    sink.add(np.array([3]), 1)
    sink.add(np.array([8, 9, 10, 3]), 1)
    assert [(s["documents"], s["tokens"]) for s in entry["shards"]] == [(3, 5)]
    sink.flush()
    sink.flush()
    assert [(s["documents"], s["tokens"]) for s in entry["shards"]] == [(3, 5), (1, 4)]
    assert (entry["documents"], entry["tokens"]) == (4, 9)
    for shard, ids in zip(entry["shards"], ([5, 6, 3, 7, 3], [8, 9, 10, 3])):
        written = np.load(tmp_path / shard["file"])
        assert written.dtype == np.uint16 and written.tolist() == ids
    assert json.loads((tmp_path / shard_set.MANIFEST).read_text()) == manifest


@pytest.mark.backend_independent
def test_train_counts_read_a_shard_past_one_read_chunk(tmp_path):
    """The unigram counts of a shard longer than one read (2**22 ids), with
    the vocabulary's last ids never seen: every id counted once, a zero for
    each unseen one."""
    ids = np.random.default_rng(3).integers(0, 50, size=(1 << 22) + 1000)
    ids = ids.astype(np.uint16)
    np.save(tmp_path / "train.npy", ids)
    shard = {"file": "train.npy", "tokens": len(ids)}
    manifest = {"dtype": "uint16", "parts": {"train": {"shards": [shard]}}}
    writer.write_train_counts(tmp_path, manifest, vocabulary_size=60)
    counts = np.load(tmp_path / shard_set.TRAIN_COUNTS)
    expected = np.zeros(60, np.int64)
    np.add.at(expected, ids, 1)
    np.testing.assert_array_equal(counts, expected)


def test_an_interrupted_tokenization_resumes_to_the_same_shards(
    tmp_path, monkeypatch, capsys
):
    texts = documents(1, 40)
    whole = write_shard_set(tmp_path / "whole", texts)
    saved = writer.save_shard
    calls = []

    def save_then_stop(*args):
        calls.append(args[1])
        if len(calls) == 3:
            raise KeyboardInterrupt
        return saved(*args)

    monkeypatch.setattr(writer, "save_shard", save_then_stop)
    with pytest.raises(KeyboardInterrupt):
        write_shard_set(tmp_path / "cut", texts)
    manifest = json.loads((tmp_path / "cut" / shard_set.MANIFEST).read_text())
    assert not manifest["complete"]
    assert len(manifest["parts"]["train"]["shards"]) == 2
    with pytest.raises(shard_set.ShardSetError, match="interrupted tokenization"):
        shard_set.open_shard_set(tmp_path / "cut")
    monkeypatch.setattr(writer, "save_shard", saved)
    tokenizer = gMLPTokenizer(vocabulary=VOCABULARY, lowercase=True)
    sources = text_sources.memory_sources(
        {"train": dict(enumerate(texts)), "validation": {}, "test": {}}
    )
    # The report counts this run's tokens over this run's seconds (a fake
    # clock: 1/16 s, below the floor a mutant might put at 1 s).
    ticks = iter([100.0, 100.0625])
    monkeypatch.setattr(
        writer, "time", types.SimpleNamespace(perf_counter=lambda: next(ticks))
    )
    done = sum(s["documents"] for s in manifest["parts"]["train"]["shards"])
    capsys.readouterr()
    writer.tokenize_part(
        tmp_path / "cut", manifest, "train", sources["train"], tokenizer, 40, batch=4
    )
    assert manifest["parts"]["train"] == whole["parts"]["train"]
    total, earlier = len(reference_ids(texts)), len(reference_ids(texts[:done]))
    shards = len(whole["parts"]["train"]["shards"])
    rate = f"{(total - earlier) * 16:,}"
    out = capsys.readouterr().out
    # Keras' progress bar counts the part's documents, the skipped ones too.
    assert "40/40" in out and "s/document" in out
    report = out.rstrip().splitlines()[-1]
    assert report.endswith(
        f"train: 40 documents, {total} tokens in {shards} shards ({rate} tokens/s "
        "this run)."
    )


@pytest.mark.parametrize(
    "damage, message",
    [
        ("flip", "SHA-256 is not the manifest's"),
        ("truncate", "damaged"),
        ("remove", "damaged"),
        ("vocabulary", "not the vocabulary the shards were made with"),
        ("incomplete", "interrupted tokenization"),
        ("version", "version 99"),
    ],
)
def test_damaged_shard_sets_are_refused(written, tmp_path, damage, message):
    tmp_path, manifest = copy_of(written, tmp_path)
    shard = tmp_path / manifest["parts"]["train"]["shards"][1]["file"]
    if damage == "flip":
        data = bytearray(shard.read_bytes())
        data[-1] ^= 1
        shard.write_bytes(bytes(data))
    elif damage == "truncate":
        shard.write_bytes(shard.read_bytes()[:-2])
    elif damage == "remove":
        shard.unlink()
    elif damage == "vocabulary":
        (tmp_path / shard_set.VOCABULARY).write_text("\n".join(VOCABULARY[::-1]))
    else:
        if damage == "incomplete":
            manifest["complete"] = False
        else:
            manifest["version"] = 99
        writer.write_manifest(tmp_path, manifest)
    with pytest.raises(shard_set.ShardSetError, match=message):
        shard_set.open_shard_set(tmp_path)


def test_a_shard_of_other_length_or_dtype_is_refused_naming_both(written, tmp_path):
    """A shard saved again (a valid `.npy`) with fewer ids or wider ids:
    the manifest's length and dtype are named; a changed byte is named by
    its digest."""
    folder, manifest = copy_of(written, tmp_path)
    entry = manifest["parts"]["train"]["shards"][1]
    shard = folder / entry["file"]
    ids = np.load(shard)
    tokens = entry["tokens"]
    for saved, found in (
        (ids[:3], "3 ids of uint16"),
        (ids.astype("uint32"), f"{tokens} ids of uint32"),
    ):
        np.save(shard, saved)
        with pytest.raises(shard_set.ShardSetError) as refused:
            shard_set.open_shard_set(folder)
        assert str(refused.value) == (
            f"shard {shard} is damaged: {found}, the manifest lists {tokens} of uint16"
        )
    data = bytearray(ids.tobytes())
    data[0] ^= 1
    np.save(shard, np.frombuffer(bytes(data), "uint16"))
    with pytest.raises(shard_set.ShardSetError) as refused:
        shard_set.open_shard_set(folder)
    assert str(refused.value) == (
        f"shard {shard} is damaged: its SHA-256 is not the manifest's; "
        "tokenize the corpus again"
    )
    assert shard_set.ids_dtype(1 << 16) == np.uint16
    assert shard_set.ids_dtype((1 << 16) + 1) == np.uint32


def test_leading_ids_run_across_shards(written):
    """The first ids of the train shards read one after another: within
    the first shard, one past it, across all of them, none."""
    folder, manifest = written
    _, parts = shard_set.open_shard_set(folder)
    train = parts["train"]
    ids = reference_ids(TEXTS)
    first = int(train.tokens[0])
    for count in (5, first, first + 1, first + 3, len(ids) + 10):
        np.testing.assert_array_equal(train.leading_ids(count), ids[:count])
    none = train.leading_ids(0)
    assert none.shape == (0,) and none.dtype == np.int32


def reference_windows(folder, manifest, length):
    """Every train window by hand: each shard cut into rows of length - 1
    ids (its last partial row dropped), [CLS] before each."""
    rows = []
    for entry in manifest["parts"]["train"]["shards"]:
        ids = np.load(folder / entry["file"]).astype("int32")
        for start in range(0, len(ids) - length + 2, length - 1):
            rows.append([CLS, *ids[start : start + length - 1]])
    return np.array(rows)


def shard_stream(folder, snapshots, name="states", seed=0, **kw):
    """A stream of windows of 6 ids, 4 a step, its states saved every 3
    steps in snapshots/name; its batches (rows, rows) unless `finish`."""
    _, parts = shard_set.open_shard_set(folder)
    return ShardBatchStream(
        parts["train"],
        6,
        CLS,
        4,
        kw.pop("input_shards", 1),
        seed,
        period=3,
        snapshots=pathlib.Path(snapshots) / name,
        finish=kw.pop("finish", lambda step, shard, rows: (rows, rows)),
        shards=kw.pop("shards", (0,)),
    )


def test_the_stream_takes_every_window_once_a_pass(written, tmp_path):
    expected = reference_windows(written[0], written[1], 6)
    stream = shard_stream(written[0], snapshots=tmp_path)
    assert stream.windows == len(expected)
    steps = -(-2 * len(expected) // 4)
    rows = np.concatenate([stream.take()[0] for _ in range(steps)])
    first, second = rows[: len(expected)], rows[len(expected) : 2 * len(expected)]
    for taken in (first, second):
        assert sorted(map(tuple, taken)) == sorted(map(tuple, expected))
    assert not np.array_equal(first, second)
    assert not np.array_equal(first, expected)  # shuffled


def test_the_batches_do_not_depend_on_processes_and_resume_exactly(written, tmp_path):
    folder = written[0]
    seen = []

    def finish(step, shard, rows):
        seen.append((step, shard))
        return rows, np.full(len(rows), step * 10 + shard)

    one = shard_stream(folder, tmp_path, shards=(0, 1), input_shards=2, finish=finish)
    whole = [one.take() for _ in range(7)]
    assert seen[:4] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    parts = [
        shard_stream(
            folder, tmp_path, shards=(s,), input_shards=2, finish=finish, name=f"p{s}"
        )
        for s in (0, 1)
    ]
    for step in range(7):
        a, b = parts[0].take(), parts[1].take()
        np.testing.assert_array_equal(np.concatenate([a[0], b[0]]), whole[step][0])
        np.testing.assert_array_equal(np.concatenate([a[1], b[1]]), whole[step][1])
    # Dealt into input shards or not, a step's global batch is the same.
    single = shard_stream(folder, tmp_path, name="single")
    for step in range(7):
        np.testing.assert_array_equal(single.take()[0], whole[step][0])
    # Saved at steps 3 and 6; a new stream restored at 3 goes on as the first.
    assert sorted(p.name for p in (tmp_path / "states").iterdir()) == [
        "step-3",
        "step-6",
    ]
    resumed = shard_stream(
        folder, tmp_path, shards=(0, 1), input_shards=2, finish=finish, name="r"
    )
    resumed.restore(tmp_path / "states" / "step-3")
    for step in range(3, 7):
        np.testing.assert_array_equal(resumed.take()[0], whole[step][0])
    other = shard_stream(folder, tmp_path, seed=5, name="o")
    assert not np.array_equal(other.take()[0], whole[0][0][:4])


def test_held_out_windows_keep_the_last_partial_window(written):
    from _token_shards.corpus import heldout_windows

    texts = TEXTS
    _, parts = shard_set.open_shard_set(written[0])
    tokenizer = gMLPTokenizer(vocabulary=VOCABULARY, lowercase=True)
    args = types.SimpleNamespace(eval_batches=100, batch_size=2, token_files="x")
    windows = heldout_windows(parts, tokenizer, 5, args)
    ids = reference_ids(texts[3:6])
    rows = -(-len(ids) // 4)
    padded = np.zeros(rows * 4, dtype="int32")
    padded[: len(ids)] = ids
    expected = np.concatenate([np.full((rows, 1), CLS), padded.reshape(rows, 4)], 1)
    np.testing.assert_array_equal(windows["test"], expected)
    # At most --eval-batches batches.
    args.eval_batches = 1
    capped = heldout_windows(parts, tokenizer, 5, args)["test"]
    np.testing.assert_array_equal(capped, expected[:2])
    assert capped.dtype == np.int32


def test_a_shard_set_that_does_not_fit_the_run_is_refused(written, tmp_path, capsys):
    from _token_shards.corpus import check_vocabulary

    manifest = written[1]
    args = types.SimpleNamespace(vocabulary_size=500, output_dir=tmp_path / "run")
    run = types.SimpleNamespace(resuming=False)
    with pytest.raises(SystemExit):
        check_vocabulary(args, run, manifest, written[0])
    assert "--vocabulary-size 500 is not the 13 word pieces" in capsys.readouterr().err
    args.vocabulary_size = None
    check_vocabulary(args, run, manifest, written[0])
    assert args.vocabulary_size == 13
    # A resumed run trained with another vocabulary.
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "vocabulary.txt").write_text("[PAD]\n")
    with pytest.raises(SystemExit):
        resumed = types.SimpleNamespace(resuming=True)
        check_vocabulary(args, resumed, manifest, written[0])
    assert "trained with another vocabulary" in capsys.readouterr().err
    assert pathlib.Path(tmp_path / "run").exists()


def test_the_programs_train_on_shards_without_tensorflow(tmp_path, capsys):
    """tokenize_corpus.py --fast, then both language-model programs on its
    shards: on JAX and PyTorch in a process where TensorFlow cannot be
    imported (on TensorFlow, in this one). Their output is not a terminal:
    a progress line after each step, and the same TensorBoard scalars."""
    import os
    import subprocess
    import sys

    import keras

    from tests.applications.programs._text_program_helpers import APPLICATIONS
    from tests.applications.programs._text_program_helpers import ROOT
    from tests.applications.programs._text_program_helpers import load_program
    from tests.applications.programs._text_program_helpers import read_summary
    from tests.applications.programs._text_program_helpers import tensorboard_scalars

    shards = tmp_path / "shards"
    load_program("tokenize_corpus").main(["--fast", "--output-dir", str(shards)])
    with pytest.raises(SystemExit) as finished:
        load_program("tokenize_corpus").main(["--fast", "--output-dir", str(shards)])
    assert finished.value.code == 0
    runs = {
        name: [str(APPLICATIONS / f"{name}.py"), "--fast", "--token-files", str(shards)]
        + ["--steps", "2", "--log-every-steps", "1"]
        + ["--output-dir", str(tmp_path / name)]
        for name in ("pretrain_mlm", "train_causal_lm")
    }
    if keras.backend.backend() == "tensorflow":
        for name, command in runs.items():
            load_program(name).main(command[1:])
        output = capsys.readouterr().out
    else:
        result = subprocess.run(
            [
                sys.executable,
                str(pathlib.Path(__file__).parent / "without_tensorflow.py"),
            ]
            + [json.dumps(list(runs.values()))],
            capture_output=True,
            text=True,
            timeout=300,
            env=dict(
                os.environ,
                PYTHONPATH=os.pathsep.join(
                    [str(ROOT), os.environ.get("PYTHONPATH", "")]
                ),
            ),
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert "TensorFlow modules loaded: []" in result.stdout
        output = result.stdout
    # Per program (a checkpoint every step): the first step, its period's
    # end, step 2's line and its period's end.
    lines = [line for line in output.splitlines() if line.startswith("Step ")]
    assert [line.split(":")[0] for line in lines] == 2 * [
        "Step 1/2",
        "Step 1/2, checkpoint",
        "Step 2/2",
        "Step 2/2, checkpoint",
    ], output
    assert "first step done" in lines[0] and "left" in lines[2]
    manifest = json.loads((shards / shard_set.MANIFEST).read_text())
    for name in runs:
        summary = read_summary(tmp_path / name)
        assert summary["corpus"]["name"] == str(shards)
        splits = summary["corpus"]["splits"]
        assert splits["train"]["tokens"] == manifest["parts"]["train"]["tokens"]
        assert summary["vocabulary_size"] == manifest["vocabulary"]["size"]
        assert summary["steps_completed"] == 2
        assert summary["seconds_to_first_step"] > 0
        scalars = tensorboard_scalars(tmp_path / name / "tensorboard")
        # The periods' ends, and step 2's line (step 1 compiles: no figures).
        history = history_rows(tmp_path / name)
        assert scalars["period/loss"] == {
            1: pytest.approx(history[0]["loss"]),
            2: pytest.approx(history[1]["loss"]),
        }
        assert set(scalars["train/loss"]) == {2}
        assert scalars["period/seconds_to_first_step"] == {
            1: pytest.approx(summary["seconds_to_first_step"])
        }
        assert "seconds_to_first_step" not in history[1]
        for tag in ("tokens_per_second", "input_share", "seconds_left"):
            assert set(scalars[f"train/{tag}"]) == {2}
        kept = (tmp_path / name / "vocabulary.txt").read_bytes()
        assert kept == (shards / shard_set.VOCABULARY).read_bytes()


def history_rows(output_dir):
    """The rows of a run's history.csv, as floats."""
    import csv

    with open(output_dir / "history.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return [{name: float(v) for name, v in row.items() if v} for row in rows]


@pytest.mark.backend_independent
@pytest.mark.parametrize("program", ["pretrain_mlm", "train_causal_lm"])
def test_token_files_exclude_the_corpus_flags(program, tmp_path, capsys):
    from tests.applications.units.test_flag_edges import parse

    for flags in (["--train-files", "x"], ["--dataset", "c4"], ["--vocabulary", "v"]):
        with pytest.raises(SystemExit):
            parse(program, ["--token-files", "shards", *flags], tmp_path)
        message = capsys.readouterr().err.splitlines()[-1]
        assert message.endswith(
            f"error: --token-files and {flags[0]} both choose the corpus or its "
            "vocabulary: give one (the shard set carries its vocabulary)"
        )
    # --help names the flag's value and says what it takes.
    parser, _ = parse(program, ["--token-files", "shards"], tmp_path)
    shown = " ".join(parser.format_help().split())
    assert (
        "--token-files DIR a corpus tokenized by tokenize_corpus.py (its "
        "--output-dir): read as token ids, with its vocabulary, without "
        "TensorFlow; instead of the corpus and vocabulary flags"
    ) in shown
    # The vocabulary's size is the shard set's unless given (then checked).
    _, args = parse(program, ["--token-files", "shards"], tmp_path)
    assert args.vocabulary_size is None
    _, args = parse(program, ["--token-files", "shards", "--fast"], tmp_path)
    assert args.vocabulary_size is None
    given = ["--token-files", "shards", "--vocabulary-size", "700"]
    assert parse(program, given, tmp_path)[1].vocabulary_size == 700
