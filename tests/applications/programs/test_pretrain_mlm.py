"""applications/pretrain_mlm.py: the --fast default, resume, flag errors.

Cost per backend: three tiny runs of one epoch and two of two epochs
(one layer of width 32 on 12 documents), a few seconds each after the
first compilation.
"""

import csv
import json

import keras
import numpy as np
import pytest
from _shared.run_state import RunState

from tests.applications.programs._text_program_helpers import fast_pretraining_dir
from tests.applications.programs._text_program_helpers import leftovers
from tests.applications.programs._text_program_helpers import load_program
from tests.applications.programs._text_program_helpers import read_summary
from tests.applications.programs._text_program_helpers import run_command


def history_rows(output_dir):
    with open(output_dir / "history.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def heldout_scores_in_numpy(output_dir):
    """(accuracy, perplexity, tokens) of `best_preset` on the --fast run's
    test windows: argmax and exp(mean cross-entropy) over the real masked
    slots (label > 0), computed from the logits with numpy."""
    from _masked_lm import data as mlm_data

    from keras_gmlp.models import gMLPMaskedLM

    program = load_program("pretrain_mlm")
    parser, args = program.parse_args(["--fast", "--output-dir", str(output_dir)])
    run = RunState(output_dir, {})
    run.resuming = True  # the run's own vocabulary.txt
    _, _, masked, _, _ = mlm_data.masked_corpus(parser, args, run)
    inputs, labels = masked["test"]
    masked_lm = gMLPMaskedLM.from_preset(str(output_dir / "best_preset"))
    logits = keras.ops.convert_to_numpy(masked_lm(inputs)).astype("float64")
    real = labels > 0
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    label_log_probs = np.take_along_axis(log_probs, labels[..., None], axis=-1)[..., 0]
    accuracy = np.mean(logits.argmax(axis=-1)[real] == labels[real])
    perplexity = np.exp(-label_log_probs[real].mean())
    return accuracy, perplexity, int(real.sum())


def test_fast_default_writes_outputs():
    output_dir = fast_pretraining_dir()
    for name in (
        "history.csv",
        "training_curves.png",
        "heldout_accuracy_by_frequency.png",
    ):
        assert (output_dir / name).stat().st_size > 0, name
    for preset in ("best_preset", "final_preset"):
        for name in ("config.json", "task.json", "preprocessor.json", "tokenizer.json"):
            assert (output_dir / preset / name).is_file(), (preset, name)
    assert not (output_dir / "backup").exists()
    assert leftovers(output_dir) == []
    assert len(history_rows(output_dir)) == 1
    assert json.loads((output_dir / "run_state.json").read_text())["stage"] == (
        "finished"
    )
    summary = read_summary(output_dir)
    assert summary["backend"] == keras.backend.backend()
    # The reported test scores, recomputed in numpy from the chosen preset's
    # logits on the program's own test windows (masked with a fixed seed).
    accuracy, perplexity, tokens = heldout_scores_in_numpy(output_dir)
    assert summary["heldout_masked_tokens"] == tokens
    assert summary["heldout_masked_token_accuracy"] == pytest.approx(accuracy, abs=1e-6)
    assert summary["heldout_masked_token_perplexity"] == pytest.approx(
        perplexity, rel=1e-4
    )
    assert summary["flags"]["fast"] is True

    # Three disjoint document sets: validation chooses, test scores.
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


# Reading a tensorflow-datasets corpus is tf.data's on every backend; the
# training after it is tested per backend above.
@pytest.mark.backend_independent
def test_tfds_corpus(tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    program = load_program("pretrain_mlm")
    with tfds.testing.mock_data(num_examples=16):
        summary = program.main(
            [
                "--fast",
                "--dataset",
                "imdb_reviews",
                "--data-dir",
                str(tmp_path / "tfds"),
                "--output-dir",
                str(tmp_path / "out"),
            ]
        )
    assert summary["corpus"]["name"] == "imdb_reviews"
    assert (tmp_path / "out" / "final_preset" / "config.json").is_file()


def test_unknown_tfds_dataset_is_a_flag_error(tmp_path):
    program = load_program("pretrain_mlm")
    with pytest.raises(SystemExit) as raised:
        program.main(["--dataset", "no_such_corpus_xyz", "--output-dir", str(tmp_path)])
    assert raised.value.code == 2
    # A refused start writes nothing, so the corrected rerun is not refused
    # for "other model flags".
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--epochs", "0"], "--epochs"),
        (["--model", "bert"], "--model"),
        (["--model", "gmlp_base", "--num-layers", "2"], "--num-layers"),
        (["--intermediate-dim", "7"], "--intermediate-dim"),
        (["--data-dir", "/tmp"], "--dataset"),
    ],
)
def test_flag_errors_exit_2_before_work(tmp_path, flags, message):
    result = run_command("pretrain_mlm.py", *flags, "--output-dir", tmp_path / "out")
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert not (tmp_path / "out").exists()


def test_unwritable_output_dir_exits_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run_command("pretrain_mlm.py", "--output-dir", blocker / "out")
    assert result.returncode == 2
    assert "--output-dir" in result.stderr


def test_help_shows_defaults():
    result = run_command("pretrain_mlm.py", "--help")
    assert result.returncode == 0
    assert "(default: gmlp)" in result.stdout
    assert "gmlp_base" in result.stdout


def test_frequency_bins_merge_small_bins_and_leave_none_empty():
    import numpy as np
    from _masked_lm import reporting

    # 3 tokens seen once, 100 seen 50 times, 4 seen 900 times.
    frequency = np.array([1] * 3 + [50] * 100 + [900] * 4)
    edges, bins = reporting.frequency_bins(frequency, num_bins=5, min_tokens=20)
    sizes = np.bincount(bins, minlength=len(edges) - 1)
    assert sizes.tolist() == [107]  # both small groups merged into the large one
    frequency = np.array([1] * 40 + [50] * 100 + [900] * 30)
    edges, bins = reporting.frequency_bins(frequency, num_bins=5, min_tokens=20)
    # Quantile edges 1, 50, 900: the last bin is closed, so 900 joins 50.
    assert edges.tolist() == [1, 50, 900]
    assert np.bincount(bins).tolist() == [40, 130]


def test_split_documents_gives_three_disjoint_sets():
    from _text_input.sources import split_documents

    documents = {f"doc{i:02d}": f"text {i}" for i in range(40)}
    parts = split_documents(documents, 0.1)
    names = [set(parts[p]) for p in ("train", "validation", "test")]
    assert [len(n) for n in names] == [32, 4, 4]
    assert set.union(*names) == set(documents)
    assert not (names[0] & names[1] or names[0] & names[2] or names[1] & names[2])
