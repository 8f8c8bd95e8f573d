"""The fine-tuning benchmark's --quick run (BERT, gMLP and aMLP pretrained
at equal size, fine-tuned on the offline single-paragraph and pair tasks),
so the harness cannot rot."""

import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _benchmark():
    path = ROOT / "benchmarks" / "tiny_attention_finetuning.py"
    spec = importlib.util.spec_from_file_location("tiny_attention_finetuning", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The harness, not the backend, is what this checks: CI runs it in one lane.
@pytest.mark.slow
@pytest.mark.backend_independent
def test_quick_run_fine_tunes_each_model_on_each_task(tmp_path, capsys):
    module = _benchmark()
    module.main(["--quick", "--output-dir", str(tmp_path)])
    results = json.loads((tmp_path / "tiny_attention_finetuning.json").read_text())
    assert set(results["pretraining_perplexity"]) == set(module.MODELS)
    assert set(results["tasks"]) == {"package", "same-package", "same-module"}
    # Four balanced packages, and pairs half from one package or module file.
    assert results["tasks"]["package"]["majority"] == 0.25
    assert results["tasks"]["same-package"]["majority"] == 0.5
    assert results["tasks"]["same-module"]["majority"] == 0.5
    for task, outcome in results["tasks"].items():
        for name in module.MODELS:
            (run,) = outcome["runs"][name]
            assert 0.0 <= run["test_accuracy"] <= 1.0 and run["best_epoch"] == 1
        row = results["summary"][task]
        expected = row["median"]["amlp"] - row["median"]["gmlp"]
        assert row["amlp_minus_gmlp"] == [pytest.approx(expected)]
    table = (tmp_path / "tiny_attention_finetuning.md").read_text()
    assert "| same-module | 0.500 | 0." in table
    assert "| package | 0.250 | - |" in table
    assert table.strip() in capsys.readouterr().out
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    # A rerun with the same pretraining settings reads the kept models.
    module.main(["--quick", "--output-dir", str(tmp_path), "--tasks", "package"])
    output = capsys.readouterr().out
    for name in module.MODELS:
        assert f"{name}: pretrained model read from" in output
    rerun = json.loads((tmp_path / "tiny_attention_finetuning.json").read_text())
    assert rerun["pretraining_perplexity"] == results["pretraining_perplexity"]
    assert set(rerun["tasks"]) == {"package"}
