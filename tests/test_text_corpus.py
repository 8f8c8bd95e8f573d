"""keras_gmlp.utils.text_corpus: the windows, masks and splits the text
programs and the MLM benchmark train on, against hand-written expectations."""

import numpy as np
import pytest

from keras_gmlp.utils import text_corpus

# What this module checks does not depend on KERAS_BACKEND: CI runs it in
# one lane only (.ci/run).
pytestmark = pytest.mark.backend_independent

CLS, SEP, MASK = 2, 3, 4


def test_windows_never_cross_documents_and_close_only_where_a_document_ends():
    first = np.arange(10, 20, dtype="int32")  # 10 tokens: windows of 6 + 4
    second = np.arange(30, 33, dtype="int32")  # 3 tokens: too short, dropped
    rows = text_corpus.pack_windows([first, second], 8, CLS, SEP, min_tokens=4)
    expected = np.array(
        [
            [CLS, 10, 11, 12, 13, 14, 15, 0],
            [CLS, 16, 17, 18, 19, SEP, 0, 0],
        ],
        dtype="int32",
    )
    np.testing.assert_array_equal(rows, expected)


def test_every_window_closed_as_in_the_benchmark():
    tokens = np.arange(10, 20, dtype="int32")
    rows = text_corpus.pack_windows(
        [tokens], 8, CLS, SEP, min_tokens=4, end_every_window=True
    )
    np.testing.assert_array_equal(rows[:, 7], [SEP, 0])
    np.testing.assert_array_equal(rows[1, 5], SEP)


def test_no_window_gives_an_empty_batch_of_the_right_width():
    rows = text_corpus.pack_windows([np.arange(5, 8)], 16, CLS, SEP)
    assert rows.shape == (0, 16) and rows.dtype == np.int32


def test_masking_picks_a_fixed_share_of_word_pieces_and_labels_them():
    length, vocabulary_size = 42, 100
    rows = np.zeros((64, length), dtype="int32")
    rows[:, 0], rows[:, 41] = CLS, SEP
    rows[:, 1:41] = np.random.default_rng(0).integers(5, vocabulary_size, (64, 40))
    num_slots = text_corpus.mask_slots(length)
    assert num_slots == 7  # ceil(0.15 * 40) + 1
    x, labels = text_corpus.mask_tokens(
        rows, np.random.default_rng(1), num_slots, MASK, vocabulary_size
    )
    # round(0.15 * 40) = 6 of the 40 word pieces; the 7th slot stays empty.
    assert ((labels > 0).sum(axis=1) == 6).all()
    assert (labels[:, 6] == 0).all()
    positions = x["mask_positions"][:, :6]
    np.testing.assert_array_equal(np.take_along_axis(rows, positions, 1), labels[:, :6])
    assert ((positions >= 1) & (positions <= 40)).all()  # never [CLS] or [SEP]
    changed = x["token_ids"] != rows
    outside = np.ones_like(changed)
    np.put_along_axis(outside, positions, False, 1)
    assert not (changed & outside).any()
    chosen = np.take_along_axis(x["token_ids"], positions, 1)
    masked = (chosen == MASK).mean()
    assert 0.7 < masked < 0.9  # 80% of 384 masked tokens
    assert ((chosen == MASK) | (chosen >= 5)).all()
    np.testing.assert_array_equal(x["padding_mask"], np.ones_like(rows))


def test_masking_shares_are_80_10_10_for_mask_random_and_kept():
    """16,000 masked positions: [MASK], a random word piece, the token
    kept. A random word piece equals the token with chance 1/995, which then
    counts as kept. Each share within 5 standard deviations of its
    binomial mean (the widest 0.016); the random ones are word pieces,
    drawn evenly (their mean within 5 deviations of the uniform one)."""
    vocabulary_size, length = 1000, 66
    rows = np.random.default_rng(0).integers(5, vocabulary_size, (1600, length))
    num_slots = text_corpus.mask_slots(length)
    x, labels = text_corpus.mask_tokens(
        rows, np.random.default_rng(1), num_slots, MASK, vocabulary_size
    )
    used = labels > 0
    chosen = np.take_along_axis(x["token_ids"], x["mask_positions"], 1)[used]
    original = labels[used]
    count = len(original)
    assert count == 1600 * 10  # round(0.15 * 66) = 10 a row
    same = 1 / (vocabulary_size - 5)
    expected = {
        "mask": 0.8,
        "random": 0.1 * (1 - same),
        "kept": 0.1 + 0.1 * same,
    }
    random = (chosen != MASK) & (chosen != original)
    shares = {
        "mask": (chosen == MASK).mean(),
        "random": random.mean(),
        "kept": (chosen == original).mean(),
    }
    for name, share in expected.items():
        deviation = np.sqrt(share * (1 - share) / count)
        assert abs(shares[name] - share) < 5 * deviation, (name, shares[name])
    drawn = chosen[random]
    assert drawn.min() >= 5 and drawn.max() < vocabulary_size
    uniform_sd = np.sqrt((995**2 - 1) / 12 / len(drawn))
    assert abs(drawn.mean() - (5 + vocabulary_size - 1) / 2) < 5 * uniform_sd


def test_masks_depend_only_on_the_generator():
    rows = np.full((4, 16), 7, dtype="int32")
    a = text_corpus.mask_tokens(rows, np.random.default_rng([3, 1]), 4, MASK, 50)
    b = text_corpus.mask_tokens(rows, np.random.default_rng([3, 1]), 4, MASK, 50)
    c = text_corpus.mask_tokens(rows, np.random.default_rng([3, 2]), 4, MASK, 50)
    np.testing.assert_array_equal(a[0]["mask_positions"], b[0]["mask_positions"])
    assert not np.array_equal(a[0]["mask_positions"], c[0]["mask_positions"])


def test_split_is_by_document_and_keeps_one_on_each_side():
    names = [f"doc{i}" for i in range(10)]
    train, heldout = text_corpus.split_names(names, 0.3)
    assert len(heldout) == 3 and sorted(train + heldout) == sorted(names)
    assert text_corpus.split_names(names, 0.3) == (train, heldout)
    assert len(text_corpus.split_names(names[:2], 0.9)[0]) == 1
    with pytest.raises(ValueError, match="at least 2 documents"):
        text_corpus.split_names(["only"], 0.5)


def test_unigram_perplexity_by_hand():
    train = np.array([[2, 5, 5, 6, 0]])
    labels = np.array([[5, 6, 0]])
    # Counts from id 5 up: {5: 2, 6: 1, 7: 0}; add-one over 8 ids gives
    # p(5) = 3/11, p(6) = 2/11.
    perplexity, counts = text_corpus.unigram_perplexity(train, labels, 8, 5)
    np.testing.assert_array_equal(counts, [0, 0, 0, 0, 0, 2, 1, 0])
    assert perplexity == pytest.approx(np.exp(-(np.log(3 / 11) + np.log(2 / 11)) / 2))


def test_the_offline_corpora_are_read_not_imported():
    documents = text_corpus.reference_documents()
    assert "with" in documents and list(documents) == sorted(documents)
    files = text_corpus.stdlib_module_files("json")
    assert "json/decoder.py" in files
    assert not any("test" in part for name in files for part in name.split("/"))
    assert any(
        "JSON" in text for text in text_corpus.module_docstrings("json/__init__.py")
    )
    assert text_corpus.paragraphs("short\n\n" + "a  long\nparagraph " * 5) == [
        " ".join(("a long paragraph " * 5).split())
    ]


def test_stdlib_files_leave_out_tests_and_site_packages(tmp_path, monkeypatch):
    """A made-up standard library: test packages (`test*` or `*_test`
    folders and files) and site-packages are left out wherever they are,
    and the files after them in order are kept."""
    for name in [
        "abc.py",
        "pkg/__init__.py",
        "pkg/idle_test/a.py",
        "pkg/test/b.py",
        "pkg/tests.py",
        "pkg/zz.py",
        "site-packages/other.py",
        "test/c.py",
        "zz.py",
        "pkg/notes.txt",
    ]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    monkeypatch.setattr(text_corpus, "stdlib_root", lambda: tmp_path)
    assert text_corpus.stdlib_module_files() == [
        "abc.py",
        "pkg/__init__.py",
        "pkg/zz.py",
        "zz.py",
    ]
    assert text_corpus.stdlib_module_files("pkg") == ["pkg/__init__.py", "pkg/zz.py"]


def test_paragraphs_keep_those_of_at_least_min_chars():
    forty = "a" * 40
    assert text_corpus.paragraphs(f"{forty}\n\n{'b' * 39}") == [forty]
    assert text_corpus.paragraphs("abc\n\nab", min_chars=3) == ["abc"]


def test_split_defaults_and_the_smallest_held_out_share():
    names = [f"doc{i}" for i in range(10)]
    assert text_corpus.split_names(names, 0.3) == text_corpus.split_names(
        names, 0.3, seed=0
    )
    # 1% of 10 rounds to 0: one document is held out all the same.
    assert len(text_corpus.split_names(names, 0.01)[1]) == 1


def test_windows_keep_eight_tokens_by_default_and_close_a_document_that_fills_one():
    # 6 tokens fill a window of 8 exactly: the document ends there.
    filling = np.arange(10, 16)
    eight_then_short = np.arange(20, 34)  # windows of 6, 6 and 2 tokens
    after = np.arange(40, 48)  # 8 tokens: windows of 6 and 2
    rows = text_corpus.pack_windows([filling, eight_then_short, after], 8, CLS, SEP, 2)
    np.testing.assert_array_equal(rows[0], [CLS, 10, 11, 12, 13, 14, 15, SEP])
    assert rows.dtype == np.int32 and len(rows) == 6
    np.testing.assert_array_equal(rows[-1], [CLS, 46, 47, SEP, 0, 0, 0, 0])
    # By default a window needs 8 tokens: windows of 10 hold 8.
    kept = text_corpus.pack_windows([np.arange(10, 18)], 10, CLS, SEP)
    np.testing.assert_array_equal(kept, [[CLS, *range(10, 18), SEP]])
    assert len(text_corpus.pack_windows([np.arange(10, 17)], 10, CLS, SEP)) == 0


def test_mask_slots_round_up():
    # ceil(0.15 * 7) + 1 = ceil(1.05) + 1 = 3.
    assert text_corpus.mask_slots(9) == 3


def test_masking_of_rows_with_few_or_no_word_pieces():
    """One word piece (the first, id 5): masked; three: one masked; none:
    nothing. Unused slots have position 0 and label 0; the outputs are
    int32, the padding mask is where the ids are not [PAD]."""
    rows = np.array(
        [
            [CLS, 5, SEP, 0, 0, 0],
            [CLS, 7, 8, 9, SEP, 0],
            [CLS, SEP, 0, 0, 0, 0],
        ],
        dtype="int32",
    )
    x, labels = text_corpus.mask_tokens(rows, np.random.default_rng(0), 3, MASK, 50)
    np.testing.assert_array_equal(labels[:, 1:], 0)
    assert labels[0, 0] == 5 and labels[1, 0] in (7, 8, 9) and labels[2, 0] == 0
    np.testing.assert_array_equal(x["mask_positions"][:, 1:], 0)
    assert x["mask_positions"][0, 0] == 1 and x["mask_positions"][2, 0] == 0
    np.testing.assert_array_equal(x["token_ids"][2], rows[2])
    np.testing.assert_array_equal(x["segment_ids"], np.zeros_like(rows))
    np.testing.assert_array_equal(x["padding_mask"], (rows != 0).astype("int32"))
    for value in (*x.values(), labels):
        assert value.dtype == np.int32


def test_unigram_perplexity_scores_unknown_word_labels():
    """[UNK] (id 1) is a real label, scored at its add-one share: counts
    from id 5 up {5: 3, 6: 1} over 7 ids give p(1) = 1/11, p(5) = 4/11,
    p(6) = 2/11."""
    counts = [9, 9, 9, 9, 9, 3, 1]
    labels = np.array([[1, 5, 6, 0]])
    perplexity = text_corpus.unigram_perplexity_of_counts(counts, labels, 5)
    assert perplexity == pytest.approx((11**3 / 8) ** (1 / 3))
