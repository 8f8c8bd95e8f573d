"""from_preset without network: one request to the hub, a cached copy used
offline, HF_HUB_OFFLINE honoured, and one-line errors that say what the hub
reported; malformed preset files named with their problem. The hub is
faked with huggingface_hub's own exceptions."""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from keras_gmlp.utils import preset_files
from tests.models.image.conftest import family_classes
from tests.models.image.conftest import write_timm_directory

HANDLES = {
    "gmlp": "hf://timm/gmlp_s16_224.ra3_in1k",
    "mixer": "hf://timm/mixer_b16_224.goog_in21k_ft_in1k",
}
NAMES = {"gmlp": "gmlp_s16_224", "mixer": "mixer_b16_224"}


def hub_error(name, message="hub says no"):
    """One of huggingface_hub's HTTP errors, as its client raises them."""
    from huggingface_hub import errors

    # The HTTP client huggingface_hub's errors derive from (httpx or httpx2).
    httpx = __import__(errors.HfHubHTTPError.__mro__[1].__module__.split(".")[0])
    request = httpx.Request("HEAD", "https://huggingface.co/x")
    response = httpx.Response(404, request=request)
    return getattr(errors, name)(message, response=response)


class FakeHub:
    """Stands in for huggingface_hub's metadata request and download."""

    def __init__(self, monkeypatch, probe_error=None, cache_dir=None):
        import huggingface_hub

        self.probes, self.downloads = [], []
        self.probe_error, self.cache_dir = probe_error, cache_dir
        monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata", self.probe)
        monkeypatch.setattr(huggingface_hub, "hf_hub_download", self.download)

    def probe(self, url, **kwargs):
        self.probes.append(url)
        if self.probe_error is not None:
            raise self.probe_error

    def download(self, repo_id, filename, local_files_only=False, **kwargs):
        from huggingface_hub.errors import LocalEntryNotFoundError

        self.downloads.append((repo_id, filename, local_files_only))
        path = os.path.join(self.cache_dir or "/nonexistent", filename)
        if not os.path.isfile(path):
            raise LocalEntryNotFoundError("not in the cache")
        return path


def assert_one_line(error, *parts):
    message = str(error.value)
    assert "\n" not in message, message
    for part in parts:
        assert part in message, message


def test_no_network_and_no_cache_fails_at_once_in_one_line(family, monkeypatch):
    hub = FakeHub(monkeypatch, probe_error=ConnectionError("Name or service not known"))
    with pytest.raises(preset_files.HubUnavailableError) as error:
        family_classes(family)["classifier"].from_preset(HANDLES[family])
    handle = HANDLES[family]
    assert_one_line(
        error,
        handle,
        "no network",
        "Name or service not known",
        f"hf download {handle[5:]} --local-dir",
        "from_preset",
    )
    assert len(hub.probes) == 1  # one attempt, no retries
    assert hub.downloads == [(handle[5:], "config.json", True)]
    assert isinstance(error.value, OSError)


def test_a_known_preset_name_is_never_called_unknown(family, monkeypatch):
    FakeHub(monkeypatch, probe_error=ConnectionError("no route"))
    with pytest.raises(preset_files.HubUnavailableError) as error:
        family_classes(family)["backbone"].from_preset(NAMES[family])
    assert_one_line(error, repr(NAMES[family]), HANDLES[family], "hf download")
    assert "nknown" not in str(error.value)


def test_a_cached_copy_is_used_offline(family, timm_dir, golden, monkeypatch):
    hub = FakeHub(
        monkeypatch, probe_error=ConnectionError("offline"), cache_dir=timm_dir
    )
    classifier = family_classes(family)["classifier"].from_preset(HANDLES[family])
    assert {offline for _, _, offline in hub.downloads} == {True}
    logits = classifier.predict(golden["images"], verbose=0)
    assert np.max(np.abs(logits - golden["logits"])) <= 1e-4


def test_hf_hub_offline_is_honoured(family, timm_dir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub = FakeHub(monkeypatch, cache_dir=timm_dir)
    family_classes(family)["backbone"].from_preset(HANDLES[family])
    assert hub.probes == []
    assert {offline for _, _, offline in hub.downloads} == {True}
    hub.cache_dir = None
    with pytest.raises(preset_files.HubUnavailableError) as error:
        family_classes(family)["backbone"].from_preset(HANDLES[family])
    assert_one_line(error, "HF_HUB_OFFLINE", HANDLES[family])


@pytest.mark.parametrize(
    "name, raised, parts",
    [
        ("RepositoryNotFoundError", FileNotFoundError, ["no repository", "timm/"]),
        ("GatedRepoError", PermissionError, ["gated", "hf auth login"]),
        ("RevisionNotFoundError", FileNotFoundError, ["no revision"]),
        (
            "RemoteEntryNotFoundError",
            FileNotFoundError,
            ["config.json", "doesn't exist"],
        ),
    ],
)
def test_what_the_hub_reported_is_said_in_one_line(
    family, monkeypatch, name, raised, parts
):
    from huggingface_hub import errors

    if not hasattr(errors, name):
        pytest.skip(f"this huggingface_hub has no {name}")
    hub = FakeHub(monkeypatch, probe_error=hub_error(name))
    with pytest.raises(raised) as error:
        family_classes(family)["classifier"].from_preset(HANDLES[family])
    assert_one_line(error, HANDLES[family][5:], *parts)
    assert len(hub.probes) == 1 and hub.downloads == []


def test_malformed_config_json_is_named_with_line_and_column(family, tmp_path):
    path = write_timm_directory(family, tmp_path / "bad")
    config_path = os.path.join(path, "config.json")
    with open(config_path, "w") as file:
        file.write('{\n  "architecture": "gmlp_s16_224",\n  oops\n}')
    with pytest.raises(ValueError) as error:
        family_classes(family)["classifier"].from_preset(path)
    assert_one_line(error, config_path, "line 3, column 3")


@pytest.mark.parametrize(
    "contents, parts",
    [
        ([1, 2], ["JSON object", "list"]),
        ({"architecture": 5}, ["`architecture` must be a string", "architecture=5"]),
        (
            {"architecture": "gmlp_s16_224", "model_args": [1]},
            ["`model_args` must be an object"],
        ),
    ],
)
def test_config_json_of_the_wrong_shape_is_named(family, tmp_path, contents, parts):
    path = write_timm_directory(family, tmp_path / "bad")
    config_path = os.path.join(path, "config.json")
    with open(config_path, "w") as file:
        json.dump(contents, file)
    with pytest.raises(ValueError) as error:
        family_classes(family)["classifier"].from_preset(path)
    assert_one_line(error, config_path, *parts)


def test_a_missing_or_misshapen_tensor_names_the_weights_file(family, tmp_path):
    from safetensors.numpy import load_file
    from safetensors.numpy import save_file

    path = write_timm_directory(family, tmp_path / "bad")
    weights_path = os.path.join(path, "model.safetensors")
    state = load_file(weights_path)
    name = sorted(key for key in state if key.startswith("blocks.0."))[0]
    del state[name]
    save_file(state, weights_path)
    with pytest.raises(ValueError, match="blocks.0") as error:
        family_classes(family)["backbone"].from_preset(path)
    assert str(error.value).startswith(weights_path)


def _hub_reachable():
    try:
        socket.create_connection(("huggingface.co", 443), timeout=2).close()
    except OSError:
        return False
    return True


# huggingface_hub's retries wait with time.sleep between attempts (1, 2, 4,
# 8 and 8 s on an unreachable hub, in huggingface_hub 2.x). The subprocess
# counts those waits instead of timing itself: under CI's load the import
# alone can take 20 s.
_COUNT_WAITS = "import time\nwaits = []\ntime.sleep = waits.append\n"


def _run_with_the_real_hub(code, hf_home):
    """Runs `code` in a fresh interpreter with the real huggingface_hub and
    HF_HOME at `hf_home`; returns its output lines and the waits it made."""
    env = dict(os.environ, HF_HOME=str(hf_home), PYTHONPATH=os.getcwd())
    env.pop("HF_HUB_CACHE", None)
    env.pop("HF_HUB_OFFLINE", None)
    result = subprocess.run(
        [sys.executable, "-c", _COUNT_WAITS + code + "print('waits', waits)\n"],
        env=env,
        timeout=600,  # a guard against a hang, not a measurement
        capture_output=True,
        text=True,
        check=True,
    )
    *lines, waits = result.stdout.strip().splitlines()
    return lines, waits


def test_the_real_hub_offline_fails_in_one_line(tmp_path):
    if _hub_reachable():
        pytest.skip("this machine has network; the offline path is faked above")
    code = (
        "from keras_gmlp.utils.preset_files import preset_file\n"
        "try:\n"
        "    preset_file('hf://timm/gmlp_s16_224.ra3_in1k', 'config.json')\n"
        "except Exception as error:\n"
        "    print(type(error).__name__, error)\n"
    )
    lines, waits = _run_with_the_real_hub(code, tmp_path)
    assert len(lines) == 1 and lines[0].startswith("HubUnavailableError"), lines
    assert "no network" in lines[0], lines
    assert waits == "waits []", f"huggingface_hub retried: {waits}"


def test_the_real_hub_client_uses_its_cache_offline(tmp_path):
    if _hub_reachable():
        pytest.skip("this machine has network; the offline path is faked above")
    # huggingface_hub's cache layout: refs/main names the snapshot.
    repository = tmp_path / "hub" / "models--timm--gmlp_s16_224.ra3_in1k"
    commit = "0" * 40
    os.makedirs(repository / "refs")
    os.makedirs(repository / "snapshots" / commit)
    (repository / "refs" / "main").write_text(commit)
    (repository / "snapshots" / commit / "config.json").write_text("{}")
    code = (
        "from keras_gmlp.utils.preset_files import preset_file\n"
        "print(preset_file('hf://timm/gmlp_s16_224.ra3_in1k', 'config.json'))\n"
    )
    lines, waits = _run_with_the_real_hub(code, tmp_path)
    assert len(lines) == 1 and lines[0].endswith(f"{commit}/config.json"), lines
    assert waits == "waits []", f"huggingface_hub retried: {waits}"
