"""Documents of local UTF-8 text files (`.txt`, or `.gz` compressed; a blank
line separates documents), read through tf.data as a stream. TensorFlow is
imported when a function is called.
"""

import codecs
import glob
import gzip
import pathlib
import zlib

# The bytes of each file whose UTF-8 is checked before training: a corpus of
# many gigabytes is not read twice. Bytes past it that are not UTF-8 become
# U+FFFD in the stream.
CHECKED_BYTES = 1 << 20


def resolve_files(pattern):
    """The sorted files matching `pattern` (`~` and `**` expanded), or a
    ValueError saying that it matches none."""
    expanded = str(pathlib.Path(pattern).expanduser())
    paths = sorted(
        p for p in glob.glob(expanded, recursive=True) if pathlib.Path(p).is_file()
    )
    if not paths:
        raise ValueError(f"{pattern!r} matches no file")
    return paths


def check_text_file(path, limit=CHECKED_BYTES):
    """Raises a ValueError naming `path` and the byte offset if its first
    `limit` bytes (decompressed, for `.gz`) are not UTF-8 text."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    opener = gzip.open if str(path).endswith(".gz") else open
    offset = 0
    try:
        with opener(path, "rb") as handle:
            while offset < limit:
                chunk = handle.read(min(1 << 16, limit - offset))
                if not chunk:
                    break
                # The error's offsets count from the bytes of a character the
                # last chunk began, which the decoder holds.
                held = len(decoder.getstate()[0])
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError as error:
                    raise ValueError(
                        f"{path} is not UTF-8 text: invalid byte at offset "
                        f"{offset - held + error.start}"
                    ) from None
                if b"\0" in chunk:
                    at = offset + chunk.index(b"\0")
                    raise ValueError(
                        f"{path} is not UTF-8 text: a NUL byte at offset {at}"
                    )
                offset += len(chunk)
    except (OSError, EOFError, zlib.error) as error:
        raise ValueError(f"{path} cannot be read: {error}") from None


def _documents_of_lines(lines):
    """Documents of a dataset of lines: runs of non-blank lines, joined
    with newlines."""
    import tensorflow as tf

    def step(current, line):
        blank = tf.equal(tf.strings.strip(line), "")
        started = tf.strings.length(current) > 0
        finished = tf.where(blank & started, current, "")
        joined = tf.where(started, tf.strings.join([current, line], "\n"), line)
        return tf.where(blank, "", joined), finished

    # A last blank line ends the file's last document.
    lines = lines.concatenate(tf.data.Dataset.from_tensors(tf.constant("")))
    return lines.scan(tf.constant(""), step).filter(
        lambda document: tf.strings.length(document) > 0
    )


def read_documents(path):
    """The documents of one text file (a string tensor; `.gz` is gzip)."""
    import tensorflow as tf

    compression = tf.where(tf.strings.regex_full_match(path, r".*\.gz"), "GZIP", "")
    lines = tf.data.TextLineDataset(path, compression_type=compression)
    return _documents_of_lines(lines)


def file_documents(paths):
    """The documents of `paths`, reading up to 16 files round-robin, in a
    fixed order."""
    import tensorflow as tf

    files = tf.data.Dataset.from_tensor_slices(list(paths))
    # Sequential (no num_parallel_calls), so the order is fixed.
    return files.interleave(read_documents, cycle_length=min(16, len(paths)))


def labelled_file_documents(paths, class_names):
    """(document, label) of `paths`, each labelled by the name of the folder
    its file is in (its index in `class_names`), as Keras'
    `text_dataset_from_directory` labels files; files read as
    `file_documents` reads them."""
    import tensorflow as tf

    labels = [class_names.index(pathlib.Path(p).parent.name) for p in paths]
    files = tf.data.Dataset.from_tensor_slices((list(paths), labels))
    return files.interleave(
        lambda path, label: read_documents(path).map(lambda text: (text, label)),
        cycle_length=min(16, len(paths)),
    )
