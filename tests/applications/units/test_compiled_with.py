"""What the text programs train with: the learning rate inside the optimizer
that `fit_task` compiles its trainer with (a linear warm-up from 0 to the
peak at --warmup-steps, then a cosine to 0 at --steps, computed here with
numpy), and the dtype policy --dtype-policy mixed_bfloat16 gives each text
program's model: computing in bfloat16, keeping float32 variables."""

import types

import keras
import numpy as np
import pytest

from tests.applications.programs._text_program_helpers import load_program


def expected_rates(steps, peak, warmup, total):
    steps = np.asarray(steps, dtype="float64")
    warming = peak * steps / warmup
    progress = np.clip((steps - warmup) / (total - warmup), 0.0, 1.0)
    decaying = peak * 0.5 * (1.0 + np.cos(np.pi * progress))
    return np.where(steps < warmup, warming, decaying)


def compiled_trainer(**flags):
    """The trainer `fit_task` trains (`training.compiled_trainer`) for
    `flags`."""
    from _text_training import training as text_training

    inputs = keras.Input((2,))
    task = keras.Model(inputs, keras.layers.Dense(3)(inputs))
    args = types.SimpleNamespace(batch_size=4, **flags)
    return text_training.compiled_trainer(task, args, {"loss": "mse"})


@pytest.mark.parametrize("peak, warmup, total", [(2e-3, 8, 40), (1e-4, 4, 12)])
def test_fit_task_compiles_the_warmup_cosine_schedule(peak, warmup, total):
    trainer = compiled_trainer(
        learning_rate=peak,
        weight_decay=0.05,
        steps=total,
        warmup_steps=warmup,
    )
    optimizer = trainer.optimizer
    assert isinstance(optimizer, keras.optimizers.AdamW)
    assert optimizer.weight_decay == pytest.approx(0.05)
    schedule = keras.optimizers.schedules.deserialize(
        optimizer.get_config()["learning_rate"]
    )
    steps = [0, warmup // 2, warmup, (warmup + total) // 2, total - 1, total]
    rates = [float(keras.ops.convert_to_numpy(schedule(step))) for step in steps]
    np.testing.assert_allclose(
        rates, expected_rates(steps, peak, warmup, total), rtol=1e-4, atol=1e-10
    )
    # The step the optimizer counts from is the trainer's: 0 before fit.
    assert int(keras.ops.convert_to_numpy(optimizer.iterations)) == 0


VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
    f"w{i}" for i in range(45)
]


def tokenizer():
    from keras_gmlp.models import gMLPTokenizer

    return gMLPTokenizer(vocabulary=VOCABULARY)


class Stop(Exception):
    pass


def policy_of_main(monkeypatch, program, module, function, flags, tmp_path):
    """The global dtype policy when `program`'s main reaches `function` of
    `module` (its first step after setting the policy), with `flags`."""
    seen = []

    def record(*args, **kwargs):
        seen.append(keras.config.dtype_policy().name)
        raise Stop

    monkeypatch.setattr(module, function, record)
    argv = ["--fast", "--dtype-policy", "mixed_bfloat16"]
    with pytest.raises(Stop):
        load_program(program).main([*argv, *flags, "--output-dir", str(tmp_path)])
    return seen[0]


def assert_mixed_bfloat16(backbone):
    """Float32 variables; each output of the backbone's graph (traced when
    it was built, under the policy in force) computed in bfloat16."""
    assert backbone.dtype_policy.name == "mixed_bfloat16"
    assert {v.dtype for v in backbone.weights} == {"float32"}
    outputs = keras.tree.flatten(backbone.output)
    assert {keras.backend.standardize_dtype(x.dtype) for x in outputs} == {"bfloat16"}


def fast_args(program, tmp_path, *flags):
    argv = ["--fast", "--dtype-policy", "mixed_bfloat16", *flags]
    return load_program(program).parse_args(argv + ["--output-dir", str(tmp_path)])[1]


@pytest.mark.parametrize("model", ["gmlp", "amlp"])
def test_pretraining_computes_in_bfloat16_with_float32_variables(
    monkeypatch, tmp_path, model
):
    from _masked_lm import data
    from _masked_lm.model import build_masked_lm

    flags = ["--model", model]
    policy = policy_of_main(
        monkeypatch, "pretrain_mlm", data, "masked_corpus", flags, tmp_path
    )
    assert policy == "mixed_bfloat16"
    args = fast_args("pretrain_mlm", tmp_path / "args", *flags)
    masked_lm = build_masked_lm(args, 50)
    assert_mixed_bfloat16(masked_lm.backbone)


def test_the_causal_lm_computes_in_bfloat16_with_float32_variables(
    monkeypatch, tmp_path
):
    from _causal_lm import data
    from _causal_lm.model import build_causal_lm

    policy = policy_of_main(
        monkeypatch, "train_causal_lm", data, "next_token_corpus", [], tmp_path
    )
    assert policy == "mixed_bfloat16"
    args = fast_args("train_causal_lm", tmp_path / "args")
    causal_lm = build_causal_lm(args, tokenizer())
    assert_mixed_bfloat16(causal_lm.backbone)


def test_the_classifier_computes_in_bfloat16_with_float32_variables(
    monkeypatch, tmp_path
):
    from _text_classifier import training
    from _text_classifier.model import load_classifier

    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.models import gMLPMaskedLM
    from keras_gmlp.models import gMLPMaskedLMPreprocessor

    preset = tmp_path / "preset"
    backbone = gMLPBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=1,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=16,
    )
    preprocessor = gMLPMaskedLMPreprocessor(tokenizer(), sequence_length=16)
    gMLPMaskedLM(backbone, preprocessor).save_to_preset(str(preset))
    flags = ["--preset", str(preset)]
    policy = policy_of_main(
        monkeypatch,
        "finetune_text_classifier",
        training,
        "prepare",
        flags,
        tmp_path / "o",
    )
    assert policy == "mixed_bfloat16"
    keras.config.set_dtype_policy("mixed_bfloat16")  # as the program's main does
    args = fast_args("finetune_text_classifier", tmp_path / "args", *flags)
    classifier = load_classifier(args, 2)
    assert_mixed_bfloat16(classifier.backbone)
