"""applications/train_causal_lm.py: the --fast default (training and
generation with every sampler), generation from a saved preset, errors.

Cost per backend: one tiny training run, six samplers' generation, and
one generation from the preset.
"""

import json
import types

import keras
import pytest

from tests.applications.programs._text_program_helpers import leftovers
from tests.applications.programs._text_program_helpers import load_program
from tests.applications.programs._text_program_helpers import run_command


@pytest.fixture(scope="module")
def fast_run(tmp_path_factory):
    output_dir = tmp_path_factory.mktemp("train_causal_lm")
    summary = load_program("train_causal_lm").main(
        ["--fast", "--output-dir", str(output_dir)]
    )
    return output_dir, summary


def test_fast_default_trains_saves_and_generates(fast_run):
    output_dir, summary = fast_run
    program = load_program("train_causal_lm")
    for name in (
        "history.csv",
        "training_curves.png",
        "perplexity_by_position.png",
        "generations.json",
        "summary.json",
    ):
        assert (output_dir / name).stat().st_size > 0, name
    assert (output_dir / "final_preset" / "config.json").is_file()
    assert (output_dir / "best_preset" / "config.json").is_file()
    assert leftovers(output_dir) == []
    assert json.loads((output_dir / "final_preset" / "config.json").read_text())[
        "config"
    ]["causal"]
    assert summary["backend"] == keras.backend.backend()
    assert 1.0 < summary["heldout_perplexity"] < 2 * summary["vocabulary_size"]

    splits = summary["corpus"]["splits"]
    assert [splits[p]["documents"] for p in ("train", "validation", "test")] == [
        10,
        1,
        1,
    ]
    # The trained Toeplitz scores are those of the chosen (best) preset's W.
    from keras_gmlp.models import gMLPBackbone
    from keras_gmlp.visualization import toeplitz_scores

    backbone = gMLPBackbone.from_preset(str(output_dir / "best_preset"))
    scores = summary["toeplitz_scores"]
    assert scores["trained"] == pytest.approx(toeplitz_scores(backbone), rel=1e-6)
    assert len(scores["initial"]) == backbone.num_layers
    assert (output_dir / "spatial_filters.png").stat().st_size > 0
    generations = summary["generations"]
    assert sorted(generations) == sorted(program.recipe.SAMPLERS)
    for texts in generations.values():
        assert len(texts) == len(program.recipe.DEFAULT_PROMPTS)
        for prompt, text in zip(program.recipe.DEFAULT_PROMPTS, texts):
            assert text.startswith(prompt)


def test_generation_from_preset_matches_the_trained_model(fast_run, tmp_path):
    output_dir, summary = fast_run
    program = load_program("train_causal_lm")
    program.main(
        [
            "--preset",
            str(output_dir / "best_preset"),
            "--max-length",
            "16",
            "--samplers",
            "greedy",
            "--output-dir",
            str(tmp_path),
        ]
        + [
            flag
            for prompt in program.recipe.DEFAULT_PROMPTS
            for flag in ("--prompt", prompt)
        ]
    )
    generated = json.loads((tmp_path / "generations.json").read_text())["generations"]
    # Greedy decoding of the reloaded preset repeats the trained model's.
    assert generated == {"greedy": summary["generations"]["greedy"]}
    assert not (tmp_path / "final_preset").exists()


def _int8_reference(preset):
    """The preset's causal LM with its backbone quantized by hand."""
    from keras_gmlp.models import gMLPCausalLM

    reference = gMLPCausalLM.from_preset(str(preset))
    reference.backbone.quantize("int8")
    return reference


def test_quantized_generation_from_preset(fast_run, tmp_path):
    """--quantize int8 greedy-decodes as the preset quantized by hand; the
    preset stays float."""
    output_dir, _ = fast_run
    program = load_program("train_causal_lm")
    flags = ["--preset", str(output_dir / "best_preset"), "--max-length", "16"]
    flags += ["--samplers", "greedy", "--quantize", "int8", "--prompt", "a class"]
    summary = program.main(flags + ["--output-dir", str(tmp_path)])
    assert summary["quantize"] == "int8"
    reference = _int8_reference(output_dir / "best_preset")
    reference.compile(sampler="greedy")
    expected = reference.generate(["a class"], max_length=16)
    assert summary["generations"] == {"greedy": [str(expected[0])]}
    from keras_gmlp.models import gMLPBackbone

    float_backbone = gMLPBackbone.from_preset(str(output_dir / "best_preset"))
    assert all(w.dtype != "int8" for w in float_backbone.weights)


def test_quantized_perplexity_counts_the_real_next_tokens(fast_run):
    """The int8 copy's perplexity is exp(mean cross-entropy over labels
    other than 0) of the hand-quantized model's logits, and the trained
    model is left float."""
    import numpy as np
    from _causal_lm import data as lm_data
    from _causal_lm import generation

    from keras_gmlp.models import gMLPCausalLM

    output_dir, _ = fast_run
    causal_lm = gMLPCausalLM.from_preset(str(output_dir / "best_preset"))
    length = causal_lm.backbone.max_sequence_length
    rng = np.random.default_rng(3)
    rows = rng.integers(5, causal_lm.backbone.vocabulary_size, (3, length + 1))
    rows[1, 9:] = 0  # a shorter window: its padding is not counted
    x, y = lm_data.inputs_and_labels(rows.astype("int32"))
    args = types.SimpleNamespace(quantize="int8")
    quantized, scores = generation.quantized_generator(args, causal_lm, (x, y))
    assert all(w.dtype != "int8" for w in causal_lm.weights)
    assert any(w.dtype == "int8" for w in quantized.weights)
    backbone = _int8_reference(output_dir / "best_preset").backbone
    hidden = backbone({**x, "segment_ids": np.zeros_like(x["token_ids"])})
    logits = keras.ops.convert_to_numpy(
        backbone.token_embedding(hidden["sequence_output"], reverse=True)
    ).astype("float64")
    logits -= logits.max(axis=-1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    losses = -np.take_along_axis(log_probs, y[..., None], axis=-1)[..., 0]
    expected = np.exp(losses[y > 0].mean())
    assert scores == {"heldout_perplexity_int8": pytest.approx(expected, rel=1e-4)}


def test_an_interrupt_while_generating_resumes_from_the_trained_weights(
    fast_run, tmp_path, monkeypatch
):
    from _causal_lm import generation

    reference_dir, reference = fast_run
    program = load_program("train_causal_lm")
    output_dir = tmp_path / "out"
    flags = ["--fast", "--output-dir", str(output_dir)]

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        # Ctrl-C while the samples are written: training is kept.
        patch.setattr(generation, "generate_all", interrupted)
        with pytest.raises(KeyboardInterrupt):
            program.main(flags)
    state = json.loads((output_dir / "run_state.json").read_text())
    assert state["stage"] == "trained"
    assert (output_dir / "trained.weights.h5").is_file()
    assert (output_dir / "history.csv").is_file()
    assert not (output_dir / "backup").exists()
    with monkeypatch.context() as patch:
        # Only the evaluation, samples, plots and summary run again.
        patch.setattr(keras.Model, "fit", interrupted)
        summary = program.main(flags)
    assert summary["heldout_perplexity"] == pytest.approx(
        reference["heldout_perplexity"], rel=1e-5
    )
    assert summary["generations"]["greedy"] == reference["generations"]["greedy"]
    assert summary["epochs_completed"] == reference["epochs_completed"]
    assert json.loads((output_dir / "run_state.json").read_text())["stage"] == (
        "finished"
    )
    assert not (output_dir / "trained.weights.h5").exists()
    assert leftovers(output_dir) == []


def test_preset_errors(tmp_path):
    missing = run_command(
        "train_causal_lm.py",
        "--preset",
        tmp_path / "nothing",
        "--output-dir",
        tmp_path / "o",
    )
    assert missing.returncode == 2
    assert "python applications/train_causal_lm.py" in missing.stderr
    encoder = tmp_path / "encoder"
    encoder.mkdir()
    (encoder / "config.json").write_text(json.dumps({"config": {"causal": False}}))
    bidirectional = run_command(
        "train_causal_lm.py", "--preset", encoder, "--output-dir", tmp_path / "o"
    )
    assert bidirectional.returncode == 2
    assert "bidirectional" in bidirectional.stderr


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--epochs", "0"], "--epochs"),
        (["--model", "bert"], "--model"),
        (["--samplers", "greedy,nucleus"], "--samplers"),
        (["--sequence-length", "16", "--max-length", "32"], "--max-length"),
    ],
)
def test_flag_errors_exit_2(tmp_path, flags, message):
    result = run_command("train_causal_lm.py", *flags, "--output-dir", tmp_path / "o")
    assert result.returncode == 2
    assert message in result.stderr


def test_help_shows_defaults():
    result = run_command("train_causal_lm.py", "--help", timeout=10)
    assert result.returncode == 0
    assert "(default: reference)" in result.stdout


@pytest.mark.parametrize("mode", ["int4", "gptq"])
def test_four_bit_generation_from_preset(fast_run, tmp_path, mode):
    """--quantize int4 or gptq (calibrated on windows of the bundled
    corpus) on a preset: the blocks' Dense kernels 4-bit in the copy that
    generates, its held-out perplexity near float32's, the preset float."""
    import numpy as np
    from _causal_lm import data as lm_data
    from _causal_lm import generation

    from keras_gmlp.models import gMLPCausalLM

    output_dir, _ = fast_run
    if mode == "gptq":  # the program's path (int4's is int8's)
        program = load_program("train_causal_lm")
        flags = ["--preset", str(output_dir / "best_preset"), "--max-length", "16"]
        flags += ["--samplers", "greedy", "--quantize", mode, "--prompt", "a class"]
        summary = program.main(flags + ["--output-dir", str(tmp_path)])
        assert summary["quantize"] == mode
        assert summary["generations"]["greedy"][0].startswith("a class")
    causal_lm = gMLPCausalLM.from_preset(str(output_dir / "best_preset"))
    length = causal_lm.backbone.max_sequence_length
    args = types.SimpleNamespace(quantize=mode, corpus="reference")
    calibration = lm_data.bundled_calibration(
        args, causal_lm.preprocessor.tokenizer, length
    )
    assert calibration is None if mode == "int4" else calibration.shape[1] == length
    windows = lm_data.calibration_windows(
        lm_data_source(), causal_lm.preprocessor.tokenizer, length + 1, 8
    )
    heldout = lm_data.inputs_and_labels(windows)
    quantized, scores = generation.quantized_generator(
        args, causal_lm, heldout, calibration
    )
    block = quantized.backbone.gmlp_blocks[0]
    assert block.expand_dense.quantization_mode == mode
    assert all(w.dtype != "int8" for w in causal_lm.weights)
    _, float_scores = generation.quantized_generator(
        types.SimpleNamespace(quantize="float8"), causal_lm, heldout
    )
    ratio = (
        scores[f"heldout_perplexity_{mode}"] / float_scores["heldout_perplexity_float8"]
    )
    assert np.isfinite(ratio) and 0.5 < ratio < 2.0


def lm_data_source():
    from _causal_lm import data as lm_data
    from _text_input.sources import memory_sources

    documents = lm_data.bundled_documents(types.SimpleNamespace(corpus="reference"))
    return memory_sources({"train": documents, "validation": {}, "test": {}})["train"]
