"""The text programs' local files and vocabulary (_text_input/text_files.py,
vocabulary.py), against what the stated rules give by hand or by the
standard library: `**` globs, the UTF-8 check's byte limit, NUL bytes and
unreadable files, the fixed round-robin order of many files, the trained
vocabulary (of the lowercased corpus, UTF-8 whatever the locale) and the
kept one of a resumed run. tf.data, keras-hub's WordPiece trainer on two
documents and numpy only: the same on every backend."""

import contextlib
import gzip
import locale
import os
import pathlib
import types

import numpy as np
import pytest

from tests.applications.units._file_sources import train_files_refusal

pytestmark = pytest.mark.backend_independent

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def documents(source):
    return [d.decode() for d in source.dataset().as_numpy_iterator()]


def test_a_double_star_glob_reaches_every_folder_depth(tmp_path):
    from _text_input import sources

    for name in ("a.txt", "x/b.txt", "x/y/c.txt", "x/y/skipped.bin"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"text of {name}\n")
    walked = sorted(
        os.path.join(folder, name)
        for folder, _, names in os.walk(tmp_path)
        for name in names
        if name.endswith(".txt")
    )
    source = sources.file_source(str(tmp_path / "**" / "*.txt"))
    assert source.description == f"3 files {tmp_path / '**' / '*.txt'}"
    expected = [f"text of {pathlib.Path(p).relative_to(tmp_path)}" for p in walked]
    assert sorted(documents(source)) == sorted(expected)


def test_only_the_first_limit_bytes_are_checked(tmp_path):
    from _text_input import text_files

    def with_bad_byte(name, size, at):
        data = bytearray(b"a" * size)
        data[at] = 0xFF
        (tmp_path / name).write_bytes(bytes(data))
        return tmp_path / name

    limit = text_files.CHECKED_BYTES
    assert train_files_refusal(with_bad_byte("past.txt", limit + 10, limit)) is None
    last = with_bad_byte("last.txt", limit + 10, limit - 1)
    assert train_files_refusal(last) == (
        f"--train-files: {last} is not UTF-8 text: invalid byte at offset {limit - 1}"
    )
    # A limit that is no multiple of the read chunk (65,536 bytes).
    past = with_bad_byte("small.txt", 200_000, 100_000)
    text_files.check_text_file(past, limit=100_000)
    with pytest.raises(ValueError) as raised:
        text_files.check_text_file(past, limit=100_001)
    assert str(raised.value) == (
        f"{past} is not UTF-8 text: invalid byte at offset 100000"
    )


@pytest.mark.parametrize("suffix", [".txt", ".txt.gz"])
def test_the_first_nul_byte_is_named_at_its_offset(tmp_path, suffix):
    """NUL is valid UTF-8 but no text: two in the third read chunk (from
    byte 131,072), the first named."""
    data = bytearray(b"b" * 200_000)
    data[140_000] = data[140_010] = 0
    assert bytes(data).index(b"\0") == 140_000
    path = tmp_path / f"nul{suffix}"
    packed = gzip.compress(bytes(data)) if suffix.endswith(".gz") else bytes(data)
    path.write_bytes(packed)
    assert train_files_refusal(path) == (
        f"--train-files: {path} is not UTF-8 text: a NUL byte at offset 140000"
    )


def test_a_file_that_cannot_be_read_is_named_with_the_reason(tmp_path):
    path = tmp_path / "plain.txt.gz"
    path.write_text("not gzip\n")
    try:
        with gzip.open(path, "rb") as handle:
            handle.read()
    except OSError as error:
        reason = str(error)
    assert (
        train_files_refusal(path) == f"--train-files: {path} cannot be read: {reason}"
    )


def round_robin(files, cycle):
    """tf.data's interleave order, one item a turn: `cycle` slots visited
    in turn; an empty slot takes the next file when its turn comes, and a
    file that ends leaves its slot empty."""
    pending, slots, order, turn = list(files), [None] * cycle, [], 0
    while pending or any(slot is not None for slot in slots):
        if slots[turn] is None and pending:
            slots[turn] = iter(pending.pop(0))
        item = next(slots[turn], None) if slots[turn] is not None else None
        if item is None:
            slots[turn] = None
        else:
            order.append(item)
        turn = (turn + 1) % cycle
    return order


def many_files(folder, count):
    """`count` files of two documents each; returns their documents."""
    every = []
    for index in range(count):
        texts = [f"file {index} document {n}" for n in range(2)]
        (folder / f"f{index:02d}.txt").write_text("\n\n".join(texts) + "\n")
        every.append(texts)
    return every


def test_seventeen_files_are_read_sixteen_at_a_time_in_a_fixed_order(tmp_path):
    from _text_input import sources

    every = many_files(tmp_path, 17)
    source = sources.file_source(str(tmp_path / "*.txt"))
    assert documents(source) == round_robin(every, 16)
    assert round_robin(every, 16) != round_robin(every, 17)


def test_labelled_files_are_read_sixteen_at_a_time_in_a_fixed_order(tmp_path):
    from _text_input import text_files

    folders = {"neg": tmp_path / "neg", "pos": tmp_path / "pos"}
    for folder in folders.values():
        folder.mkdir()
    every = []
    for index in range(17):
        label = index % 2
        name = f"{tmp_path / ('neg', 'pos')[label]}/f{index:02d}.txt"
        texts = [f"file {index} document {n}" for n in range(2)]
        pathlib.Path(name).write_text("\n\n".join(texts) + "\n")
        every.append([(text, label) for text in texts])
    paths = [f"{tmp_path / ('neg', 'pos')[i % 2]}/f{i:02d}.txt" for i in range(17)]
    read = text_files.labelled_file_documents(paths, ["neg", "pos"])
    got = [(text.decode(), int(label)) for text, label in read.as_numpy_iterator()]
    assert got == round_robin(every, 16)


def tokenizer_args(tmp_path, vocabulary=None, size=40):
    return types.SimpleNamespace(
        vocabulary=vocabulary,
        output_dir=str(tmp_path),
        vocabulary_size=size,
        vocabulary_sample=100,
        vocabulary_sample_bytes=10**6,
    )


def memory_source(texts):
    from _text_input import sources

    parts = {"train": dict(enumerate(texts)), "validation": {}, "test": {}}
    return sources.memory_sources(parts)["train"]


@contextlib.contextmanager
def ascii_locale():
    """The C locale's ASCII as the default encoding of open()."""
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, before)


def test_a_trained_vocabulary_is_of_the_lowercased_corpus(tmp_path, capsys):
    """Two documents: WordPiece keeps a piece seen 10 times or more, so
    the vocabulary is the special tokens and each character, alone and as
    a continuation (##); under an ASCII locale too."""
    from _text_input import vocabulary

    texts = ["Café beta", "GAMMA beta naïve"]
    characters = set("".join(texts).lower().replace(" ", ""))
    expected = SPECIAL + sorted(characters) + sorted("##" + c for c in characters)
    run = types.SimpleNamespace(resuming=False)
    with ascii_locale():
        tokenizer = vocabulary.load_tokenizer(
            tokenizer_args(tmp_path), run, memory_source(texts)
        )
    assert sorted(tokenizer.get_vocabulary()) == sorted(expected)
    # The returned tokenizer lowercases as the trained vocabulary did.
    ids = np.asarray(tokenizer("GAMMA")).tolist()
    assert ids == np.asarray(tokenizer("gamma")).tolist()
    assert tokenizer.token_to_id("[UNK]") not in ids
    note = capsys.readouterr().out.splitlines()
    assert len(note) == 1 and note[0].startswith(
        "Note: gMLPTokenizer.from_corpus() was asked for vocabulary_size=40 but "
        f"trained only {len(expected)} tokens."
    )


def test_a_vocabulary_file_is_read_as_utf8_with_one_last_blank_line(tmp_path):
    from _text_input import vocabulary

    tokens = SPECIAL + ["café", "##é"]
    path = tmp_path / "vocab.txt"
    path.write_bytes(("\n".join(tokens) + "\n\n").encode())
    run = types.SimpleNamespace(resuming=False)
    with ascii_locale():
        tokenizer = vocabulary.load_tokenizer(
            tokenizer_args(tmp_path, vocabulary=str(path)), run, None
        )
    assert tokenizer.get_vocabulary() == tokens


def test_a_resumed_run_reads_its_kept_vocabulary(tmp_path, capsys):
    from _text_input import vocabulary

    kept = tmp_path / vocabulary.VOCABULARY_FILE
    tokens = SPECIAL + ["kept", "##s"]
    kept.write_text("\n".join(tokens) + "\n")
    run = types.SimpleNamespace(resuming=True)
    # No train source: the kept vocabulary is read, not trained again.
    tokenizer = vocabulary.load_tokenizer(tokenizer_args(tmp_path), run, None)
    assert tokenizer.get_vocabulary() == tokens
    kept.write_text("[PAD]\n")
    with pytest.raises(SystemExit) as raised:
        vocabulary.load_tokenizer(tokenizer_args(tmp_path), run, None)
    assert raised.value.code == 2
    assert capsys.readouterr().err == (
        f"error: {kept} lacks the special tokens {SPECIAL[1:]} (a BERT "
        f"vocab.txt has {SPECIAL})\n"
    )


def test_the_vocabulary_sample_replaces_bytes_that_are_not_utf8():
    from _text_input import vocabulary

    source = memory_source([b"caf\xe9 ok", "plain"])
    sample = list(vocabulary.vocabulary_sample(source, 10, 1000))
    assert sample == ["caf\N{REPLACEMENT CHARACTER} ok", "plain"]
