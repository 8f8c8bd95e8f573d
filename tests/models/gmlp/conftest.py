"""Shared data for the text-model tests: the Python Language Reference text
that ships with CPython, and a small WordPiece vocabulary trained on it."""

from pydoc_data import topics

import numpy as np
import pytest

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@pytest.fixture(scope="session")
def corpus():
    """Paragraphs of the Python Language Reference, in a fixed order."""
    paragraphs = []
    for name in sorted(topics.topics):
        for paragraph in topics.topics[name].split("\n\n"):
            paragraph = " ".join(paragraph.split())
            if len(paragraph) > 40:
                paragraphs.append(paragraph)
    return paragraphs


@pytest.fixture(scope="session")
def vocabulary(corpus):
    import tensorflow as tf
    from keras_hub.tokenizers import compute_word_piece_vocabulary

    return compute_word_piece_vocabulary(
        tf.data.Dataset.from_tensor_slices(corpus[:600]).batch(200),
        vocabulary_size=300,
        lowercase=True,
        reserved_tokens=SPECIAL_TOKENS,
    )


@pytest.fixture
def tokenizer(vocabulary):
    from keras_gmlp.models import gMLPTokenizer

    return gMLPTokenizer(vocabulary=vocabulary, lowercase=True)


@pytest.fixture
def tiny_encoder():
    """A small aMLP encoder config: fast on CPU, with every part of a real one."""
    return {
        "num_layers": 2,
        "hidden_dim": 32,
        "intermediate_dim": 64,
        "attention_dim": 16,
        "dropout": 0.0,
    }


@pytest.fixture
def make_batch(rng):
    """Backbone inputs with random ids, two segments and trailing padding."""

    def make(vocabulary_size, batch=2, length=12, real_lengths=None):
        return _random_batch(rng, vocabulary_size, batch, length, real_lengths)

    return make


def _random_batch(rng, vocabulary_size, batch, length, real_lengths):
    real_lengths = real_lengths or [length] * batch
    token_ids = rng.integers(5, vocabulary_size, size=(batch, length))
    positions = np.arange(length)[None, :]
    padding_mask = positions < np.array(real_lengths)[:, None]
    segment_ids = (positions >= length // 2) & padding_mask
    return {
        "token_ids": np.where(padding_mask, token_ids, 0).astype("int32"),
        "segment_ids": segment_ids.astype("int32"),
        "padding_mask": padding_mask.astype("int32"),
    }
