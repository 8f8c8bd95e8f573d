"""The text programs' streamed input (applications/_text_input/: text_files,
sources, windows, stream, corpus): documents read from local files as a
stream, windows packed across documents, the stream's state kept with each
checkpoint, steps instead of epochs, and the refusals of bad input.

Cost per backend: tf.data on a few small files; three tiny pretraining runs
of a few steps (one layer of width 32), one of them interrupted.
"""

import csv
import gzip
import json

import keras
import numpy as np
import pytest
from _shared.callbacks import TrainingBackup
from _text_input import sources as text_sources
from _text_input import stream as text_stream
from _text_input import text_files
from _text_input import windows as text_windows

from keras_gmlp.models import gMLPTokenizer
from keras_gmlp.utils import text_corpus
from tests.applications.programs._text_program_helpers import leftovers
from tests.applications.programs._text_program_helpers import load_program

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS


def corpus_text(rng, documents, words=(5, 30)):
    """Documents of random words, a blank line between them."""
    texts = [
        " ".join(rng.choice(WORDS, size=rng.integers(*words))) for _ in range(documents)
    ]
    return texts, "\n\n".join(texts) + "\n"


def write_corpus(folder, files=3, documents=20, seed=0, gz=False):
    """Writes `files` text files (the last gzip-compressed with `gz`);
    returns (glob, documents in file order)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    every = []
    for index in range(files):
        texts, text = corpus_text(rng, documents)
        every.append(texts)
        if gz and index == files - 1:
            with gzip.open(
                folder / f"part-{index}.txt.gz", "wt", encoding="utf-8"
            ) as f:
                f.write(text)
        else:
            (folder / f"part-{index}.txt").write_text(text, encoding="utf-8")
    return str(folder / "part-*"), every


def test_files_stream_their_documents_split_at_blank_lines(tmp_path):
    pattern, per_file = write_corpus(tmp_path, files=3, documents=5, gz=True)
    # Extra blank lines and a document of two lines.
    (tmp_path / "part-9.txt").write_text("\n\nfirst line\nsecond line\n\n\n\nlast")
    paths = text_files.resolve_files(pattern)
    read = [
        [d.decode() for d in text_files.read_documents(p).as_numpy_iterator()]
        for p in paths
    ]
    assert read == per_file + [["first line\nsecond line", "last"]]
    streamed = list(text_files.file_documents(paths).as_numpy_iterator())
    assert sorted(streamed) == sorted(d.encode() for f in read for d in f)


def test_windows_join_documents_with_sep_across_boundaries():
    tokenizer = gMLPTokenizer(vocabulary=VOCABULARY, lowercase=True)
    texts, _ = corpus_text(np.random.default_rng(1), 12)
    import tensorflow as tf

    windows = list(
        text_windows.token_windows(
            tf.data.Dataset.from_tensor_slices(texts), tokenizer, 16
        ).as_numpy_iterator()
    )
    # The reference: every document's ids then [SEP], one stream, cut in 15s.
    ids = [VOCABULARY.index(w) for text in texts for w in text.split() + ["[SEP]"]]
    expected = [ids[i : i + 15] for i in range(0, len(ids) - 14, 15)]
    assert [list(w[1:]) for w in windows] == expected
    assert all(w[0] == VOCABULARY.index("[CLS]") for w in windows)


def test_carved_parts_hold_each_document_once(tmp_path):
    pattern, per_file = write_corpus(tmp_path, files=2, documents=10)
    source = text_sources.file_source(pattern)
    parts = text_sources.carve(source, 0.25)
    seen = {
        part: [d.decode() for d in parts[part].dataset().as_numpy_iterator()]
        for part in ("train", "validation", "test")
    }
    everything = [d for f in per_file for d in f]
    assert sorted(sum(seen.values(), [])) == sorted(everything)
    assert len(seen["test"]) == len(seen["validation"]) == 5


def masked_stream(tmp_path, name, seed=3):
    import tensorflow as tf

    tokenizer = gMLPTokenizer(vocabulary=VOCABULARY, lowercase=True)
    texts, _ = corpus_text(np.random.default_rng(2), 30)
    batches = text_stream.train_batches(
        tf.data.Dataset.from_tensor_slices(texts),
        lambda documents: text_windows.token_windows(documents, tokenizer, 16),
        4,
        seed,
        (8, 16),
    )

    def finish(step, shard, rows):
        rng = np.random.default_rng([seed, step, 1, shard])
        return text_corpus.mask_tokens(rows, rng, 4, 4, len(VOCABULARY))

    zipped = tf.data.Dataset.zip((batches,))
    return text_stream.BatchStream(zipped, 3, tmp_path / name, finish)


def test_a_restored_stream_gives_the_same_batches_and_masks(tmp_path):
    stream = masked_stream(tmp_path, "a")
    batches = stream.batches()
    taken = [next(batches) for _ in range(12)]
    # The stream wrote its state at steps 3, 6, 9 and 12.
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [
        "step-12",
        "step-3",
        "step-6",
        "step-9",
    ]
    restored = masked_stream(tmp_path, "b")
    restored.restore(tmp_path / "a" / "step-6")
    assert restored.step == 6
    again = restored.batches()
    for expected in taken[6:]:
        got = next(again)
        keras.tree.map_structure(np.testing.assert_array_equal, got, expected)
    # Another seed: other batches.
    other = next(masked_stream(tmp_path, "c", seed=4).batches())
    assert not np.array_equal(other[0]["token_ids"], taken[0][0]["token_ids"])


def test_feed_gives_each_iteration_the_batches_from_where_the_stream_stood(tmp_path):
    """Keras' TensorFlow trainer under a strategy iterates its input to
    build the model, then again to train: the second iteration starts over,
    and only the first is recorded. Elsewhere `feed` is the stream itself."""
    import contextlib

    import tensorflow as tf

    reference = masked_stream(tmp_path, "b").batches()
    expected = [next(reference) for _ in range(8)]
    stream = masked_stream(tmp_path, "c")
    tensorflow = keras.backend.backend() == "tensorflow"
    scope = (
        tf.distribute.MirroredStrategy(["/cpu:0"]).scope()
        if tensorflow
        else (contextlib.nullcontext())
    )
    with scope:
        fed = stream_dataset = stream.feed()
    if tensorflow:
        building = iter(fed)
        for _ in range(5):
            next(building)
        fed = iter(fed)
    for want in expected:
        got = keras.tree.map_structure(np.asarray, next(fed))
        keras.tree.map_structure(np.testing.assert_array_equal, got, want)
    if tensorflow:  # nothing is kept for a third iteration
        with pytest.raises(Exception, match="iterated 3 times"):
            next(iter(stream_dataset))


# Three checkpoints, one evaluation (each costs a preset save).
STEP_FLAGS = ["--fast", "--steps", "6", "--save-every", "2", "--eval-every", "6"]


def vocabulary_file(folder):
    """A vocabulary of the corpus' words: no WordPiece training per run."""
    path = folder / "vocab.txt"
    path.write_text("\n".join(VOCABULARY) + "\n")
    return str(path)


def history_rows(output_dir):
    with open(output_dir / "history.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def final_weights(output_dir):
    from keras_gmlp.models import gMLPMaskedLM

    model = gMLPMaskedLM.from_preset(str(output_dir / "final_preset"))
    return [keras.ops.convert_to_numpy(w) for w in model.weights]


def test_steps_resume_mid_run_with_the_same_weights(tmp_path, monkeypatch):
    pattern, _ = write_corpus(tmp_path / "corpus", files=2, documents=30)
    program = load_program("pretrain_mlm")
    flags = STEP_FLAGS + [
        "--train-files",
        pattern,
        "--vocabulary",
        vocabulary_file(tmp_path),
    ]
    summary = program.main(flags + ["--output-dir", str(tmp_path / "a")])
    assert summary["steps_completed"] == 6
    assert summary["vocabulary_size"] == len(VOCABULARY)
    assert (tmp_path / "a" / "vocabulary.txt").read_text().split() == VOCABULARY
    assert summary["corpus"]["splits"]["train"]["source"].startswith("2 files")
    assert summary["throughput"]["tokens_per_second"] > 0
    assert 0 <= summary["throughput"]["input_share"] <= 1

    original = TrainingBackup.on_epoch_end

    def interrupt_after_second_checkpoint(self, epoch, logs=None):
        original(self, epoch, logs)
        if epoch == 1:
            raise KeyboardInterrupt

    resumed_dir = tmp_path / "b"
    with monkeypatch.context() as patch:
        patch.setattr(TrainingBackup, "on_epoch_end", interrupt_after_second_checkpoint)
        with pytest.raises(KeyboardInterrupt):
            program.main(flags + ["--output-dir", str(resumed_dir)])
    latest = json.loads((resumed_dir / "backup" / "latest.json").read_text())
    assert latest == {"epoch": 2}
    # The stream's states at the last two checkpoints (steps 2 and 4), and
    # on TensorFlow, whose Keras fetches ahead, maybe the next one's.
    steps = sorted(int(p.name[5:]) for p in (resumed_dir / "stream").iterdir())
    assert steps[:2] == [2, 4] and all(step > 4 for step in steps[2:]), steps
    # (Columns empty in a row, as seconds_to_first_step after the first,
    # are left out.)
    before = [{k: v for k, v in row.items() if v} for row in history_rows(resumed_dir)]
    resumed = program.main(flags + ["--output-dir", str(resumed_dir)])
    rows = history_rows(resumed_dir)
    # Checkpoint periods counted from 1, the interrupted run's rows kept.
    assert [row["epoch"] for row in rows] == ["1", "2", "3"]
    # Later rows add the validation columns, empty in these.
    assert [{k: v for k, v in row.items() if v} for row in rows[:2]] == before
    assert rows[-1]["step"] == "6.0" and not (resumed_dir / "backup").exists()
    # The resumed start's first step is timed in its own first period.
    assert [bool(row["seconds_to_first_step"]) for row in rows] == [True, False, True]
    assert not (resumed_dir / "stream").exists()
    for key in ("heldout_masked_token_accuracy", "heldout_masked_token_perplexity"):
        np.testing.assert_allclose(resumed[key], summary[key], rtol=1e-5, err_msg=key)
    for resumed, uninterrupted in zip(
        final_weights(resumed_dir), final_weights(tmp_path / "a")
    ):
        np.testing.assert_allclose(resumed, uninterrupted, rtol=1e-5, atol=1e-6)
    assert leftovers(resumed_dir) == []


def refusal(capsys, output_dir, *flags):
    """(exit code, stderr) of a pretraining start that is refused."""
    program = load_program("pretrain_mlm")
    with pytest.raises(SystemExit) as raised:
        program.main(["--fast", *map(str, flags), "--output-dir", str(output_dir)])
    return raised.value.code, capsys.readouterr().err.strip()


def test_bad_corpora_are_refused_in_one_line_before_training(tmp_path, capsys):
    output_dir = tmp_path / "out"
    code, error = refusal(capsys, output_dir, "--train-files", tmp_path / "none-*.txt")
    assert code == 2 and "--train-files" in error and "matches no file" in error
    # Bytes that are not UTF-8 at offset 6.
    (tmp_path / "latin1.txt").write_bytes(b"hello \xe9t\xe9\n")
    code, error = refusal(capsys, output_dir, "--train-files", tmp_path / "latin1.txt")
    assert code == 2 and "latin1.txt" in error and "offset 6" in error
    (tmp_path / "blank.txt").write_text("\n\n  \n\n")
    code, error = refusal(capsys, output_dir, "--train-files", tmp_path / "blank.txt")
    assert code == 2 and "no documents" in error
    for line in error.splitlines()[1:]:
        assert line.startswith(("usage:", "Note:")), error
    assert not output_dir.exists() or list(output_dir.iterdir()) == []


SPECIAL = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"


@pytest.mark.parametrize(
    "content, reason",
    [
        (
            "[PAD]\n[UNK]\n[CLS]\n[SEP]\nword\n",
            "lacks the special tokens ['[MASK]'] (a BERT vocab.txt has "
            "['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'])",
        ),
        (SPECIAL + "word\nword\n", "line 7: 'word' comes twice"),
        (
            SPECIAL + "two words\n",
            "line 6: expected one word piece a line, received 'two words'",
        ),
        (
            "[PAD]\n\n" + SPECIAL[6:],
            "line 2: expected one word piece a line, received ''",
        ),
        (
            SPECIAL + "word\t\n",
            "line 6: expected one word piece a line, received 'word\\t'",
        ),
        (
            SPECIAL.encode() + b"caf\xe9\n",
            f"is not UTF-8 text: invalid byte at offset {len(SPECIAL) + 3}",
        ),
        (None, "cannot be read: No such file or directory"),
    ],
    ids=["no-mask", "twice", "space", "blank-line", "tab", "latin-1", "missing"],
)
def test_a_bad_vocabulary_file_is_refused(tmp_path, capsys, content, reason):
    path = tmp_path / "vocab.txt"
    if content is not None:
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, error = refusal(capsys, tmp_path / "out", "--vocabulary", path)
    assert code == 2 and f"error: --vocabulary: {path} {reason}" in error, error
    assert not (tmp_path / "out").exists()  # a refused start removes it


def test_mixed_precision_trains(tmp_path):
    pattern, _ = write_corpus(tmp_path / "corpus", files=1, documents=40)
    try:
        summary = load_program("pretrain_mlm").main(
            ["--fast", "--steps", "2", "--train-files", pattern]
            + ["--vocabulary", vocabulary_file(tmp_path)]
            + [
                "--dtype-policy",
                "mixed_bfloat16",
                "--output-dir",
                str(tmp_path / "out"),
            ]
        )
    finally:
        keras.config.set_dtype_policy("float32")
    assert summary["flags"]["dtype_policy"] == "mixed_bfloat16"
    assert np.isfinite(summary["heldout_masked_token_perplexity"])
