"""The learning rate each program trains with, at the steps that tell a
schedule apart (warm-up halfway and end, mid-decay, the last step),
against the formula its help states, computed here with numpy: a linear
warm-up from 0 to the peak, then a cosine to 0 at the last step, or the
peak held (--schedule constant). Also the step counts the text programs
derive from --steps and --epochs."""

import math
import types

import keras
import numpy as np
import pytest

from tests.applications.programs._text_program_helpers import load_program


def expected_rate(step, peak, warmup, total, constant=False):
    """The rate of a linear warm-up over `warmup` steps, then a cosine from
    `peak` to 0 at `total` (or `peak` held)."""
    if step < warmup:
        return peak * step / warmup
    if constant:
        return peak
    progress = min(step - warmup, total - warmup) / max(1, total - warmup)
    return peak * 0.5 * (1 + math.cos(math.pi * progress))


def schedule_of(optimizer):
    """The optimizer's learning rate as it was given: a schedule, or a
    float (read from its config, Keras' public record of it)."""
    config = optimizer.get_config()["learning_rate"]
    if isinstance(config, dict):
        return keras.optimizers.schedules.deserialize(config)
    return config


def rate(schedule, step):
    if not callable(schedule):  # a plain float: constant
        return float(schedule)
    return float(keras.ops.convert_to_numpy(schedule(step)))


def assert_schedule(schedule, peak, warmup, total, constant=False):
    """The schedule at steps 0, mid-warm-up, warm-up end, mid-decay, the
    last step trained (`total - 1`) and `total`."""
    middle = warmup + (total - warmup) // 2
    steps = sorted({0, warmup // 2, warmup, middle, total - 1, total})
    for step in steps:
        expected = expected_rate(step, peak, warmup, total, constant)
        assert rate(schedule, step) == pytest.approx(expected, rel=1e-4, abs=1e-9), (
            step,
            expected,
        )


@pytest.mark.parametrize(
    "peak, warmup, total", [(1e-3, 10, 100), (5e-4, 1, 7), (2e-3, 30, 30)]
)
def test_text_programs_warm_up_then_decay_to_zero_at_the_last_step(peak, warmup, total):
    from _text_training.training import warmup_cosine_adamw

    optimizer = warmup_cosine_adamw(peak, 0.01, total, warmup)
    assert_schedule(schedule_of(optimizer), peak, warmup, total)
    assert optimizer.weight_decay == pytest.approx(0.01)
    assert optimizer.clipnorm == 1.0
    # Half-way down the cosine: half the peak.
    if total - warmup >= 2 and (total - warmup) % 2 == 0:
        middle = warmup + (total - warmup) // 2
        assert rate(schedule_of(optimizer), middle) == pytest.approx(peak / 2, rel=1e-4)


def test_pretraining_paper_recipe_schedule(tmp_path):
    """--recipe paper: BERT's 1e-4 peak after 10,000 warm-up steps of 1M,
    weight decay 0.01."""
    from _text_training.training import warmup_cosine_adamw

    program = load_program("pretrain_mlm")
    flags = ["--model", "gmlp_base", "--recipe", "paper"]
    _, args = program.parse_args(flags + ["--output-dir", str(tmp_path)])
    assert (args.steps, args.warmup_steps, args.learning_rate) == (
        1_000_000,
        10_000,
        1e-4,
    )
    optimizer = warmup_cosine_adamw(
        args.learning_rate, args.weight_decay, args.steps, args.warmup_steps
    )
    schedule = schedule_of(optimizer)
    assert rate(schedule, 5_000) == pytest.approx(5e-5, rel=1e-4)
    assert rate(schedule, 10_000) == pytest.approx(1e-4, rel=1e-4)
    assert rate(schedule, 505_000) == pytest.approx(5e-5, rel=1e-4)
    assert rate(schedule, 1_000_000) == pytest.approx(0.0, abs=1e-10)
    assert optimizer.weight_decay == pytest.approx(0.01)


def image_args(**flags):
    defaults = {"learning_rate": 2e-3, "epochs": 3, "warmup_steps": 0}
    return types.SimpleNamespace(**{"schedule": "cosine", **defaults, **flags})


@pytest.mark.parametrize("warmup", [0, 4, 50])
def test_image_cosine_schedule(warmup):
    from _image_classifier import training

    # 3 epochs of 10 steps; a warm-up longer than training stops at its end.
    schedule = training.learning_rate(image_args(warmup_steps=warmup), 10)
    assert_schedule(schedule, 2e-3, min(warmup, 30), 30)


@pytest.mark.parametrize("warmup", [0, 4])
def test_image_constant_schedule_stays_at_the_peak(warmup):
    from _image_classifier import training

    args = image_args(schedule="constant", warmup_steps=warmup)
    schedule = training.learning_rate(args, 10)
    assert_schedule(schedule, 2e-3, warmup, 30, constant=True)


def test_image_paper_recipe_schedule(tmp_path):
    """--recipe paper on ImageNet's 1,281,167 images in batches of 4096:
    313 steps an epoch, 300 epochs, a peak of 1e-3 after 10,000 steps."""
    from _image_classifier import training

    program = load_program("train_image_classifier")
    flags = ["--model", "gmlp_s16", "--recipe", "paper"]
    _, args = program.parse_args(flags + ["--output-dir", str(tmp_path)])
    steps_per_epoch = math.ceil(1_281_167 / 4096)
    assert (steps_per_epoch, args.epochs, args.batch_size) == (313, 300, 4096)
    schedule = training.learning_rate(args, steps_per_epoch)
    assert_schedule(schedule, 1e-3, 10_000, 93_900)


def test_image_program_schedule_counts_steps_not_images(monkeypatch, tmp_path):
    """train_image_classifier.py compiles with the batches an epoch has:
    35 train images in batches of 10 are 4 steps, 12 in 3 epochs."""
    from _image_classifier import data as image_data
    from _image_classifier import model as image_model
    from _image_classifier import reporting
    from _image_classifier import training

    program = load_program("train_image_classifier")
    data = {"classes": 3, "channels": 1}
    for part, size in (("train", 35), ("validation", 5), ("test", 5)):
        data[part] = (np.zeros((size, 16, 16, 1), "float32"), np.arange(size) % 3)
        data[f"{part}_split"] = part
    model = keras.Sequential([keras.Input((16, 16, 1)), keras.layers.Dense(3)])
    monkeypatch.setattr(image_data, "load_data", lambda *a: (data, 1))
    monkeypatch.setattr(image_model, "build_model", lambda *a: (model, "random"))
    monkeypatch.setattr(training, "prepare_backend", lambda args: None)
    monkeypatch.setattr(reporting, "print_start", lambda *a: None)
    monkeypatch.setattr(training, "fit", lambda *a: "history")
    reported = []
    monkeypatch.setattr(reporting, "report", lambda *a: reported.append(a[3]))
    flags = ["--batch-size", "10", "--epochs", "3", "--warmup-steps", "2"]
    program.main(flags + ["--output-dir", str(tmp_path)])
    assert_schedule(schedule_of(model.optimizer), 2e-3, 2, 12)
    assert reported == ["history"]


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "steps, expected", [(1000, 100), (97, 1), (30, 3), (5, 1), (64, 4), (120, 12)]
)
def test_default_evaluation_period_divides_the_steps(steps, expected):
    """The largest divisor of the steps up to a tenth of them."""
    from _text_training.training import default_eval_every

    assert default_eval_every(steps) == expected


def resolved(**flags):
    from _text_training.training import resolve_steps

    defaults = {"steps": None, "epochs": 3, "eval_every": None, "save_every": None}
    args = types.SimpleNamespace(**{**defaults, "warmup_steps": None, **flags})
    parser = types.SimpleNamespace(error=lambda message: pytest.fail(message))
    resolve_steps(parser, args, 25)
    return args.steps, args.eval_every, args.save_every, args.warmup_steps


@pytest.mark.backend_independent
def test_steps_from_epochs_or_given():
    # --epochs 3 of 25 batches: 75 steps, scored once an epoch, warm-up a
    # tenth of the steps.
    assert resolved() == (75, 25, 25, 7)
    assert resolved(epochs=1) == (25, 25, 25, 2)
    # --steps: about ten evaluations (the largest divisor up to a tenth).
    assert resolved(steps=200) == (200, 20, 20, 20)
    assert resolved(steps=9) == (9, 1, 1, 1)
    assert resolved(steps=60, save_every=3, warmup_steps=0) == (60, 6, 3, 0)
