"""How the programs build each task's inputs and labels, against arrays
written out by hand: BERT's masking of the pretraining batches, the causal
LM's next-token labels, the loss that skips label 0 ([PAD]: padding and
unused mask slots), the padding of held-out arrays for several replicas,
and the text classifier's class ids."""

import types

import numpy as np
import pytest

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
VOCABULARY_SIZE = 40
# The word pieces of the rows below (ids >= 5) and the share BERT masks.
WORD_PIECES = (20, 7, 2, 0)


def mlm_rows():
    """Four windows of 24 ids: 20, 7, 2 and 0 word pieces, with [CLS],
    [SEP] and [PAD] around them."""
    rng = np.random.default_rng(0)
    rows = np.zeros((4, 24), dtype="int32")
    for row, count in enumerate(WORD_PIECES):
        rows[row, 0] = CLS
        rows[row, 1 : count + 1] = rng.integers(5, VOCABULARY_SIZE, count)
        rows[row, count + 1] = SEP
    return rows


def fake_tokenizer():
    """What `masking` reads of a tokenizer: [MASK]'s id and the size."""
    return types.SimpleNamespace(
        token_to_id={"[MASK]": MASK}.__getitem__,
        vocabulary_size=lambda: VOCABULARY_SIZE,
    )


@pytest.mark.backend_independent
def test_mlm_masks_word_pieces_only_and_labels_them_with_the_original_ids():
    from _masked_lm import data as mlm_data

    rows = mlm_rows()
    # ceil(0.15 * (24 - 2)) + 1 slots; round(0.15 * n) of n word pieces,
    # at least 1: 20 -> 3, 7 -> 1 (1.05), 2 -> 1 (0.3), none -> 0.
    num_slots, expected_counts = 5, [3, 1, 1, 0]
    finish = mlm_data.masking(types.SimpleNamespace(seed=3), fake_tokenizer(), 5)
    x, labels = finish(7, 0, rows)
    assert labels.shape == (4, num_slots)
    np.testing.assert_array_equal(x["padding_mask"], (rows != PAD).astype("int32"))
    np.testing.assert_array_equal(x["segment_ids"], np.zeros_like(rows))
    for row, count in enumerate(expected_counts):
        positions = x["mask_positions"][row, :count]
        # The loss and metrics weigh only the slots with a label: the
        # masked word pieces, each labelled with its original id.
        assert (labels[row] > 0).sum() == count
        np.testing.assert_array_equal(labels[row, count:], 0)
        np.testing.assert_array_equal(labels[row, :count], rows[row, positions])
        assert (rows[row, positions] >= 5).all(), "a special token was masked"
        assert list(positions) == sorted(set(positions.tolist()))
        inputs = x["token_ids"][row]
        unmasked = np.setdiff1d(np.arange(24), positions)
        np.testing.assert_array_equal(inputs[unmasked], rows[row, unmasked])
        # Each masked input is [MASK], a random word piece or kept.
        assert ((inputs[positions] == MASK) | (inputs[positions] >= 5)).all()


@pytest.mark.backend_independent
def test_mlm_train_masks_are_drawn_from_seed_step_and_shard():
    """A resumed run redraws a step's masks; other steps, shards and seeds
    draw others (a mask fixed for the whole run is memorised)."""
    from _masked_lm import data as mlm_data

    rows = np.tile(mlm_rows()[:1], (16, 1))

    def positions(seed, step, shard):
        finish = mlm_data.masking(types.SimpleNamespace(seed=seed), fake_tokenizer(), 5)
        return finish(step, shard, rows)[0]["mask_positions"]

    first = positions(3, 7, 0)
    np.testing.assert_array_equal(positions(3, 7, 0), first)
    for other in (positions(3, 8, 0), positions(3, 7, 1), positions(4, 7, 0)):
        assert not np.array_equal(other, first)


@pytest.mark.backend_independent
def test_causal_lm_labels_are_the_next_tokens():
    from _causal_lm import data as lm_data

    rows = np.array(
        [[CLS, 11, 12, 13, SEP, 14, 15, 16], [CLS, 21, 22, SEP, 0, 0, 0, 0]],
        dtype="int32",
    )
    x, labels = lm_data.inputs_and_labels(rows)
    np.testing.assert_array_equal(
        x["token_ids"],
        [[CLS, 11, 12, 13, SEP, 14, 15], [CLS, 21, 22, SEP, 0, 0, 0]],
    )
    np.testing.assert_array_equal(
        labels, [[11, 12, 13, SEP, 14, 15, 16], [21, 22, SEP, 0, 0, 0, 0]]
    )
    np.testing.assert_array_equal(
        x["padding_mask"], [[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0, 0]]
    )


def captured_language_model_compile(monkeypatch, metrics):
    """The compile arguments and `ignored_label` that `fit_language_model`
    gives `fit_task` (patched out: no model, no training)."""
    from _text_training import training as text_training

    import keras_gmlp.visualization

    seen = {}

    def fit_task(task, stream, validation, args, run, compile_args, monitor, **kw):
        seen.update(compile_args=compile_args, monitor=monitor, **kw)
        return "trainer", "history"

    monkeypatch.setattr(text_training, "fit_task", fit_task)
    monkeypatch.setattr(keras_gmlp.visualization, "toeplitz_scores", lambda b: {})
    task = types.SimpleNamespace(backbone=None)
    text_training.fit_language_model(task, None, None, None, None, metrics, "val_m")
    return seen


def test_language_model_loss_counts_only_real_labels(monkeypatch):
    """Padding (a causal window's end) and unused mask slots are labelled
    0 and weigh nothing: the loss is the mean over the other labels."""
    import keras

    seen = captured_language_model_compile(monkeypatch, ["metric"])
    assert seen["ignored_label"] == 0 and seen["monitor"] == "val_m"
    assert seen["compile_args"]["metrics"] == ["metric"]
    logits = np.random.default_rng(1).normal(size=(2, 4, 9)).astype("float32")
    labels = np.array([[5, 8, 0, 0], [0, 6, 7, 0]])
    loss = seen["compile_args"]["loss"](labels, logits)
    log_probs = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    real = [log_probs[0, 0, 5], log_probs[0, 1, 8], log_probs[1, 1, 6]]
    expected = -np.mean(real + [log_probs[1, 2, 7]])  # the four labels > 0
    assert float(keras.ops.convert_to_numpy(loss)) == pytest.approx(expected, 1e-5)


@pytest.mark.backend_independent
@pytest.mark.parametrize("ignored_label", [0, None])
def test_heldout_arrays_padded_for_replicas_weigh_nothing(monkeypatch, ignored_label):
    """Six examples on four replicas: two copies of the first are added,
    labelled `ignored_label` (skipped by a language model's loss) or, for a
    classifier, weighted 0."""
    from _shared import distribute

    monkeypatch.setattr(distribute, "_local_replicas", lambda: 4)
    x = {"token_ids": np.arange(12).reshape(6, 2)}
    y = np.array([[5, 6], [7, 0], [8, 9], [10, 11], [12, 0], [13, 14]])
    padded_x, padded_y, weights = distribute.evaluation_data(x, y, ignored_label)
    np.testing.assert_array_equal(
        padded_x["token_ids"], np.concatenate([x["token_ids"], [[0, 1], [0, 1]]])
    )
    if ignored_label is None:
        np.testing.assert_array_equal(padded_y[6:], [[5, 6], [5, 6]])
        np.testing.assert_array_equal(weights, [1, 1, 1, 1, 1, 1, 0, 0])
    else:
        np.testing.assert_array_equal(padded_y[6:], [[0, 0], [0, 0]])
        assert weights is None
    np.testing.assert_array_equal(padded_y[:6], y)
    monkeypatch.setattr(distribute, "_local_replicas", lambda: 3)
    # Six split evenly over three: nothing added.
    same_x, same_y, weights = distribute.evaluation_data(x, y, ignored_label)
    assert same_x is x and same_y is y and weights is None


def package_paragraphs(package):
    """Every docstring paragraph of a standard-library package, read here
    from its files."""
    from keras_gmlp.utils import text_corpus

    return {
        paragraph
        for name in text_corpus.stdlib_module_files(package)
        for docstring in text_corpus.module_docstrings(name)
        for paragraph in text_corpus.paragraphs(docstring)
    }


@pytest.mark.backend_independent
def test_offline_classifier_labels_each_paragraph_with_its_package():
    from _text_classifier import offline_tasks

    args = types.SimpleNamespace(test_fraction=0.25, fast=True)
    data, classes, _ = offline_tasks.offline_task(args)
    packages = ("asyncio", "email", "importlib", "xml")
    assert classes == list(packages)
    paragraphs = {package: package_paragraphs(package) for package in packages}
    for part, size in (("train", 24), ("validation", 12), ("test", 12)):
        (texts,), labels = data[part]["texts"], data[part]["labels"]
        np.testing.assert_array_equal(labels, np.repeat(np.arange(4), size))
        for text, label in zip(texts, labels):
            assert text in paragraphs[packages[label]], (part, label, text[:60])


@pytest.mark.backend_independent
def test_train_label_counts_and_the_majority_class():
    import tensorflow as tf
    from _text_classifier import data as task_data

    labels = np.array([2, 0, 2, 1, 2, 0, 2], dtype="int32")
    texts = tf.constant([f"text {i}" for i in range(7)])
    source = types.SimpleNamespace(
        dataset=lambda: tf.data.Dataset.from_tensor_slices(((texts,), labels))
    )
    counts = task_data.train_label_counts(source, 4)
    np.testing.assert_array_equal(counts, [2, 1, 4, 0])
