"""The text programs' WordPiece vocabulary: trained on a corpus' first
documents or read from a file (BERT's vocab.txt), and kept in --output-dir
as vocabulary.txt, so that a resumed run tokenizes as the interrupted one
did. keras-hub is imported when a function is called, after the flags have
been parsed.
"""

import os
import pathlib
import tempfile

from .errors import refuse

VOCABULARY_FILE = "vocabulary.txt"


def train_tokenizer(texts, vocabulary_size, lowercase=True):
    """A gMLPTokenizer whose WordPiece vocabulary is trained on `texts` (an
    iterable of strings, written to a file as it is read)."""
    import warnings

    from keras_gmlp.models import gMLPTokenizer

    with tempfile.TemporaryDirectory() as folder:
        # keras-hub's trainer streams a file line by line, faster than a
        # dataset of whole documents.
        path = os.path.join(folder, "corpus.txt")
        with open(path, "w", encoding="utf-8") as file:
            for text in texts:
                file.write(text + "\n")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tokenizer = gMLPTokenizer.from_corpus(
                [path], vocabulary_size=vocabulary_size, lowercase=lowercase
            )
    for warning in caught:
        # A small corpus gives fewer word pieces than asked: say it once.
        print(f"Note: {warning.message}")
    return tokenizer


def read_vocabulary(path):
    """The word pieces of a vocabulary file (UTF-8, one a line, BERT's
    vocab.txt), or a ValueError naming the file and what is wrong."""
    from keras_gmlp.models.gmlp.gmlp_tokenizer import SPECIAL_TOKENS

    try:
        with open(path, encoding="utf-8") as file:
            tokens = file.read().splitlines()
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{path} is not UTF-8 text: invalid byte at offset {error.start}"
        ) from None
    except OSError as error:
        raise ValueError(f"{path} cannot be read: {error.strerror}") from None
    if tokens and tokens[-1] == "":
        tokens.pop()
    for line, token in enumerate(tokens, start=1):
        if not token.strip() or token != token.strip() or " " in token:
            raise ValueError(
                f"{path} line {line}: expected one word piece a line, "
                f"received {token!r}"
            )
    seen = set()
    for line, token in enumerate(tokens, start=1):
        if token in seen:
            raise ValueError(f"{path} line {line}: {token!r} comes twice")
        seen.add(token)
    missing = [token for token in SPECIAL_TOKENS if token not in seen]
    if missing:
        raise ValueError(
            f"{path} lacks the special tokens {missing} (a BERT vocab.txt has "
            f"{list(SPECIAL_TOKENS)})"
        )
    return tokens


def vocabulary_sample(source, documents, max_bytes):
    """The texts of the first `documents` documents of `source`, up to the
    one that reaches `max_bytes` of UTF-8 (`windows.sample_documents`)."""
    from .windows import sample_documents

    sample = sample_documents(source.dataset(), documents, max_bytes)
    for value in sample.as_numpy_iterator():
        yield value.decode("utf-8", errors="replace")


def load_tokenizer(args, run, train_source):
    """--vocabulary, the resumed run's vocabulary.txt, or one trained on
    the first --vocabulary-sample train documents, at most
    --vocabulary-sample-bytes of them (then kept)."""
    from keras_gmlp.models import gMLPTokenizer

    kept = pathlib.Path(args.output_dir) / VOCABULARY_FILE
    if args.vocabulary or (run.resuming and kept.exists()):
        path = args.vocabulary or kept
        try:
            tokens = read_vocabulary(path)
        except ValueError as error:
            refuse(f"--vocabulary: {error}" if args.vocabulary else str(error))
    else:
        if not list(train_source.dataset().take(1).as_numpy_iterator()):
            refuse(f"the train corpus ({train_source.description}) has no documents")
        texts = vocabulary_sample(
            train_source, args.vocabulary_sample, args.vocabulary_sample_bytes
        )
        tokens = train_tokenizer(texts, args.vocabulary_size).get_vocabulary()
    return gMLPTokenizer(vocabulary=tokens, lowercase=True)
