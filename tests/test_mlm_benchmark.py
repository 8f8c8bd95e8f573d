"""The MLM comparison benchmark's --quick run on the current backend, so the
harness cannot rot: it writes its JSON, CSV, table and PNG, and its models'
non-embedding parameters are matched."""

import importlib.util
import json
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


@pytest.mark.slow
def test_quick_run_writes_matched_results(tmp_path, capsys):
    # In-process: keras and keras-hub are already imported by the suite.
    _benchmark().main(["--quick", "--output-dir", str(tmp_path)])
    results = json.loads((tmp_path / "mlm_vs_transformer.json").read_text())
    assert results["backend"] == keras.backend.backend()
    counts = {
        name: model["non_embedding_params"]
        for name, model in results["models"].items()
    }
    assert set(counts) == {"bert", "gmlp", "amlp"}
    assert all(abs(c / counts["bert"] - 1) < 0.03 for c in counts.values())
    for name, summary in results["summary"].items():
        # A finite perplexity between 1 and far above the vocabulary size.
        assert 1.0 < summary["median_perplexity"] < 10 * results["corpus"]["vocabulary_size"], name
    assert (tmp_path / "mlm_vs_transformer.png").read_bytes()[:4] == b"\x89PNG"
    csv = (tmp_path / "mlm_vs_transformer.csv").read_text().splitlines()
    assert len(csv) == 1 + 3 * len(results["runs"]["bert"][0]["curve"])
    assert "| aMLP |" in capsys.readouterr().out
    # Nothing half-written is left behind.
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_flags_are_checked_before_keras_is_imported(tmp_path):
    module = _benchmark()
    with pytest.raises(SystemExit):
        module.parse_args(["--output-dir", str(tmp_path), "--models", "bert,lstm"])
    with pytest.raises(SystemExit):
        module.parse_args(["--output-dir", str(tmp_path), "--dropout", "1.5"])
