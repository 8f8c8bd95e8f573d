"""Runs every ```python example in README.md (and in docs/library.md, the
README's former sections) as written, on the current backend, in an empty
folder: only a fresh checkout's files.

The image example reads timm's `model.safetensors` for gMLP-S, which its
first line fetches with `.venv/bin/hf download` and CI cannot: the test stands in for
that command, writing the file in timm's own layout (converted from a
randomly initialised gMLP-S by `timm_state_dict`, so the example's timm
loading path runs for real). Nothing else is written for an example.
"""

import os
import pathlib
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = (README, ROOT / "docs" / "library.md")
CHECKPOINT = "model.safetensors"
# The command the image example names in its first line.
FETCH = (
    ".venv/bin/hf download timm/gmlp_s16_224.ra3_in1k model.safetensors --local-dir ."
)


def python_examples(pages=PAGES):
    return [
        code
        for page in pages
        for code in re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    ]


def test_readme_has_three_examples():
    examples = python_examples([README])
    assert len(examples) == 3
    assert [code for code in examples if CHECKPOINT in code][0].startswith(
        f"# First, in the shell: {FETCH}\n"
    )


# A C++ log line at the error or fatal level: "E0000 00:00:17957.. 123 util.cc:131] ...".
ERROR_LINE = re.compile(r"^[EF]\d{4} .*$", re.M)
# TensorFlow's once-a-process notice that oneDNN runs an int64 op through
# Eigen; example 3 turns oneDNN off before TensorFlow loads, which only a
# fresh process shows (test_the_examples_start_with_no_error_line).
ONEDNN_INT64 = "oneDNN supports DT_INT64"
# This test process loaded TensorFlow before any example could set it.
ONEDNN_ON_HERE = os.environ.get("TF_ENABLE_ONEDNN_OPTS") != "0"


def error_lines(stderr, oneDNN_on=False):
    return [
        line
        for line in ERROR_LINE.findall(stderr)
        if not (oneDNN_on and ONEDNN_INT64 in line)
    ]


@pytest.mark.backend_independent
def test_error_lines_are_found():
    stderr = (
        "I0000 00:00:1795.1 1 port.cc:153] oneDNN custom operations are on.\n"
        "E0000 00:00:1795.2 1 cuda_platform.cc:52] failed call to cuInit: (303)\n"
        f"E0000 00:00:1795.3 1 util.cc:131] {ONEDNN_INT64} only on platforms\n"
        "W0000 00:00:1795.4 1 loop_optimizer.cc:934] Skipping loop optimization\n"
    )
    assert len(error_lines(stderr)) == 2
    assert len(error_lines(stderr, oneDNN_on=True)) == 1


# Example 3's lines up to its data, then keras-hub's text packing in
# tf.data (where oneDNN's int64 notice comes from) on a tiny vocabulary.
FRESH_START = """
{prelude}
tokenizer = keras_gmlp.models.gMLPTokenizer(
    vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "for"]
)
preprocessor = keras_gmlp.models.gMLPCausalLMPreprocessor(tokenizer, sequence_length=8)
for batch in tf.data.Dataset.from_tensor_slices(["the for", "for"]).batch(2).map(
    preprocessor
):
    pass
"""


@pytest.mark.slow
@pytest.mark.backend_independent
def test_the_examples_start_with_no_error_line(tmp_path):
    """In a fresh process, as a reader runs it: TensorFlow loaded, then
    keras_gmlp (no `failed call to cuInit` line without a GPU driver), and
    example 3's text packing (no oneDNN int64 line)."""
    code = [c for c in python_examples([README]) if "gMLPCausalLM(" in c][0]
    prelude = code.split("\ntexts = ")[0]
    assert "import keras_gmlp.models" in prelude
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    result = subprocess.run(
        [sys.executable, "-c", FRESH_START.format(prelude=prelude)],
        cwd=tmp_path,
        env=dict(env, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="0"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert error_lines(result.stderr) == [], result.stderr[-3000:]


def write_timm_checkpoint(path):
    import keras
    from safetensors.numpy import save_file

    import keras_gmlp

    model = keras_gmlp.applications.gMLPS(weights=None)
    save_file(keras_gmlp.applications.timm_state_dict(model), str(path))
    del model
    keras.backend.clear_session()


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(python_examples())))
def test_readme_example_runs(index, tmp_path, monkeypatch, capfd):
    code = python_examples()[index]
    monkeypatch.chdir(tmp_path)
    # What an example sets for TensorFlow is undone after it.
    monkeypatch.delenv("TF_ENABLE_ONEDNN_OPTS", raising=False)
    if CHECKPOINT in code:
        write_timm_checkpoint(tmp_path / CHECKPOINT)  # what FETCH downloads
    capfd.readouterr()
    namespace = {"__name__": "readme"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        exec(compile(code, f"README.md example {index}", "exec"), namespace)
    assert error_lines(capfd.readouterr().err, oneDNN_on=ONEDNN_ON_HERE) == []
    if index < len(python_examples([README])):
        # docs/library.md's preset example fits numpy arrays through
        # keras-hub, whose own dataset then draws Keras' `shuffle=True is
        # ignored` warning; the README's examples draw none.
        warned = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
        assert warned == []
    for name in re.findall(r"savefig\(\"([^\"]+)\"\)", code):
        assert (tmp_path / name).stat().st_size > 0
    checks = [check for marker, check in RESULT_CHECKS.items() if marker in code]
    assert checks, f"README example {index} has no result check in this file"
    for check in checks:
        check(namespace)


def check_layers_example(namespace):
    model = namespace["model"]
    assert model.output_shape == (None, 10)
    # Stem 4*4*3*64 + 64; per block: norm 128, Dense 64->384, SGU norm
    # 2*192, W 64*64 + b 64, Dense 192->64; final norm 128; head 64*10 + 10.
    block = 128 + (64 * 384 + 384) + 2 * 192 + 64 * 64 + 64 + (192 * 64 + 64)
    expected = (4 * 4 * 3 * 64 + 64) + 4 * block + 128 + (64 * 10 + 10)
    assert model.count_params() == expected
    assert np.isfinite(model.history.history["loss"][-1])


def check_timm_example(namespace):
    import keras

    predictions = namespace["predictions"]
    assert predictions.shape == (1, 1000)
    np.testing.assert_allclose(predictions.sum(), 1.0, rtol=1e-4)
    decoded = namespace["keras_gmlp"].applications.decode_predictions(
        predictions, top=3
    )
    scores = [score for _, _, score in decoded[0]]
    assert len(scores) == 3 and scores == sorted(scores, reverse=True)
    np.testing.assert_allclose(scores[0], predictions.max(), rtol=1e-6)
    # gMLP-S/16 (REFERENCE.md: timm's gmlp_s16_224), at 224x320 too: the
    # spatial weights grow, 14x20 = 280 tokens, and nothing else does.
    model, wide = namespace["model"], namespace["wide"]
    assert model.count_params() == 19_422_656
    assert wide.output_shape == (None, 1000)
    kernel = wide.get_layer("blocks_0").spatial_gating_unit.kernel
    assert tuple(kernel.shape)[-2:] == (280, 280)
    assert wide.count_params() - model.count_params() == 30 * (
        280**2 + 280 - 196**2 - 196
    )
    keras.backend.clear_session()


def check_causal_lm_example(namespace):
    outputs = namespace["outputs"]
    assert len(outputs) == 2
    for prompt, text in zip(["the for statement", "a class definition"], outputs):
        assert text.startswith(prompt) and len(text) > len(prompt), (prompt, text)


def check_preset_example(namespace):
    classifier, restored = namespace["classifier"], namespace["restored"]
    images, features = namespace["images"], namespace["features"]
    np.testing.assert_allclose(
        restored.predict(images, verbose=0),
        classifier.predict(images, verbose=0),
        atol=1e-5,
    )
    # gMLP-Ti: width 128; 64x64 images in 16x16 patches make a 4x4 grid.
    assert len(features) == 2
    for value in features.values():
        assert tuple(value.shape) in ((2, 16, 128), (2, 4, 4, 128))


# A marker that identifies each README example -> the check of its results.
RESULT_CHECKS = {
    "layers.PatchEmbedding(": check_layers_example,
    CHECKPOINT: check_timm_example,
    "gMLPCausalLM(": check_causal_lm_example,
    "save_to_preset(": check_preset_example,
}
