"""tokenize_corpus.py resumed through the program: an interrupted
tokenization goes on only with what made its shards. A changed corpus flag
is refused before Keras is imported (the program run as a subprocess, as a
user runs it); a --vocabulary file whose word pieces changed since is
refused before any document is tokenized; the same flags finish the shard
set with every document's ids, as tokenized by hand.

Cost: one in-process tokenization of 40 short documents, cut and resumed,
and one subprocess that stops at its flags. The same on every backend.
"""

import json
import pathlib

import numpy as np
import pytest
from _token_shards import shard_set
from _token_shards import writer

from tests.applications.programs._text_program_helpers import load_program
from tests.applications.programs._text_program_helpers import run_command

pytestmark = pytest.mark.backend_independent

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def corpus_and_vocabulary(folder):
    """A file of 40 documents (one word = one word piece) and its
    vocabulary file."""
    rng = np.random.default_rng(4)
    documents = [
        " ".join(rng.choice(WORDS, size=rng.integers(2, 10))) for _ in range(40)
    ]
    corpus, vocabulary = folder / "corpus.txt", folder / "vocab.txt"
    corpus.write_text("\n\n".join(documents) + "\n")
    vocabulary.write_text("\n".join(SPECIAL + WORDS) + "\n")
    return corpus, vocabulary, documents


def flags(corpus, vocabulary, output_dir, **changed):
    given = {
        "--train-files": corpus,
        "--vocabulary": vocabulary,
        "--shard-tokens": 16,
        "--output-dir": output_dir,
        **changed,
    }
    return [str(part) for pair in given.items() for part in pair]


def files_of(folder):
    return {
        p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def ids_by_hand(documents):
    """Each document's word pieces (one a word here), then [SEP]."""
    vocabulary = SPECIAL + WORDS
    ids = []
    for text in documents:
        ids += [vocabulary.index(word) for word in text.split()] + [3]
    return ids


def part_ids(folder, manifest, part):
    shards = manifest["parts"][part]["shards"]
    return np.concatenate([np.load(folder / s["file"]) for s in shards]).tolist()


def test_a_resumed_tokenization_refuses_changed_flags_or_vocabulary(
    tmp_path, monkeypatch, capsys
):
    corpus, vocabulary, documents = corpus_and_vocabulary(tmp_path)
    program = load_program("tokenize_corpus")
    # Interrupted as the validation part's shard is written: the train
    # part finished, the manifest not complete.
    saved = writer.save_shard

    def save_then_stop(folder, name, ids):
        if name.startswith("validation"):
            raise KeyboardInterrupt
        return saved(folder, name, ids)

    monkeypatch.setattr(writer, "save_shard", save_then_stop)
    cut = tmp_path / "cut"
    with pytest.raises(KeyboardInterrupt):
        program.main(flags(corpus, vocabulary, cut))
    monkeypatch.setattr(writer, "save_shard", saved)
    interrupted = files_of(cut)
    manifest = json.loads(interrupted[pathlib.Path(shard_set.MANIFEST)])
    assert not manifest["complete"] and manifest["parts"]["train"]["finished"]

    # A corpus flag changed: refused by the program before Keras.
    result = run_command(
        "tokenize_corpus.py",
        *flags(corpus, vocabulary, cut, **{"--heldout-fraction": "0.2"}),
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert "made with other flags (--heldout-fraction: 0.1 -> 0.2)" in result.stderr
    assert "keras" not in result.stderr.lower()
    assert files_of(cut) == interrupted

    # The --vocabulary file's word pieces changed since: refused.
    vocabulary.write_text("\n".join(SPECIAL + WORDS[::-1]) + "\n")
    with pytest.raises(SystemExit) as refused:
        program.main(flags(corpus, vocabulary, cut))
    assert refused.value.code == 2
    assert f"--vocabulary {vocabulary} changed since" in capsys.readouterr().err
    assert files_of(cut) == interrupted

    # Restored, the run finishes as the uninterrupted one did.
    vocabulary.write_text("\n".join(SPECIAL + WORDS) + "\n")
    resumed = program.main(flags(corpus, vocabulary, cut))
    assert resumed["complete"]
    # --heldout-fraction 0.1 carves, of every 10 documents, the first for
    # test and the second for validation.
    for part, kept in (("train", range(2, 10)), ("validation", [1]), ("test", [0])):
        texts = [text for i, text in enumerate(documents) if i % 10 in kept]
        assert part_ids(cut, resumed, part) == ids_by_hand(texts), part
        assert resumed["parts"][part]["documents"] == len(texts)
