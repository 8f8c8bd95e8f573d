"""`weights="imagenet"` downloads from a pinned revision and checks the
file's sha256 (keras.utils.get_file), or, while no revision is recorded,
timm's release checkpoint checked against the sha256 prefix in its name.
Offline: a fake download serves the timm fixture checkpoint."""

import hashlib
import json
import os
import re
import shutil
import sys

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
def release_file(tmp_path):
    """The fixture checkpoint as a torch state dict, as timm's releases are."""
    import torch
    from safetensors.torch import load_file

    path = str(tmp_path / "release.pth")
    torch.save(load_file(fixture_path("gmlp", ".safetensors")), path)
    return path


@pytest.fixture
def offline_hub(monkeypatch, tmp_path, release_file):
    """A Keras cache in tmp_path and a 'download' that copies the fixture
    checkpoint (the release file for a `.pth` URL); returns the list of URLs
    requested."""
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    requested = []

    def fake_urlretrieve(url, target, progress=None):
        requested.append(url)
        if url.endswith(".pth"):
            shutil.copyfile(release_file, target)
        else:
            shutil.copyfile(fixture_path("gmlp", ".safetensors"), target)

    monkeypatch.setattr("keras.src.utils.file_utils.urlretrieve", fake_urlretrieve)
    return requested


def pin(monkeypatch, sha256, revision=REVISION):
    entry = dict(IMAGENET_WEIGHTS["gmlp_s16"], revision=revision, sha256=sha256)
    monkeypatch.setitem(IMAGENET_WEIGHTS, "gmlp_s16", entry)


def imagenet_tiny():
    return build_tiny(
        "gmlp",
        weights="imagenet",
        variant="gmlp_s16",
        classes=1000,
        include_top=False,
        pooling="avg",
    )


def test_recorded_pins_are_full_hashes_or_marked_unknown():
    for variant, entry in IMAGENET_WEIGHTS.items():
        assert set(entry) == {"repository", "revision", "sha256", "release"}, variant
        assert re.search(r"-[0-9a-f]{8}\.pth$", entry["release"]), variant
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
    reference = build_tiny(
        "gmlp",
        weights=fixture_path("gmlp", ".safetensors"),
        include_top=False,
        pooling="avg",
    )
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
    shutil.copyfile(
        fixture_path("gmlp", ".safetensors"), tmp_path / "models" / CACHED_NAME
    )

    def no_network(*args, **kwargs):
        raise OSError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr("keras.src.utils.file_utils.urlretrieve", no_network)
    pin(monkeypatch, "f" * 64)
    with pytest.raises(OSError, match=f"resolve/{REVISION}/model.safetensors") as e:
        imagenet_tiny()
    # The reason, not only "(Exception)": Keras' get_file wraps the error.
    assert "Temporary failure in name resolution" in str(e.value)


def release(monkeypatch, prefix):
    url = f"https://example.invalid/releases/gmlp_tiny-{prefix}.pth"
    entry = dict(IMAGENET_WEIGHTS["gmlp_s16"], revision=None, sha256=None, release=url)
    monkeypatch.setitem(IMAGENET_WEIGHTS, "gmlp_s16", entry)
    return url


def test_unpinned_weights_come_from_the_release_checked_by_its_prefix(
    offline_hub, monkeypatch, release_file
):
    url = release(monkeypatch, sha256_of(release_file)[:8])
    golden = np.load(fixture_path("gmlp", ".npz"))
    model = imagenet_tiny()
    assert offline_hub == [url]
    reference = build_tiny(
        "gmlp",
        weights=fixture_path("gmlp", ".safetensors"),
        include_top=False,
        pooling="avg",
    )
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(model(golden["images"])),
        keras.ops.convert_to_numpy(reference(golden["images"])),
    )
    imagenet_tiny()  # cached and checked again: no second download
    assert offline_hub == [url]


def test_a_release_file_with_another_prefix_is_deleted_and_refused(
    offline_hub, monkeypatch, tmp_path
):
    url = release(monkeypatch, "0123abcd")
    with pytest.raises(ValueError, match="does not start with 0123abcd"):
        imagenet_tiny()
    assert offline_hub == [url]
    assert not os.path.exists(tmp_path / "models" / url.rsplit("/", 1)[-1])


def corrupt(path):
    with open(path, "r+b") as file:
        file.seek(-1, os.SEEK_END)
        last = file.read(1)
        file.seek(-1, os.SEEK_END)
        file.write(bytes([last[0] ^ 1]))


def test_a_release_download_is_stamped_and_a_changed_copy_refused(
    offline_hub, monkeypatch, release_file, tmp_path
):
    url = release(monkeypatch, sha256_of(release_file)[:8])
    imagenet_tiny()
    cached = str(tmp_path / "models" / url.rsplit("/", 1)[-1])
    with open(cached + ".sha256.json") as file:
        stamp = json.load(file)
    assert stamp == {
        "size": os.path.getsize(release_file),
        "sha256": sha256_of(release_file),
    }
    corrupt(cached)
    with pytest.raises(ValueError) as error:
        imagenet_tiny()
    message = str(error.value)
    assert "\n" not in message
    assert cached in message and "Delete the file" in message
    assert offline_hub == [url]  # refused, not downloaded again
    assert os.path.exists(cached)  # the user's to delete


def test_a_user_saved_file_is_stamped_at_first_use_and_verified_without_torch(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    os.makedirs(tmp_path / "models")
    cached = str(tmp_path / "models" / CACHED_NAME)
    shutil.copyfile(fixture_path("gmlp", ".safetensors"), cached)
    monkeypatch.setitem(sys.modules, "torch", None)  # importing torch fails
    first = weights_module.fetch_imagenet_weights("gmlp_s16")
    assert first == cached and os.path.exists(cached + ".sha256.json")
    assert weights_module.fetch_imagenet_weights("gmlp_s16") == cached
    corrupt(cached)
    with pytest.raises(ValueError, match="changed since they were downloaded"):
        weights_module.fetch_imagenet_weights("gmlp_s16")


def test_a_damaged_stamp_is_refused_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    os.makedirs(tmp_path / "models")
    cached = str(tmp_path / "models" / CACHED_NAME)
    shutil.copyfile(fixture_path("gmlp", ".safetensors"), cached)
    with open(cached + ".sha256.json", "w") as file:
        file.write('{"size": ')
    with pytest.raises(ValueError, match="is damaged; delete it") as error:
        weights_module.fetch_imagenet_weights("gmlp_s16")
    assert "\n" not in str(error.value)


def test_the_builders_docstrings_claim_no_more_than_is_checked():
    from keras_gmlp.applications._image_classifier import imagenet_weights_doc
    from keras_gmlp.utils.variants import IMAGE_CLASSIFIER_VARIANTS

    for variant in IMAGE_CLASSIFIER_VARIANTS.values():
        doc = imagenet_weights_doc(variant)
        if not doc:
            continue
        pinned = variant["imagenet"]["sha256"] is not None
        assert ("full sha256 at every use" in doc) == pinned, doc
        assert ("8-digit sha256 prefix" in doc) == (not pinned), doc
