"""Runs every ```python example in README.md as written, on the current
backend.

The image example reads timm's `model.safetensors` for gMLP-S and a
`cat.jpg`, which a reader downloads and CI cannot: the test writes both into
the example's working directory first, the checkpoint in timm's own layout
(converted from a randomly initialised gMLP-S by `timm_state_dict`, so the
example's timm loading path runs for real).
"""

import pathlib
import re

import numpy as np
import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def python_examples():
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_has_examples():
    assert len(python_examples()) >= 3


def write_timm_checkpoint(path):
    import keras
    from safetensors.numpy import save_file

    import keras_gmlp

    model = keras_gmlp.applications.gMLPS(weights=None)
    save_file(keras_gmlp.applications.timm_state_dict(model), str(path))
    del model
    keras.backend.clear_session()


def write_image(path):
    from PIL import Image

    pixels = np.random.default_rng(0).integers(0, 256, (240, 320, 3), np.uint8)
    Image.fromarray(pixels).save(path)


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(python_examples())))
def test_readme_example_runs(index, tmp_path, monkeypatch):
    code = python_examples()[index]
    monkeypatch.chdir(tmp_path)
    if "gmlp_s16_224.safetensors" in code:
        write_timm_checkpoint(tmp_path / "gmlp_s16_224.safetensors")
    if "cat.jpg" in code:
        write_image(tmp_path / "cat.jpg")
    exec(compile(code, f"README.md example {index}", "exec"), {"__name__": "readme"})
    for name in re.findall(r"savefig\(\"([^\"]+)\"\)", code):
        assert (tmp_path / name).stat().st_size > 0
