"""Every guide runs top to bottom in fast mode, and what it trains beats chance.

Each guide runs in its own subprocess (the backend is fixed when keras is
imported, and a guide may configure devices before that) with
`KERAS_GMLP_GUIDE_FAST=1` and this run's `KERAS_BACKEND`. The subprocess
executes the guide with `runpy.run_path` and writes the guide's module-level
int, float and bool variables to a JSON file; `EXPECTATIONS` below checks
them, so the guides stay plain tutorials with no test code in them.

Cost: the guides' fast modes, about 15-25 s each per backend on 2 cores.
"""

import glob
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUIDES = sorted(glob.glob(os.path.join(ROOT, "guides", "*.py")))

# Runs one guide and dumps its numeric results; argv: guide path, JSON path.
RUNNER = """
import json, numbers, runpy, sys

namespace = runpy.run_path(sys.argv[1], run_name="__main__")
results = {
    name: value if isinstance(value, bool) else float(value)
    for name, value in namespace.items()
    if not name.startswith("_") and isinstance(value, (bool, numbers.Real))
}
with open(sys.argv[2], "w") as file:
    json.dump(results, file)
"""

# Per guide: module-level variable -> check. A guide that trains must beat
# chance; the chance level of each task is named in the comment.
EXPECTATIONS = {
    "getting_started.py": {
        # 10 digit classes: chance 0.1.
        "test_accuracy": lambda v: v > 0.3,
        # Which of 16 tokens each row of the trained W reads most: chance 1/16.
        "shift_rows_found": lambda v: v > 0.5,
        # The reloaded .keras model predicts exactly as the original.
        "reload_max_difference": lambda v: v < 1e-5,
    },
    "image_classification_from_scratch.py": {
        # 10 classes (digits or CIFAR-10): chance 0.1.
        "gmlp_test_accuracy": lambda v: v > 0.3,
        "mixer_test_accuracy": lambda v: v > 0.3,
    },
    "transfer_learning.py": {
        # 5 new classes: chance 0.2.
        "frozen_test_accuracy": lambda v: v > 0.4,
        "fine_tuned_test_accuracy": lambda v: v > 0.4,
        "lora_test_accuracy": lambda v: v > 0.4,
        # Rank-4 factors, biases and head: a small share of the weights.
        "lora_trainable": lambda v: 0 < v < 20_000,
    },
    "distributed_training.py": {
        # 10 digit classes: chance 0.1.
        "test_accuracy": lambda v: v > 0.2,
    },
    # The text guides measure their own baseline (majority class, most
    # frequent token, unigram model, uncached decoding) and report the margin.
    "masked_language_modeling.py": {
        # Masked-token accuracy above always guessing the most frequent token
        # (fast mode trains for seconds: PyTorch's aMLP clears it by 0.009).
        "gmlp_accuracy_over_majority": lambda v: v > 0,
        "amlp_accuracy_over_majority": lambda v: v > 0,
        # Held-out perplexity below the context-free unigram model's.
        "gmlp_perplexity_below_unigram": lambda v: v > 0,
        "amlp_perplexity_below_unigram": lambda v: v > 0,
        # Fine-tuned classifiers above their majority class.
        "sentence_accuracy_over_majority": lambda v: v > 0.1,
        "pair_accuracy_over_majority": lambda v: v > 0.05,
    },
    "text_generation.py": {
        # Held-out next-token perplexity below the context-free unigram's.
        "perplexity_below_unigram": lambda v: v > 0,
        # Cached and uncached greedy decoding give the same tokens (speed is
        # printed, never asserted).
        "cached_matches_uncached": lambda v: v is True,
    },
    "what_mlps_learn.py": {
        # 10 digit classes: chance 0.1.
        "mixer_accuracy": lambda v: v > 0.5,
        "mixer_shuffled_accuracy": lambda v: v > 0.5,
        "cnn_accuracy": lambda v: v > 0.15,
        # Permuted weights on shuffled images reproduce the original outputs.
        "permuted_max_difference": lambda v: v < 1e-4,
        # Copying the token two places back makes W nearly Toeplitz; at
        # initialisation it is noise (about 1/24 for 24 tokens, causal).
        "initial_toeplitz_score": lambda v: v < 0.2,
        "trained_toeplitz_score": lambda v: v > 0.6,
    },
    "export_and_serving.py": {
        # The .keras file loaded on another backend gives the same outputs.
        "cross_backend_max_abs_diff": lambda v: v < 1e-4,
        # Every exported artifact, run by its own runtime, matches Keras.
        "export_max_abs_diff": lambda v: v < 1e-4,
        "num_export_formats": lambda v: v == 3,
        # The int8 copy classifies (nearly) as the float model does.
        "int8_accuracy_change": lambda v: v < 0.05,
        # GPTQ's 4-bit weights, fitted to calibration windows, keep the
        # logits closer to float32's than int4's rounding.
        "gptq_closer_than_int4": lambda v: v is True,
    },
}

HEADER = re.compile(
    r'^"""\n'
    r"Title: .+\n"
    r"Author: .+\n"
    r"Date created: \d{4}/\d{2}/\d{2}\n"
    r"Last modified: \d{4}/\d{2}/\d{2}\n"
    r"Description: (?P<description>[A-Z][^\n]*\.)\n"
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "guide", GUIDES, ids=[os.path.basename(path) for path in GUIDES]
)
def test_guide_runs_in_fast_mode(guide, tmp_path):
    name = os.path.basename(guide)
    with open(guide) as file:
        source = file.read()
    header = HEADER.match(source)
    assert header, f"{name}: the tutobook header is missing or malformed"
    assert header["description"].count(". ") == 0, (
        f"{name}: the description must be one sentence"
    )
    assert source.count("\n") <= 300, f"{name}: longer than 300 lines"
    assert "KERAS_GMLP_GUIDE_FAST" in source, f"{name}: no fast mode"
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    if name == "distributed_training.py" and backend == "jax":
        pytest.skip("on JAX tests/distribution/test_guide.py runs it (multidevice)")
    results = run_guide(guide, tmp_path, backend)
    assert EXPECTATIONS.get(name), f"{name}: no expectations in EXPECTATIONS"
    for variable, check in EXPECTATIONS[name].items():
        assert variable in results, f"{name} defines no numeric `{variable}`"
        assert check(results[variable]), (
            f"{name}: {variable}={results[variable]} fails its check"
        )


def run_guide(guide, tmp_path, backend):
    """Runs `guide` in fast mode in a subprocess; returns its numeric
    module-level variables, and the subprocess's stdout under "stdout"."""
    name = os.path.basename(guide)
    results_path = tmp_path / "results.json"
    env = dict(
        os.environ,
        KERAS_GMLP_GUIDE_FAST="1",
        KERAS_BACKEND=backend,
        PYTHONPATH=ROOT,
        MPLBACKEND="Agg",
        TF_CPP_MIN_LOG_LEVEL="2",
        # The guides' output directories (tempfile.mkdtemp) land in tmp_path.
        TMPDIR=str(tmp_path),
    )
    # The guide runs in a scratch directory so that nothing lands in the repo.
    result = subprocess.run(
        [sys.executable, "-c", RUNNER, guide, str(results_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,  # only against hangs: a guide takes under a minute
    )
    assert result.returncode == 0, (
        f"{name} failed:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    )
    return {**json.loads(results_path.read_text()), "stdout": result.stdout}
