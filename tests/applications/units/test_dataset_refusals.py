"""--dataset refused in one line before anything is downloaded or written:
an unknown name with the nearest names tensorflow-datasets knows, and data
that is not prepared where there is no network (simulated: every socket
connection fails), in seconds, with nothing left in the output directory
or in tensorflow-datasets' folder."""

import importlib
import socket

import pytest
from _shared import tfds_names
from _shared.interrupt import run

# tensorflow-datasets reads no backend; nothing here trains.
pytestmark = pytest.mark.backend_independent

pytest.importorskip("tensorflow_datasets")


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("Network is unreachable (simulated)")

    monkeypatch.setattr(socket, "create_connection", refuse)


def test_an_unknown_name_is_refused_with_the_nearest_names():
    with pytest.raises(
        ValueError, match=r"no dataset 'cifar-10'; did you mean cifar10"
    ):
        tfds_names.checked_builder("cifar-10", None, will_download=True)


def test_unprepared_data_without_network_is_refused_and_nothing_written(
    tmp_path, no_network
):
    data_dir = tmp_path / "tensorflow_datasets"
    with pytest.raises(ValueError, match="not prepared under .* no network"):
        tfds_names.checked_builder("mnist", str(data_dir), will_download=True)
    assert not data_dir.exists() or not any(data_dir.rglob("*"))


def test_prepared_data_is_not_probed_for(tmp_path, no_network, monkeypatch):
    """The text programs read prepared data only: no probe, no refusal."""
    builder = tfds_names.checked_builder("mnist", str(tmp_path), will_download=False)
    assert builder.name == "mnist"


@pytest.mark.parametrize(
    "dataset, message",
    [("cifar-10", "did you mean cifar10"), ("mnist", "no network to download it")],
)
def test_the_image_program_refuses_in_one_line(
    dataset, message, tmp_path, no_network, capsys
):
    program = importlib.import_module("train_image_classifier")
    data_dir = tmp_path / "tensorflow_datasets"
    argv = ["--dataset", dataset, "--data-dir", str(data_dir)]
    argv += ["--output-dir", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as exit:
        run(lambda: program.main(argv))
    assert exit.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert message in error[-1] and "Traceback" not in "\n".join(error)
    assert not (tmp_path / "out").exists()
    assert not data_dir.exists() or not any(data_dir.rglob("*"))
