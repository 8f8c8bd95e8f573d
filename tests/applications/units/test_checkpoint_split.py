"""Which split chooses the checkpoint and stops training early in every
program (validation), and which one only scores the chosen model once
(test). The programs' `main` runs with its data, training and scoring
patched out, to see which part each step is given; the shared resumable
fit trains a one-weight model whose validation score is computable by
hand."""

import types

import keras
import numpy as np
import pytest

from tests.applications.programs._text_program_helpers import load_program


def linear_model():
    """y = w * x with w = 0: SGD(0.1) on the mean squared error towards
    y = x moves w to w + 0.2 * (1 - w), so after epoch k (from 0)
    w = 1 - 0.8 ** (k + 1)."""
    model = keras.Sequential(
        [
            keras.Input((1,)),
            keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros"),
        ]
    )
    model.compile(keras.optimizers.SGD(0.1), "mse")
    return model


def kernel(model):
    return float(keras.ops.convert_to_numpy(model.weights[0])[0, 0])


def test_fit_resumably_keeps_the_best_validation_epoch_and_stops_on_it(tmp_path):
    """Validation wants w = 0.5, training w = 1: the validation loss
    (w - 0.5)^2 is lowest after epoch 2 (w = 0.488) and rises after it;
    the train loss falls every epoch. With patience 2 training stops after
    epoch 4; the chosen weights are epoch 2's, the final ones epoch 4's."""
    from _shared.callbacks import fit_resumably
    from _shared.run_state import RunState

    model = linear_model()
    ones = np.ones((1, 1), "float32")
    history = fit_resumably(
        model,
        RunState(tmp_path, {}),
        monitor="val_loss",
        mode="min",
        patience=2,
        x=ones,
        y=ones,
        validation_data=(ones, 0.5 * ones),
        epochs=10,
        batch_size=1,
        shuffle=False,
        verbose=0,
    )
    weights = [1 - 0.8 ** (epoch + 1) for epoch in range(5)]
    assert sorted(history.rows) == [0, 1, 2, 3, 4]
    assert history.metric("val_loss") == pytest.approx(
        [(w - 0.5) ** 2 for w in weights], rel=1e-4
    )
    train_losses = history.metric("loss")
    assert train_losses == sorted(train_losses, reverse=True)
    assert kernel(model) == pytest.approx(weights[2], rel=1e-5)
    best = keras.saving.load_model(tmp_path / "best.keras")
    final = keras.saving.load_model(tmp_path / "final.keras")
    assert kernel(best) == pytest.approx(weights[2], rel=1e-5)
    assert kernel(final) == pytest.approx(weights[4], rel=1e-5)


def test_text_fit_task_validates_on_the_validation_data(monkeypatch, tmp_path):
    from _text_training import training as text_training

    seen = {}
    monkeypatch.setattr(
        text_training, "fit_resumably", lambda model, run, **kw: seen.update(kw)
    )
    inputs = keras.Input((2,))
    task = keras.Model(inputs, keras.layers.Dense(3)(inputs))
    task.save_to_preset = lambda path: None
    validation = (np.ones((4, 2)), np.arange(4))
    args = types.SimpleNamespace(
        learning_rate=1e-3,
        weight_decay=0.0,
        steps=12,
        warmup_steps=2,
        batch_size=4,
        patience=3,
        save_every=2,
        eval_every=4,
        log_every_steps=100,
        log_every_s=30.0,
    )
    stream = types.SimpleNamespace(period=2)
    run = types.SimpleNamespace(started=0.0, output_dir=tmp_path)
    text_training.fit_task(
        task, stream, validation, args, run, {"loss": "mse"}, "val_m", mode="max"
    )
    x, y, weights = seen["validation_data"]
    assert x is validation[0] and y is validation[1] and weights is None
    assert (seen["monitor"], seen["mode"], seen["patience"]) == ("val_m", "max", 3)
    assert seen["names"] == ("best_preset", "final_preset")
    # Six checkpoint periods of 2 steps, scored every second one.
    assert (seen["epochs"], seen["steps_per_epoch"], seen["validation_freq"]) == (
        6,
        2,
        2,
    )
    assert seen["stream"] is stream


class Calls:
    """Records which data each patched step of a program's `main` got."""

    def __init__(self):
        self.events = []

    def step(self, name, result, *argument_indices):
        def record(*args, **kwargs):
            self.events.append((name, *(args[i] for i in argument_indices)))
            return result

        return record


def patch_language_model_reports(monkeypatch, summary):
    from _text_training import training as text_training

    monkeypatch.setattr(
        text_training, "write_language_model_summary", lambda *a, **k: summary
    )
    monkeypatch.setattr(text_training, "spatial_filter_report", lambda *a: {})


def heldout_parts():
    """Validation and test parts as (inputs, labels), told apart by
    identity; labels are real ids (the unigram baseline reads them)."""
    return {
        "validation": ({"token_ids": np.zeros((1, 3))}, np.array([[5, 6, 0]])),
        "test": ({"token_ids": np.ones((1, 3))}, np.array([[7, 8, 9]])),
    }


def test_pretrain_mlm_chooses_on_validation_and_scores_test_once(monkeypatch, tmp_path):
    from _masked_lm import data
    from _masked_lm import reporting
    from _masked_lm import training

    program = load_program("pretrain_mlm")
    parts, calls = heldout_parts(), Calls()
    corpus = ("tokenizer", "train source", parts, np.ones(10), {})
    monkeypatch.setattr(data, "masked_corpus", lambda *a: corpus)
    trained = ("model", "trainer", "history", {})
    monkeypatch.setattr(training, "train", calls.step("train", trained, 3, 4))
    monkeypatch.setattr(
        reporting, "test_and_plot", calls.step("score", (0.5, 2.0), 1, 3)
    )
    patch_language_model_reports(
        monkeypatch, {"heldout_masked_tokens": 3, "seconds": 0}
    )
    program.main(["--fast", "--output-dir", str(tmp_path)])
    assert calls.events == [
        ("train", "train source", parts["validation"]),
        ("score", "trainer", parts["test"]),
    ]


def test_causal_lm_chooses_on_validation_and_scores_test_once(monkeypatch, tmp_path):
    from _causal_lm import data
    from _causal_lm import generation
    from _causal_lm import reporting
    from _causal_lm import training

    program = load_program("train_causal_lm")
    parts, calls = heldout_parts(), Calls()
    corpus = ("tokenizer", "train source", parts, np.ones(10), {})
    monkeypatch.setattr(data, "next_token_corpus", lambda *a: corpus)
    trained = ("causal lm", "trainer", "history", {})
    monkeypatch.setattr(training, "train", calls.step("train", trained, 3, 4))
    monkeypatch.setattr(reporting, "evaluate_and_plot", calls.step("score", 2.0, 1, 3))
    monkeypatch.setattr(
        generation, "generate_and_write", calls.step("generate", ({}, {}), 1, 2)
    )
    patch_language_model_reports(monkeypatch, {"seconds": 0})
    program.main(["--fast", "--output-dir", str(tmp_path)])
    assert calls.events == [
        ("train", "train source", parts["validation"]),
        ("score", "trainer", parts["test"]),
        ("generate", "causal lm", parts["test"]),
    ]


def test_text_classifier_chooses_on_validation_and_scores_test_once(
    monkeypatch, tmp_path
):
    from _shared import report
    from _text_classifier import reporting
    from _text_classifier import training
    from _text_training import training as text_training

    program = load_program("finetune_text_classifier")
    preset = tmp_path / "preset"
    preset.mkdir()
    (preset / "config.json").write_text("{}")
    parts, calls = heldout_parts(), Calls()
    task = {
        "name": "task",
        "sources": {"train": "train source"},
        "names": dict.fromkeys(("train", "validation", "test"), "split"),
        "classes": ["a", "b"],
        "counts": np.array([1, 1]),
        "majority": 0,
        "majority_accuracy": 0.5,
    }
    classifier = types.SimpleNamespace(count_params=lambda: 1, trainable_weights=[])
    monkeypatch.setattr(training, "prepare", lambda *a: (task, classifier, parts))
    monkeypatch.setattr(
        training, "train_classifier", calls.step("train", ("trainer", "h"), 3, 4)
    )
    monkeypatch.setattr(reporting, "test_and_plot", calls.step("score", 0.5, 1, 2))
    monkeypatch.setattr(report, "plot_history", lambda *a: None)
    monkeypatch.setattr(report, "write_summary", lambda *a, **k: {"seconds": 0})
    monkeypatch.setattr(text_training, "training_facts", lambda *a: {})
    flags = ["--fast", "--preset", str(preset), "--output-dir", str(tmp_path / "out")]
    program.main(flags)
    assert calls.events == [
        ("train", "train source", parts["validation"]),
        ("score", "trainer", parts["test"]),
    ]


def image_batches():
    """In-memory batches whose parts hold different constant images."""
    images = {
        part: np.full((n, 4, 4, 1), v, "float32")
        for part, n, v in (("train", 6, 0.0), ("validation", 3, 1.0), ("test", 5, 2.0))
    }
    return {
        "in_memory": True,
        "train": "train batches",
        "validation": (images["validation"], np.eye(3)[[0, 1, 2]]),
        "test": (images["test"], np.eye(3)[[2, 2, 1, 0, 0]]),
        "test_labels": np.array([2, 2, 1, 0, 0]),
        "epoch_callback": None,
    }


def test_image_fit_chooses_and_stops_on_the_validation_images(monkeypatch):
    from _image_classifier import training
    from _shared import callbacks

    seen = {}
    monkeypatch.setattr(
        callbacks, "fit_resumably", lambda model, run, **kw: seen.update(kw)
    )
    batches = image_batches()
    args = types.SimpleNamespace(patience=2, epochs=3, batch_size=2)
    training.fit("model", args, batches, "run")
    assert (seen["monitor"], seen["mode"], seen["patience"]) == (
        "val_accuracy",
        "max",
        2,
    )
    assert seen["x"] == "train batches"
    # In order, in batches of --batch-size: the validation images, 1s.
    validation = seen["validation_data"]
    images = np.concatenate([validation[i][0] for i in range(len(validation))])
    labels = np.concatenate([validation[i][1] for i in range(len(validation))])
    np.testing.assert_array_equal(images, np.ones((3, 4, 4, 1)))
    np.testing.assert_array_equal(labels, np.eye(3))


class ScoredModel:
    """A model that records what it is evaluated and predicted on, and
    predicts class 0."""

    def __init__(self):
        self.seen = []

    def evaluate(self, batches, verbose=0):
        self.seen.append(np.concatenate([batches[i][0] for i in range(len(batches))]))
        return 0.25, 0.5

    def predict(self, batches, verbose=0):
        size = sum(len(batches[i][0]) for i in range(len(batches)))
        return np.tile([1.0, 0.0, 0.0], (size, 1))


def test_image_report_scores_the_test_images(monkeypatch):
    from _image_classifier import reporting

    model = ScoredModel()
    args = types.SimpleNamespace(batch_size=2)
    loss, accuracy, labels, predictions = reporting.evaluate(
        model, args, image_batches()
    )
    assert (loss, accuracy) == (0.25, 0.5)
    np.testing.assert_array_equal(model.seen[0], np.full((5, 4, 4, 1), 2.0))
    np.testing.assert_array_equal(labels, [2, 2, 1, 0, 0])
    np.testing.assert_array_equal(predictions, [0, 0, 0, 0, 0])


@pytest.mark.backend_independent
def test_image_batches_keep_validation_and_test_apart():
    from _image_classifier import data as image_data

    data = {
        "classes": 3,
        "train": (np.zeros((6, 4, 4, 1), "float32"), np.array([0, 1, 2, 0, 1, 2])),
        "validation": (np.ones((2, 4, 4, 1), "float32"), np.array([1, 2])),
        "test": (np.full((3, 4, 4, 1), 2.0, "float32"), np.array([0, 0, 2])),
    }
    args = types.SimpleNamespace(
        seed=0,
        batch_size=4,
        process_id=0,
        num_processes=1,
        random_resized_crop=0.0,
        flip=False,
        randaugment=0,
        mixup=0.0,
        cutmix=0.0,
    )
    batches = image_data.training_batches(args, data, in_memory=True)
    np.testing.assert_array_equal(batches["validation"][0], np.ones((2, 4, 4, 1)))
    np.testing.assert_array_equal(batches["validation"][1], [[0, 1, 0], [0, 0, 1]])
    np.testing.assert_array_equal(batches["test"][0], np.full((3, 4, 4, 1), 2.0))
    np.testing.assert_array_equal(batches["test"][1], [[1, 0, 0], [1, 0, 0], [0, 0, 1]])
    np.testing.assert_array_equal(batches["test_labels"], [0, 0, 2])
    sizes = [batches[f"{part}_size"] for part in ("train", "validation", "test")]
    assert sizes == [6, 2, 3] and batches["steps_per_epoch"] == 2
