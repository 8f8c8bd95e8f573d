"""The text programs' corpus input without a program run: the corpus
flags (defaults, help, checks), where documents come from (bundled, files,
a tensorflow-datasets builder faked by hand), how the held-out parts are
carved, and the corpus' windows, counts and facts, each against what the
stated rule gives by hand. Refusals are asserted whole. tf.data and numpy
only: the same on every backend."""

import argparse
import types

import numpy as np
import pytest

pytestmark = pytest.mark.backend_independent

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list("abcdefghij")


class RaisingParser(argparse.ArgumentParser):
    """A parser whose errors raise with their message, as the programs'
    parsers print them."""

    def error(self, message):
        raise ValueError(message)


def corpus_parser(**options):
    from _text_input import flags

    parser = RaisingParser(prog="p")
    flags.add_corpus_flags(parser, "the bundled corpus", **options)
    return parser


def helps(parser):
    return {
        action.dest: (action.help, action.default, action.metavar)
        for action in parser._actions  # argparse's own list of flags
        if action.dest != "help"
    }


def test_the_corpus_flags_say_what_they_are_with_their_defaults():
    from _text_input import flags

    parser = corpus_parser()
    assert helps(parser) == {
        "heldout_fraction": (
            "share of documents held out for validation and again for test "
            "(where the corpus has no such split)",
            0.1,
            None,
        ),
        "dataset": (
            "a tensorflow-datasets text corpus (e.g. wikipedia/20230601.en, c4) "
            "instead of the bundled corpus, read as a stream",
            None,
            None,
        ),
        "data_dir": ("where tensorflow-datasets keeps prepared datasets", None, None),
        "text_feature": (
            "the --dataset feature holding the text (default: 'text', or its "
            "only text feature)",
            None,
            None,
        ),
        "train_files": (
            "the documents to train on: UTF-8 text files (.txt, or .gz), a blank "
            "line between documents; quote the glob",
            None,
            "GLOB",
        ),
        "validation_files": (
            "held-out documents that choose the checkpoint (default: carved from "
            "the train files): UTF-8 text files (.txt, or .gz), a blank line "
            "between documents; quote the glob",
            None,
            "GLOB",
        ),
        "test_files": (
            "held-out documents scored once (default: carved from the train "
            "files): UTF-8 text files (.txt, or .gz), a blank line between "
            "documents; quote the glob",
            None,
            "GLOB",
        ),
        "shuffle_buffer": (
            "documents (and windows) shuffled together: the memory that "
            "shuffling takes",
            10000,
            None,
        ),
        "vocabulary": (
            "a WordPiece vocabulary, one word piece a line with BERT's special "
            "tokens (vocab.txt), instead of training one",
            None,
            "FILE",
        ),
        "vocabulary_sample": (
            "most train documents the vocabulary is trained on",
            100000,
            None,
        ),
        "vocabulary_sample_bytes": (
            "most bytes of text the vocabulary is trained on (its trainer's "
            "memory grows with them)",
            4_000_000,
            None,
        ),
    }
    groups = {group.title: group for group in parser._action_groups}
    assert [a.dest for a in groups["local text files"]._group_actions] == [
        "train_files",
        "validation_files",
        "test_files",
        "shuffle_buffer",
        "vocabulary",
        "vocabulary_sample",
        "vocabulary_sample_bytes",
    ]
    # Every corpus flag a run keeps is one of these (or --token-files').
    parsed = vars(parser.parse_args([]))
    assert set(flags.CORPUS_RUN_FLAGS) - set(parsed) == {"token_files"}
    assert (flags.FAST_DOCUMENTS, flags.FAST_VOCABULARY_SIZE) == (12, 300)


def test_the_corpus_flags_parse_and_check_their_values():
    parser = corpus_parser()
    args = parser.parse_args(
        [
            "--heldout-fraction=0.25",
            "--shuffle-buffer=7",
            "--vocabulary-sample=3",
            "--vocabulary-sample-bytes=5",
        ]
    )
    assert (
        args.heldout_fraction,
        args.shuffle_buffer,
        args.vocabulary_sample,
        args.vocabulary_sample_bytes,
    ) == (0.25, 7, 3, 5)
    for flag in (
        "--shuffle-buffer",
        "--vocabulary-sample",
        "--vocabulary-sample-bytes",
    ):
        with pytest.raises(ValueError) as error:
            parser.parse_args([f"{flag}=0"])
        assert str(error.value) == (
            f"argument {flag}: must be at least 1, received '0'"
        )
    with pytest.raises(ValueError) as error:
        parser.parse_args(["--heldout-fraction=1.5"])
    assert str(error.value).startswith("argument --heldout-fraction: ")


def test_the_text_file_flags_without_shuffle_or_vocabulary():
    from _text_input import flags

    parser = RaisingParser(prog="p")
    flags.add_text_file_flags(parser, with_vocabulary=False, shuffle=False)
    assert list(helps(parser)) == ["train_files", "validation_files", "test_files"]
    parser = corpus_parser(shuffle=False)
    assert "shuffle_buffer" not in helps(parser)
    assert "vocabulary_sample_bytes" in helps(parser)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--data-dir=d"], "--data-dir and --text-feature need --dataset"),
        (["--text-feature=t"], "--data-dir and --text-feature need --dataset"),
        (
            ["--dataset=c4", "--train-files=a"],
            "--train-files and --dataset both choose the corpus: give one",
        ),
        (["--validation-files=v"], "--validation-files needs --train-files"),
        (["--test-files=t"], "--test-files needs --train-files"),
        (["--dataset=c4", "--test-files=t"], "--test-files needs --train-files"),
        (["--dataset=c4", "--data-dir=d", "--text-feature=t"], None),
        (["--train-files=a", "--validation-files=v", "--test-files=t"], None),
        ([], None),
    ],
)
def test_the_corpus_flags_are_checked_together(argv, message):
    from _text_input import flags

    parser = corpus_parser()
    args = parser.parse_args(argv)
    if message is None:
        flags.check_corpus_flags(parser, args)
        return
    with pytest.raises(ValueError) as error:
        flags.check_corpus_flags(parser, args)
    assert str(error.value) == message


def test_text_file_flags_are_checked_without_a_dataset_flag():
    """A program with the file flags only (no --dataset) checks them."""
    from _text_input import flags

    parser = RaisingParser(prog="p")
    flags.add_text_file_flags(parser)
    flags.check_text_file_flags(parser, parser.parse_args(["--train-files=a"]))
    with pytest.raises(ValueError) as error:
        flags.check_text_file_flags(parser, parser.parse_args(["--test-files=t"]))
    assert str(error.value) == "--test-files needs --train-files"


def test_a_refusal_is_one_line_exit_status_2_and_discards_the_output_dir(
    tmp_path, capsys
):
    from _shared import flag_parser
    from _text_input.errors import refuse

    created = tmp_path / "run" / "deeper"
    created.mkdir(parents=True)
    flag_parser.note_created_output_dir(tmp_path / "run")
    with pytest.raises(SystemExit) as stop:
        refuse("the corpus is bad")
    assert stop.value.code == 2
    assert capsys.readouterr() == ("", "error: the corpus is bad\n")
    assert not (tmp_path / "run").exists()


def memory(texts_by_part):
    from _text_input import sources

    return sources.memory_sources(
        {part: dict(enumerate(texts_by_part.get(part, []))) for part in sources.PARTS}
    )


def texts(source):
    return [t.decode() for t in source.dataset().as_numpy_iterator()]


def test_memory_sources_describe_and_count_their_documents():
    parts = memory({"train": ["a", "b", "c"], "validation": ["d"]})
    assert {p: (s.description, s.documents) for p, s in parts.items()} == {
        "train": ("3 train documents", 3),
        "validation": ("1 validation documents", 1),
        "test": ("0 test documents", 0),
    }
    assert texts(parts["train"]) == ["a", "b", "c"]
    assert texts(parts["train"]) == ["a", "b", "c"]  # afresh each time


@pytest.mark.parametrize(
    "fraction, every",
    [(0.1, 10), (0.25, 4), (0.3, 3), (0.4, 3), (0.5, 3), (0.15, 7), (0.05, 20)],
)
def test_carving_keeps_one_in_round_of_one_over_the_fraction(fraction, every):
    """Of each `every` documents by position (round(1 / fraction), at least
    3: one test, one validation, one train), the first is a test document,
    the second a validation one, the others train ones."""
    from _text_input import sources

    documents = [f"d{i}" for i in range(45)]
    carved = sources.carve(memory({"train": documents})["train"], fraction)
    expected = {"test": [], "validation": [], "train": []}
    for i, text in enumerate(documents):
        name = {0: "test", 1: "validation"}.get(i % every, "train")
        expected[name].append(text)
    assert {p: texts(s) for p, s in carved.items()} == expected
    assert {p: (s.description, s.documents) for p, s in carved.items()} == {
        "test": (f"45 train documents, 1 in {every} documents", None),
        "validation": (f"45 train documents, 1 in {every} documents", None),
        "train": (f"45 train documents, {every - 2} in {every} documents", None),
    }


def test_carving_one_held_out_part_leaves_train_the_rest():
    from _text_input import sources

    documents = [f"d{i}" for i in range(12)]
    carved = sources.carve(memory({"train": documents})["train"], 0.5, ("test",))
    assert {p: texts(s) for p, s in carved.items()} == {
        "test": documents[0::2],
        "train": documents[1::2],
    }
    assert carved["train"].description == "12 train documents, 1 in 2 documents"


def write_documents(path, documents):
    path.write_text("\n\n".join(documents) + "\n")
    return str(path)


def file_args(train=None, validation=None, test=None):
    return types.SimpleNamespace(
        train_files=train, validation_files=validation, test_files=test
    )


def test_file_sources_carve_only_the_parts_not_given(tmp_path):
    from _text_input import sources

    train = write_documents(tmp_path / "train.txt", [f"t{i}" for i in range(10)])
    valid = write_documents(tmp_path / "valid.txt", ["v0", "v1"])
    test = write_documents(tmp_path / "test.txt", ["s0"])

    given = sources.file_sources(file_args(train, valid, test), 0.1)
    assert {p: texts(s) for p, s in given.items()} == {
        "train": [f"t{i}" for i in range(10)],
        "validation": ["v0", "v1"],
        "test": ["s0"],
    }
    # Nothing carved: each part is its files, described so.
    assert {p: src.description for p, src in given.items()} == {
        "train": f"1 files {train}",
        "validation": f"1 files {valid}",
        "test": f"1 files {test}",
    }

    # Validation given: only the test part is carved, 1 in 10.
    parts = sources.file_sources(file_args(train, validation=valid), 0.1)
    assert {p: texts(s) for p, s in parts.items()} == {
        "train": [f"t{i}" for i in range(1, 10)],
        "validation": ["v0", "v1"],
        "test": ["t0"],
    }
    assert parts["train"].description == f"1 files {train}, 9 in 10 documents"

    # Test given: only validation carved, from the train files.
    parts = sources.file_sources(file_args(train, test=test), 0.2)
    assert {p: texts(s) for p, s in parts.items()} == {
        "train": [f"t{i}" for i in range(10) if i % 5],
        "validation": ["t0", "t5"],
        "test": ["s0"],
    }


def test_file_sources_name_the_flag_of_a_bad_glob(tmp_path):
    from _text_input import sources

    train = write_documents(tmp_path / "train.txt", ["a"])
    missing = str(tmp_path / "none*.txt")
    for part in ("validation", "test"):
        with pytest.raises(ValueError) as error:
            sources.file_sources(file_args(train, **{part: missing}), 0.1)
        assert str(error.value) == f"--{part}-files: {missing!r} matches no file"


class FakeBuilder:
    """A tensorflow-datasets builder's public face: `info.splits` and
    `info.features`, and `as_dataset` of a split (prepared or not)."""

    def __init__(self, splits, features=None, unprepared=()):
        import tensorflow as tf

        self.calls = []
        self.unprepared = unprepared
        self.data = {
            name: tf.data.Dataset.from_tensor_slices(
                {"text": docs, "n": list(range(len(docs)))}
            )
            for name, docs in splits.items()
        }
        self.info = types.SimpleNamespace(splits=self, features=features or {})
        self.sizes = {name: len(docs) for name, docs in splits.items()}

    # `info.splits`: iterated for the names, indexed for the sizes.
    def __iter__(self):
        return iter(self.sizes)

    def __getitem__(self, split):
        if split in self.unprepared:
            raise ValueError("not prepared")
        return types.SimpleNamespace(num_examples=self.sizes[split])

    def as_dataset(self, split, shuffle_files):
        self.calls.append((split, shuffle_files))
        return self.data[split]


# Train documents t0..t9 carved at 0.2: one in five by position.
CARVED = {
    "train t%5>=1": [f"t{i}" for i in range(10) if i % 5 >= 1],
    "train t%5>=2": [f"t{i}" for i in range(10) if i % 5 >= 2],
    "train t%5==0": ["t0", "t5"],
    "train t%5==1": ["t1", "t6"],
}


@pytest.mark.parametrize(
    "splits, expected",
    [
        (
            ("train", "validation", "test"),
            {"train": "train", "validation": "validation", "test": "test"},
        ),
        (
            ("train", "test"),
            {"train": "train t%5>=1", "validation": "train t%5==0", "test": "test"},
        ),
        (
            ("train", "validation"),
            {
                "train": "train t%5>=1",
                "validation": "train t%5==0",
                "test": "validation",
            },
        ),
        (
            ("train",),
            {
                "train": "train t%5>=2",
                "validation": "train t%5==1",
                "test": "train t%5==0",
            },
        ),
    ],
)
def test_tfds_sources_use_the_splits_there_are_and_carve_the_rest(splits, expected):
    """A single held-out split is the test split; the parts missing are
    carved from train (test first, then validation)."""
    from _text_input import sources

    docs = {
        "train": [f"t{i}" for i in range(10)],
        "validation": ["v0", "v1"],
        "test": ["s0", "s1", "s2"],
    }
    builder = FakeBuilder({name: docs[name] for name in splits})
    parts = sources.tfds_sources(builder, "text", 0.2)
    assert {p: texts(s) for p, s in parts.items()} == {
        part: CARVED.get(name) or docs[name] for part, name in expected.items()
    }
    assert all(shuffle is False for _, shuffle in builder.calls)
    # A split's size where it is one; carved parts are not counted.
    assert {p: (s.description, s.documents) for p, s in parts.items()} == {
        part: (f"split {name!r}", len(docs[name]))
        if name in docs
        else (
            f"split 'train', {1 if '==' in name else 5 - int(name[-1])} in 5 documents",
            None,
        )
        for part, name in expected.items()
    }


def test_tfds_sources_of_an_unprepared_split_count_nothing():
    from _text_input import sources

    builder = FakeBuilder({"train": ["a"], "test": ["b"]}, unprepared=("test",))
    parts = sources.tfds_sources(builder, "text", 0.5)
    assert (
        parts["test"].documents is None and parts["test"].description == "split 'test'"
    )


def test_split_documents_keeps_the_first_names_with_a_limit():
    """--fast's limit: the first names sorted (doc00..doc19 of 40 given in
    reverse), then a tenth of them each for test and validation."""
    from _text_input import sources

    documents = {f"doc{i:02d}": f"text {i}" for i in reversed(range(40))}
    parts = sources.split_documents(documents, 0.1, limit=20)
    assert set().union(*parts.values()) == {f"doc{i:02d}" for i in range(20)}
    assert {p: len(names) for p, names in parts.items()} == {
        "train": 16,
        "validation": 2,
        "test": 2,
    }
    assert all(parts[p][n] == documents[n] for p in parts for n in parts[p])
    # At random, but the same every time (a resumed run's split).
    assert sources.split_documents(documents, 0.1, limit=20) == parts


@pytest.mark.parametrize(
    "fraction, sizes",
    # Validation is `fraction` of all the documents (test included): of the
    # 900 left after a test tenth, 100 (1/9 of them), at most half.
    [(0.1, (800, 100)), (0.2, (600, 200)), (0.4, (300, 300)), (0.45, (275, 275))],
)
def test_carve_validation_takes_the_fraction_of_all_documents(fraction, sizes):
    from _text_input import sources

    test = round(1000 * fraction)
    rest = {f"doc{i:04d}": str(i) for i in range(1000 - test)}
    parts = sources.carve_validation(rest, fraction)
    assert (len(parts["train"]), len(parts["validation"])) == sizes
    assert {**parts["train"], **parts["validation"]} == rest


def tokenizer_of(words=WORDS):
    from keras_gmlp.models import gMLPTokenizer

    return gMLPTokenizer(vocabulary=words, lowercase=True)


def window_args(**flags):
    return types.SimpleNamespace(**{"eval_batches": 1, "batch_size": 2, **flags})


def test_held_out_windows_are_capped_at_eval_batches_and_padded():
    """Held-out windows of 3 ids ([CLS] and two): validation documents of
    one word each (a [SEP] b [SEP] ...: 6 windows), --eval-batches 2 of 2
    take 4; the test document "a b c d" gives a b, c d, and [SEP] padded
    with [PAD] (0), its text kept whole."""
    from _text_input import corpus

    parts = memory({"validation": list("abcdef"), "test": ["a b c d"]})
    windows = corpus.heldout_windows(
        parts, tokenizer_of(), 3, window_args(eval_batches=2, batch_size=2)
    )
    cls, sep, a, b, c, d = (WORDS.index(w) for w in ["[CLS]", "[SEP]", *"abcd"])
    assert set(windows) == {"validation", "test"}
    np.testing.assert_array_equal(
        windows["validation"],
        [[cls, a, sep], [cls, b, sep], [cls, c, sep], [cls, d, sep]],
    )
    np.testing.assert_array_equal(
        windows["test"], [[cls, a, b], [cls, c, d], [cls, sep, 0]]
    )
    windows = corpus.heldout_windows(
        parts, tokenizer_of(), 3, window_args(eval_batches=1, batch_size=5)
    )
    assert windows["validation"].shape == (5, 3)


@pytest.mark.parametrize("empty", ["validation", "test"])
def test_a_held_out_part_without_a_window_is_refused(empty, capsys):
    from _text_input import corpus

    parts = memory({"validation": ["a b"], "test": ["c d"], empty: []})
    with pytest.raises(SystemExit):
        corpus.heldout_windows(parts, tokenizer_of(), 4, window_args())
    assert capsys.readouterr().err == (
        f"error: the {empty} corpus (0 {empty} documents) gives no window of 4 "
        "tokens: use more text or a shorter --sequence-length\n"
    )


def test_train_counts_and_batches_per_epoch_by_hand():
    """Train documents "a b c", "d", "e f g h i": with [SEP] after each,
    the ids a b c SEP d SEP e f g h i SEP (12); windows of 4 (3 ids after
    [CLS]): 4 windows. Counting the first 2 documents: a b c SEP d SEP,
    2 windows."""
    from _text_input import corpus

    source = memory({"train": ["a b c", "d", "e f g h i"]})["train"]
    tokenizer = tokenizer_of()
    ids = {word: WORDS.index(word) for word in WORDS}
    counts = corpus.train_token_counts(source, tokenizer, 4, 2, 10_000)
    expected = np.zeros(len(WORDS), "int64")
    for word in ["[CLS]", "a", "b", "c", "[CLS]", "[SEP]", "d", "[SEP]"]:
        expected[ids[word]] += 1
    np.testing.assert_array_equal(counts, expected)
    assert counts.dtype == np.int64
    # Every document, and a byte bound inside the first: the first alone.
    assert corpus.train_token_counts(source, tokenizer, 4, 10, 10_000).sum() == 16
    assert corpus.train_token_counts(source, tokenizer, 4, 10, 2).sum() == 4
    for batch_size, steps in [(1, 4), (2, 2), (3, 2), (4, 1), (5, 1)]:
        assert corpus.train_steps_per_epoch(source, tokenizer, 4, batch_size) == steps


def test_train_counts_add_up_over_more_than_one_read_batch():
    """1,100 words "a" in one document: windows of 2 ids ([CLS] and one),
    1,101 of them (the last one [SEP]): more than a batch of 1,024."""
    from _text_input import corpus

    source = memory({"train": [" ".join("a" * 1100)]})["train"]
    counts = corpus.train_token_counts(source, tokenizer_of(), 2, 1, 10**6)
    expected = np.zeros(len(WORDS), "int64")
    expected[[WORDS.index("[CLS]"), WORDS.index("a"), WORDS.index("[SEP]")]] = [
        1101,
        1100,
        1,
    ]
    np.testing.assert_array_equal(counts, expected)


def test_a_train_part_without_a_window_is_refused(capsys):
    from _text_input import corpus

    source = memory({"train": ["a"]})["train"]
    with pytest.raises(SystemExit):
        corpus.train_steps_per_epoch(source, tokenizer_of(), 8, 2)
    assert capsys.readouterr().err == (
        "error: the train corpus (1 train documents) gives no window of 8 "
        "tokens: use more text or a shorter --sequence-length\n"
    )


def lm_args(tmp_path, **flags):
    (tmp_path / "vocab.txt").write_text("\n".join(WORDS) + "\n")
    defaults = dict(
        vocabulary=str(tmp_path / "vocab.txt"),
        vocabulary_size=None,
        output_dir=str(tmp_path),
        eval_batches=1,
        batch_size=2,
        steps=None,
        vocabulary_sample=100,
        vocabulary_sample_bytes=10_000,
    )
    return types.SimpleNamespace(**{**defaults, **flags})


def test_the_language_model_corpus_with_and_without_steps(tmp_path, capsys):
    from _text_input import corpus

    parts = memory(
        {"train": ["a b c", "d", "e f g h i"], "validation": ["a b"], "test": ["c"]}
    )
    run = types.SimpleNamespace(resuming=False)
    tokenizer, heldout, counts, per_epoch = corpus.language_model_corpus(
        lm_args(tmp_path), run, parts, 4
    )
    assert tokenizer.get_vocabulary() == WORDS
    assert per_epoch == 2 and counts.sum() == 16
    assert (tmp_path / "vocabulary.txt").read_text() == "\n".join(WORDS) + "\n"
    assert {p: w.shape for p, w in heldout.items()} == {
        "validation": (1, 4),
        "test": (1, 4),
    }
    # Without --vocabulary, a fresh run trains one on the train documents
    # (their letters, "j" not among them) and keeps it.
    tokenizer, *_ = corpus.language_model_corpus(
        lm_args(tmp_path, vocabulary=None, vocabulary_size=40), run, parts, 4
    )
    trained = tokenizer.get_vocabulary()
    assert set(WORDS[:14]) <= set(trained) and "j" not in trained
    assert (tmp_path / "vocabulary.txt").read_text() == "\n".join(trained) + "\n"
    (tmp_path / "vocabulary.txt").write_text("\n".join(WORDS) + "\n")
    # Resumed without --vocabulary: the kept vocabulary.txt is read.
    resumed = types.SimpleNamespace(resuming=True)
    tokenizer, *_, per_epoch = corpus.language_model_corpus(
        lm_args(tmp_path, steps=5, vocabulary=None), resumed, parts, 4
    )
    assert tokenizer.get_vocabulary() == WORDS
    assert per_epoch is None
    # --steps: a train part without a window refused after the counts.
    short = memory({"train": ["a"], "validation": ["a b"], "test": ["c"]})
    (tmp_path / "vocabulary.txt").unlink()
    with pytest.raises(SystemExit):
        corpus.language_model_corpus(lm_args(tmp_path, steps=5), run, short, 4)
    assert capsys.readouterr().err == (
        "error: the train corpus (1 train documents) gives no window\n"
    )
    assert not (tmp_path / "vocabulary.txt").exists()


def test_the_corpus_facts_and_their_line(capsys):
    from _text_input import corpus

    parts = memory({"train": list("abcde"), "validation": ["f"], "test": list("gh")})
    heldout = {"validation": np.zeros((3, 4)), "test": np.zeros((1, 4))}
    facts = corpus.corpus_facts("bundled", parts, heldout, 7, 4)
    assert facts == {
        "name": "bundled",
        "splits": {
            "train": {"source": "5 train documents", "documents": 5, "windows": 28},
            "validation": {
                "source": "1 validation documents",
                "documents": 1,
                "windows": 3,
            },
            "test": {"source": "2 test documents", "documents": 2, "windows": 1},
        },
    }
    assert type(facts["splits"]["validation"]["windows"]) is int
    corpus.print_corpus("corpus", facts, 4, 15)
    streamed = corpus.corpus_facts("bundled", parts, heldout, None, 4)
    assert "windows" not in streamed["splits"]["train"]
    corpus.print_corpus("c", streamed, 8, 300)
    assert capsys.readouterr().out == (
        "corpus: train: 5 train documents (28 windows); validation: 1 validation "
        "documents (3 windows); test: 2 test documents (1 windows); windows of 4 "
        "tokens; vocabulary 15 word pieces.\n"
        "c: train: 5 train documents (streamed); validation: 1 validation "
        "documents (3 windows); test: 2 test documents (1 windows); windows of 8 "
        "tokens; vocabulary 300 word pieces.\n"
    )


def source_args(**flags):
    defaults = dict(
        train_files=None,
        validation_files=None,
        test_files=None,
        dataset=None,
        data_dir=None,
        text_feature=None,
        fast=False,
        heldout_fraction=0.1,
    )
    return types.SimpleNamespace(**{**defaults, **flags})


def test_language_model_sources_of_the_bundled_documents():
    """--fast keeps the first 12 documents (sorted): 10/1/1 at 0.1... of
    12, round(1.2) = 1 test and 1 validation."""
    from _text_input import corpus

    documents = {f"doc{i:02d}": f"w{i}" for i in range(30)}
    parts = corpus.language_model_sources(
        RaisingParser(), source_args(fast=True), lambda: documents
    )
    kept = set().union(*(texts(s) for s in parts.values()))
    assert kept == {f"w{i}" for i in range(12)}
    assert {p: s.documents for p, s in parts.items()} == {
        "train": 10,
        "validation": 1,
        "test": 1,
    }
    parts = corpus.language_model_sources(
        RaisingParser(), source_args(heldout_fraction=0.2), lambda: documents
    )
    assert {p: s.documents for p, s in parts.items()} == {
        "train": 18,
        "validation": 6,
        "test": 6,
    }


def test_language_model_sources_of_files_and_their_refusal(tmp_path):
    from _text_input import corpus

    train = write_documents(tmp_path / "train.txt", [f"t{i}" for i in range(4)])
    parts = corpus.language_model_sources(
        RaisingParser(), source_args(train_files=train, heldout_fraction=0.5), None
    )
    assert {p: texts(s) for p, s in parts.items()} == {
        "test": ["t0", "t3"],
        "validation": ["t1"],
        "train": ["t2"],
    }
    missing = str(tmp_path / "none*.txt")
    with pytest.raises(ValueError) as error:
        corpus.language_model_sources(
            RaisingParser(), source_args(train_files=missing), None
        )
    assert str(error.value) == f"--train-files: {missing!r} matches no file"


@pytest.fixture
def fake_tfds(monkeypatch):
    """`datasets`' builder and features replaced: {name: builder or error}."""
    from _text_input import datasets

    class Builders(dict):
        data_dirs = []

    builders = Builders()

    def tfds_builder(name, data_dir):
        builders.data_dirs.append(data_dir)
        found = builders[name]
        if isinstance(found, Exception):
            raise found
        return found

    monkeypatch.setattr(datasets, "tfds_builder", tfds_builder)
    monkeypatch.setattr(
        datasets, "text_features", lambda builder: list(builder.info.features)
    )
    return builders


def dataset_sources(**flags):
    from _text_input import corpus

    args = source_args(data_dir="/data", **flags)
    return corpus.language_model_sources(RaisingParser(), args, None)


def dataset_refusal(**flags):
    with pytest.raises(ValueError) as error:
        dataset_sources(**flags)
    return str(error.value)


def test_dataset_sources_pick_their_text_feature(fake_tfds):
    """Train documents t0..t9 only: at 0.1 the test part is t0, the
    validation part t1, train t2..t9."""
    train = [f"t{i}" for i in range(10)]
    fake_tfds["one"] = FakeBuilder({"train": train}, {"text": None})
    fake_tfds["two"] = FakeBuilder({"train": train}, {"n": None, "text": None})
    fake_tfds["other"] = FakeBuilder({"train": train}, {"body": None})
    fake_tfds["neither"] = FakeBuilder({"train": train}, {"title": None, "body": None})
    for name in ("one", "two"):
        parts = dataset_sources(dataset=name)
        assert {p: texts(s) for p, s in parts.items()} == {
            "train": train[2:],
            "test": ["t0"],
            "validation": ["t1"],
        }
    assert texts(dataset_sources(dataset="one", text_feature="text")["test"]) == ["t0"]
    assert set(fake_tfds.data_dirs) == {"/data"}  # --data-dir's
    assert dataset_refusal(dataset="neither") == (
        "--dataset neither has the text features ['title', 'body']; pick one "
        "with --text-feature (received None)"
    )
    assert dataset_refusal(dataset="other", text_feature="title") == (
        "--dataset other has the text features ['body']; pick one with "
        "--text-feature (received 'title')"
    )
    assert dataset_refusal(dataset="two", text_feature="body") == (
        "--dataset two has the text features ['n', 'text']; pick one with "
        "--text-feature (received 'body')"
    )
    # Its only text feature, "body", is no column of the fake's examples:
    # reading it fails inside tf.data's map, whose error begins "in user
    # code:" and ends with what went wrong.
    assert dataset_refusal(dataset="other") == (
        "--dataset other could not be read from --data-dir /data: KeyError: 'body'"
    )


def test_dataset_sources_say_why_a_dataset_cannot_be_read(fake_tfds):
    fake_tfds["unknown"] = ValueError("tensorflow-datasets has no dataset 'x'")
    fake_tfds["broken"] = OSError("disk gone\nmore")
    assert dataset_refusal(dataset="unknown") == (
        "--dataset: tensorflow-datasets has no dataset 'x'"
    )
    assert dataset_refusal(dataset="broken") == (
        "--dataset broken could not be read: disk gone\nmore"
    )


def test_dataset_sources_name_the_first_line_of_a_reading_error(fake_tfds, monkeypatch):
    from _text_input import sources

    fake_tfds["c4"] = FakeBuilder({"train": ["a"]}, {"text": None})
    failures = iter([OSError("no shards\nsecond line"), OSError()])

    def failing(builder, feature, fraction):
        raise next(failures)

    monkeypatch.setattr(sources, "tfds_sources", failing)
    assert dataset_refusal(dataset="c4") == (
        "--dataset c4 could not be read from --data-dir /data: no shards"
    )
    assert dataset_refusal(dataset="c4") == (
        "--dataset c4 could not be read from --data-dir /data: OSError()"
    )


def test_text_features_are_the_string_features():
    import tensorflow as tf
    import tensorflow_datasets as tfds
    from _text_input import datasets

    features = {
        "text": tfds.features.Text(),
        "label": tfds.features.ClassLabel(num_classes=2),
        "title": tfds.features.Tensor(shape=(), dtype=tf.string),
        "count": tfds.features.Tensor(shape=(), dtype=tf.int64),
        "body": tfds.features.Text(),
    }
    builder = types.SimpleNamespace(info=types.SimpleNamespace(features=features))
    assert datasets.text_features(builder) == ["text", "title", "body"]


def test_tfds_columns_are_decoded_and_limited():
    import tensorflow as tf
    from _text_input import datasets

    class Builder:
        def as_dataset(self, split, shuffle_files):
            assert (split, shuffle_files) == ("train", False)
            return tf.data.Dataset.from_tensor_slices(
                {
                    "text": [b"caf\xc3\xa9", b"bad \xff", b"c"],
                    "label": [1, 0, 1],
                }
            )

    values = datasets.load_tfds_columns(Builder(), "train", ("text", "label"))
    assert values == {"text": ["café", "bad \ufffd", "c"], "label": [1, 0, 1]}
    values = datasets.load_tfds_columns(Builder(), "train", ("label",), limit=2)
    assert values == {"label": [1, 0]}


def test_tfds_builder_reads_prepared_data_only(monkeypatch):
    from _shared import tfds_names
    from _text_input import datasets

    calls = []
    monkeypatch.setattr(
        tfds_names,
        "checked_builder",
        lambda name, data_dir, will_download: (
            calls.append((name, data_dir, will_download)) or "builder"
        ),
    )
    assert datasets.tfds_builder("c4", "/data") == "builder"
    assert calls == [("c4", "/data", False)]
