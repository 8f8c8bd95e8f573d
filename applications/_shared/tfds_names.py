"""--dataset checked before anything is downloaded or written: a name
tensorflow-datasets does not know is refused with the nearest names it
does, and data that is not prepared is refused at once where there is no
network to download it (tensorflow-datasets would retry for minutes and
leave temporary files in its folder). tensorflow-datasets is imported when
a function is called, after the flags have been parsed."""

import difflib
import socket

# tensorflow-datasets' own mirror (Google Cloud Storage), asked once.
MIRROR = ("storage.googleapis.com", 443)
PROBE_SECONDS = 3


def network_reachable():
    """Whether one TCP connection to the mirror opens within seconds."""
    try:
        with socket.create_connection(MIRROR, timeout=PROBE_SECONDS):
            return True
    except OSError:
        return False


def checked_builder(name, data_dir, will_download):
    """The builder of `name` (`mnist`, `glue/mnli`, `cifar10:3.0.2`), or a
    one-line ValueError: an unknown name (with the nearest known ones), or,
    when `will_download`, data not prepared under `data_dir` and no network."""
    import tensorflow_datasets as tfds

    base = name.split("/")[0].split(":")[0]
    known = tfds.list_builders(with_community_datasets=False)
    if base not in known:
        near = difflib.get_close_matches(base, known, n=3, cutoff=0.6)
        hint = (
            f"; did you mean {', '.join(near)}?"
            if near
            else " (its names: tfds.list_builders())"
        )
        raise ValueError(f"tensorflow-datasets has no dataset {name!r}{hint}")
    try:
        builder = tfds.builder(name, data_dir=data_dir)
    except Exception as error:  # tfds raises several kinds for bad configs
        reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise ValueError(f"{name!r}: {reason or type(error).__name__}") from None
    if will_download and not builder.is_prepared() and not network_reachable():
        raise ValueError(
            f"{name!r} is not prepared under {data_dir or '~/tensorflow_datasets'} "
            f"and there is no network to download it ({MIRROR[0]} did not "
            f"answer in {PROBE_SECONDS} s); prepare it where there is one and "
            "pass --data-dir"
        )
    return builder
