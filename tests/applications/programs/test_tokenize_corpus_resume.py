"""tokenize_corpus.py resumed through the program: an interrupted
tokenization goes on only with what made its shards. A changed corpus flag
is refused before Keras is imported (the program run as a subprocess, as a
user runs it); a --vocabulary file whose word pieces changed since is
refused before any document is tokenized, and so is a shard set whose own
vocabulary.txt changed or went; the same flags finish the shard set with
every document's ids, as tokenized by hand. A fresh run without
--vocabulary trains its own, whatever vocabulary.txt a stopped start left.

Cost: two in-process tokenizations of 40 short documents (one cut and
resumed, one training its vocabulary), and one subprocess that stops at its
flags. The same on every backend.
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


def ids_by_hand(documents, vocabulary=SPECIAL + WORDS):
    """Each document's word pieces (one a word here), then [SEP]."""
    ids = []
    for text in documents:
        ids += [vocabulary.index(word) for word in text.split()]
        ids.append(vocabulary.index("[SEP]"))
    return ids


def refusal(program, argv, capsys):
    """The one line a refused start prints (exit status 2), less its
    "error:" prefix."""
    with pytest.raises(SystemExit) as refused:
        program.main(argv)
    assert refused.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1].removeprefix("error: ")


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
    assert refusal(program, flags(corpus, vocabulary, cut), capsys) == (
        f"--vocabulary {vocabulary} changed since the interrupted tokenization in "
        f"{cut} began: restore it, or use another --output-dir"
    )
    assert files_of(cut) == interrupted

    # The --vocabulary file no longer a vocabulary: refused, naming the flag.
    vocabulary.write_text("\n".join(WORDS) + "\n")
    assert refusal(program, flags(corpus, vocabulary, cut), capsys) == (
        f"--vocabulary: {vocabulary} lacks the special tokens {SPECIAL} (a BERT "
        f"vocab.txt has {SPECIAL})"
    )
    assert files_of(cut) == interrupted

    # The shard set's own vocabulary.txt changed (the same word pieces,
    # other bytes) or removed: refused, as its digest is the manifest's.
    vocabulary.write_text("\n".join(SPECIAL + WORDS) + "\n")
    kept = cut / shard_set.VOCABULARY
    for damage in (lambda: kept.write_bytes(kept.read_bytes() + b"\n"), kept.unlink):
        damage()
        assert refusal(program, flags(corpus, vocabulary, cut), capsys) == (
            f"{kept} is not the vocabulary of the interrupted tokenization"
        )
        kept.write_bytes(interrupted[pathlib.Path(shard_set.VOCABULARY)])
    assert files_of(cut) == interrupted

    # Restored, the run finishes as the uninterrupted one did.
    resumed = program.main(flags(corpus, vocabulary, cut))
    assert resumed["complete"]
    # --heldout-fraction 0.1 carves, of every 10 documents, the first for
    # test and the second for validation.
    for part, kept in (("train", range(2, 10)), ("validation", [1]), ("test", [0])):
        texts = [text for i, text in enumerate(documents) if i % 10 in kept]
        assert part_ids(cut, resumed, part) == ids_by_hand(texts), part
        assert resumed["parts"][part]["documents"] == len(texts)


def test_a_fresh_tokenization_trains_its_vocabulary_in_the_default_output_dir(
    tmp_path, monkeypatch
):
    """Without --vocabulary, --output-dir or --shard-tokens: --fast trains
    at most 300 word pieces on the train documents (each word here becomes
    one), into outputs/tokenize_corpus, in shards of 2**24 ids (one a part
    here). A vocabulary.txt there without a manifest (a start stopped
    before writing one) is not read: the run trains its own."""
    corpus, _, documents = corpus_and_vocabulary(tmp_path)
    monkeypatch.chdir(tmp_path)
    output_dir = tmp_path / "outputs" / "tokenize_corpus"
    output_dir.mkdir(parents=True)
    stale = "\n".join(SPECIAL + ["stale"]) + "\n"
    (output_dir / shard_set.VOCABULARY).write_text(stale)
    program = load_program("tokenize_corpus")
    manifest = program.main(["--train-files", str(corpus), "--fast"])
    assert manifest["complete"]
    assert manifest["made_with"]["vocabulary_size"] == 300
    assert manifest["made_with"]["shard_tokens"] == 2**24
    trained = (output_dir / shard_set.VOCABULARY).read_text().splitlines()
    assert len(trained) <= 300 and set(SPECIAL + WORDS) <= set(trained)
    for part, kept in (("train", range(2, 10)), ("validation", [1]), ("test", [0])):
        texts = [text for i, text in enumerate(documents) if i % 10 in kept]
        assert part_ids(output_dir, manifest, part) == ids_by_hand(texts, trained)
        assert len(manifest["parts"][part]["shards"]) == 1
