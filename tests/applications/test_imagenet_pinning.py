"""`weights="imagenet"` downloads from a pinned revision and checks the
file's sha256 (keras.utils.get_file), offline: a fake download serves the
timm fixture checkpoint."""

import hashlib
import os
import re
import shutil

import keras
import numpy as np
import pytest

from keras_gmlp.applications import weights as weights_module
from keras_gmlp.applications.weights import IMAGENET_WEIGHTS

from tests.applications.helpers import build_tiny
from tests.applications.helpers import fixture_path

REVISION = "0123456789abcdef0123456789abcdef01234567"
CACHED_NAME = "gmlp_s16_224.ra3_in1k.safetensors"


def sha256_of(path):
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


@pytest.fixture
def offline_hub(monkeypatch, tmp_path):
    """A Keras cache in tmp_path and a 'download' that copies the fixture
    checkpoint; returns the list of URLs requested."""
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    requested = []

    def fake_urlretrieve(url, target, progress=None):
        requested.append(url)
        shutil.copyfile(fixture_path("gmlp", ".safetensors"), target)

    monkeypatch.setattr("keras.src.utils.file_utils.urlretrieve", fake_urlretrieve)
    return requested


def pin(monkeypatch, sha256, revision=REVISION):
    entry = dict(IMAGENET_WEIGHTS["gmlp_s16"], revision=revision, sha256=sha256)
    monkeypatch.setitem(IMAGENET_WEIGHTS, "gmlp_s16", entry)


def imagenet_tiny():
    return build_tiny(
        "gmlp", weights="imagenet", variant="gmlp_s16", classes=1000,
        include_top=False, pooling="avg",
    )


def test_recorded_pins_are_full_hashes_or_marked_unknown():
    for variant, entry in IMAGENET_WEIGHTS.items():
        assert set(entry) == {"repository", "revision", "sha256"}, variant
        if entry["revision"] is not None:
            assert re.fullmatch("[0-9a-f]{40}", entry["revision"]), variant
        if entry["sha256"] is not None:
            assert re.fullmatch("[0-9a-f]{64}", entry["sha256"]), variant


def test_download_uses_the_pinned_revision_and_a_verified_cache(
    offline_hub, monkeypatch, tmp_path
):
    pin(monkeypatch, sha256_of(fixture_path("gmlp", ".safetensors")))
    golden = np.load(fixture_path("gmlp", ".npz"))
    model = imagenet_tiny()
    assert offline_hub == [
        "https://huggingface.co/timm/gmlp_s16_224.ra3_in1k/resolve/"
        f"{REVISION}/model.safetensors"
    ]
    reference = build_tiny("gmlp", weights=fixture_path("gmlp", ".safetensors"),
                           include_top=False, pooling="avg")
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(model(golden["images"])),
        keras.ops.convert_to_numpy(reference(golden["images"])),
    )
    imagenet_tiny()  # the verified cached file: no second download
    assert len(offline_hub) == 1


def test_a_download_with_another_sha256_is_deleted_and_refused(
    offline_hub, monkeypatch, tmp_path
):
    pin(monkeypatch, "0" * 64)
    with pytest.raises(ValueError, match="do not have the pinned sha256 0000"):
        imagenet_tiny()
    assert len(offline_hub) == 1
    assert not os.path.exists(tmp_path / "models" / CACHED_NAME)


def test_a_cached_file_with_another_sha256_is_not_used(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    os.makedirs(tmp_path / "models")
    shutil.copyfile(fixture_path("gmlp", ".safetensors"),
                    tmp_path / "models" / CACHED_NAME)

    def no_network(*args, **kwargs):
        raise OSError("no network")

    monkeypatch.setattr("keras.src.utils.file_utils.urlretrieve", no_network)
    pin(monkeypatch, "f" * 64)
    with pytest.raises(OSError, match=f"resolve/{REVISION}/model.safetensors"):
        imagenet_tiny()


def test_unpinned_weights_are_not_downloaded(offline_hub, monkeypatch, tmp_path):
    pin(monkeypatch, None, revision=None)
    target = os.path.join(str(tmp_path), "models", CACHED_NAME)
    with pytest.raises(OSError, match="no pinned revision and sha256") as error:
        imagenet_tiny()
    assert target in str(error.value)
    assert offline_hub == []
    assert weights_module.imagenet_weights_origin("gmlp_s16") is None
