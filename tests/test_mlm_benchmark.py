"""The MLM comparison benchmark's --quick run on the current backend, so the
harness cannot rot: it writes its JSON, CSV, table and PNG, and its models'
non-embedding parameters are matched."""

import importlib.util
import json
import os
import pathlib

import keras
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _benchmark():
    spec = importlib.util.spec_from_file_location(
        "mlm_vs_transformer", ROOT / "benchmarks" / "mlm_vs_transformer.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The harness, not the backend, is what this checks: CI runs it in one lane.
@pytest.mark.slow
@pytest.mark.backend_independent
def test_quick_run_writes_matched_results(tmp_path, capsys):
    # In-process: keras and keras-hub are already imported by the suite.
    _benchmark().main(["--quick", "--output-dir", str(tmp_path)])
    results = json.loads((tmp_path / "mlm_vs_transformer.json").read_text())
    assert results["backend"] == keras.backend.backend()
    counts = {
        name: model["non_embedding_params"] for name, model in results["models"].items()
    }
    module = _benchmark()
    assert set(counts) == set(module.MODELS)
    assert all(abs(c / counts["bert"] - 1) < 0.03 for c in counts.values())
    for name, summary in results["summary"].items():
        # A finite perplexity between 1 and far above the vocabulary size.
        assert (
            1.0
            < summary["median_perplexity"]
            < 10 * results["corpus"]["vocabulary_size"]
        ), name
        # The levelling-off criterion is reported per model and seed.
        assert len(summary["last_fifth_gains"]) == len(results["runs"][name]), name
        assert summary["levelled_off"] == all(
            g < 0.02 for g in summary["last_fifth_gains"]
        )
    # Each gMLP (every gating) and aMLP run records its layers' Toeplitz
    # scores before and after training, and the summary takes their
    # per-layer median; BERT and the Mixer have no spatial weights.
    num_layers = results["config"]["gmlp_layers"]
    for name in ("bert", "mixer"):
        assert results["runs"][name][0]["toeplitz_scores"] is None
        assert results["summary"][name]["toeplitz_scores"] is None
    for name in module.GATINGS:
        scores = results["runs"][name][0]["toeplitz_scores"]
        for stage in ("initial", "trained"):
            assert len(scores[stage]) == num_layers
            assert all(0.0 <= score <= 1.0 for score in scores[stage])
            assert results["summary"][name]["toeplitz_scores"][stage] == scores[stage]
        # The linear form's W starts as the identity, exactly Toeplitz (1.0),
        # and two steps do not move its rounded score.
        if name != "gmlp_linear":
            assert scores["initial"] != scores["trained"], name
    assert (tmp_path / "mlm_vs_transformer.png").read_bytes()[:4] == b"\x89PNG"
    csv = (tmp_path / "mlm_vs_transformer.csv").read_text().splitlines()
    assert len(csv) == 1 + len(module.MODELS) * len(results["runs"]["bert"][0]["curve"])
    printed = capsys.readouterr().out
    assert "| aMLP |" in printed and "| MLP-Mixer |" in printed
    # Nothing half-written is left behind, and the outputs have the modes
    # the umask gives, not tempfile's owner-only 0600.
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    umask = os.umask(0)
    os.umask(umask)
    for suffix in ("json", "csv", "md", "png"):
        mode = (tmp_path / f"mlm_vs_transformer.{suffix}").stat().st_mode & 0o777
        assert mode == 0o666 & ~umask, (suffix, oct(mode))
    _check_merge(tmp_path, results)


def _check_merge(tmp_path, results):
    """--merge joins the seeds of processes run side by side, and refuses
    files of another configuration or with the same seeds."""
    other = json.loads(json.dumps(results))
    other["seeds"] = [7]
    for runs in other["runs"].values():
        for run in runs:
            run["seed"] = 7
            for point in run["curve"]:
                point["heldout_perplexity"] *= 2.0
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps(results))
    second.write_text(json.dumps(other))
    merged_dir = tmp_path / "merged"
    module = _benchmark()
    module.main(["--output-dir", str(merged_dir), "--merge", str(first), str(second)])
    merged = json.loads((merged_dir / "mlm_vs_transformer.json").read_text())
    assert merged["seeds"] == [0, 7]
    assert merged["process_seconds"] == [results["seconds"], other["seconds"]]
    assert merged["seconds"] == sum(merged["process_seconds"])
    for name, summary in merged["summary"].items():
        finals = [
            run["curve"][-1]["heldout_perplexity"] for run in merged["runs"][name]
        ]
        assert summary["min_perplexity"] == min(finals)
        assert summary["max_perplexity"] == max(finals)
        assert summary["max_perplexity"] == 2.0 * summary["min_perplexity"]
    with pytest.raises(SystemExit, match="share seeds"):
        module.main(
            ["--output-dir", str(merged_dir), "--merge", str(first), str(first)]
        )
    _check_merge_of_models(tmp_path, results, module)
    other["config"]["steps"] += 1
    second.write_text(json.dumps(other))
    with pytest.raises(SystemExit, match="another configuration"):
        module.main(
            ["--output-dir", str(merged_dir), "--merge", str(first), str(second)]
        )


def _check_merge_of_models(tmp_path, results, module):
    """Processes that each ran other models (one model and seed per process)
    merge into one comparison in the benchmark's model order."""
    names = list(results["runs"])
    paths = []
    for index, name in enumerate(reversed(names)):
        part = json.loads(json.dumps(results))
        part["config"]["models"] = [name]
        part["models"] = {name: results["models"][name]}
        part["runs"] = {name: results["runs"][name]}
        paths.append(tmp_path / f"model{index}.json")
        paths[-1].write_text(json.dumps(part))
    merged_dir = tmp_path / "merged_models"
    module.main(["--output-dir", str(merged_dir), "--merge", *map(str, paths)])
    merged = json.loads((merged_dir / "mlm_vs_transformer.json").read_text())
    assert list(merged["runs"]) == names == merged["config"]["models"]
    assert merged["runs"] == results["runs"]
    assert merged["summary"] == json.loads(json.dumps(results["summary"]))
    # Another seed of a model, built another way, is not the same comparison.
    clash = json.loads(paths[0].read_text())
    clash["models"][names[-1]]["intermediate_dim"] += 1
    for run in clash["runs"][names[-1]]:
        run["seed"] = 7
    paths.append(tmp_path / "clash.json")
    paths[-1].write_text(json.dumps(clash))
    with pytest.raises(SystemExit, match="builds .* differently"):
        module.main(["--output-dir", str(merged_dir), "--merge", *map(str, paths)])


def test_flags_are_checked_before_keras_is_imported(tmp_path):
    module = _benchmark()
    with pytest.raises(SystemExit):
        module.parse_args(["--output-dir", str(tmp_path), "--models", "bert,lstm"])
    with pytest.raises(SystemExit):
        module.parse_args(["--output-dir", str(tmp_path), "--dropout", "1.5"])
