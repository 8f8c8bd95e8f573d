"""gMLPTokenizer.detokenize on code-like text, against the original text:
what train_causal_lm.py prints and saves as its generations. The tokenizer
splits off every punctuation character, so the ids do not say where the
spaces were; its docstring promises the spelling Python code uses where
they do say (an operator, a dunder name, brackets) and, everywhere,
text that tokenizes back to the same ids."""

import re

import numpy as np
import pytest

from keras_gmlp.models import gMLPTokenizer

# Text in, text out: the backend does not matter (CI runs these once).
pytestmark = pytest.mark.backend_independent

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

# Lines written as PEP 8 and the Python reference write them.
CODE = [
    "if a == b:",
    "while a != b:",
    "x **= 2",
    "x //= 3",
    "x <<= 1",
    "y >>= 2",
    "x &= mask",
    "x |= flags",
    "x ^= bits",
    "x -= 1",
    "x += 1",
    "x *= 2",
    "x /= 2",
    "x %= 7",
    "a <= b >= c",
    "print(n := len(a))",
    "def area(width, height) -> float:",
    "def __init__(self):",
    # The docstring's examples.
    "def __init__(self) -> None:",
    "x **= -1",
    'if __name__ == "__main__":',
    "return self.__dict__",
    "size = x.__len__()",
    "the __init__ method",
    "x = -1",
    "if a == -1:",
    "f(*args, **kwargs)",
    "print(a, b)",
    "d = {'a': [1, 2], 'b': (3, 4)}",
    "@property",
    "mask = ~mask",
    "values[0] = table[key](1)",
    '"__enter__()" is called first.',
    "snake_case_name = other_name",
]
# Where the ids cannot tell: "a ** b" and "**kwargs", "x - 1" and
# "passed-in", "x.y" and "end. Next", "a[1:2]" and "note: this". Only
# the ids are promised.
AMBIGUOUS = ["a ** b", "x - 1", "os.path.join(a, b)", "a[1:2]", "a * b"]


def basic_tokens(text):
    """Words and single punctuation characters ("_" included), as BERT's
    basic tokenizer splits text before WordPiece."""
    return re.findall(r"[^\W_]+|[^\w\s]|_", text)


@pytest.fixture(scope="module")
def tokenizer():
    """A vocabulary holding every word of the lines whole."""
    words = {token for text in CODE + AMBIGUOUS for token in basic_tokens(text)}
    return gMLPTokenizer(vocabulary=SPECIAL + sorted(words))


def ids(tokenizer, text):
    return np.asarray(tokenizer(text)).tolist()


def text_of(detokenized):
    return (
        detokenized.numpy().decode() if hasattr(detokenized, "numpy") else detokenized
    )


@pytest.mark.parametrize("line", CODE)
def test_code_comes_back_as_written(tokenizer, line):
    tokens = ids(tokenizer, line)
    assert 1 not in tokens  # no [UNK]: every word is in the vocabulary
    assert text_of(tokenizer.detokenize(tokens)) == line


@pytest.mark.parametrize("line", AMBIGUOUS)
def test_ambiguous_code_tokenizes_back_to_its_ids(tokenizer, line):
    tokens = ids(tokenizer, line)
    assert ids(tokenizer, text_of(tokenizer.detokenize(tokens))) == tokens


def test_a_batch_of_generations_comes_back_line_by_line(tokenizer):
    """As generate() detokenizes: a batch of rows, padded with [PAD]."""
    rows = [ids(tokenizer, line) for line in CODE[:6]]
    width = max(map(len, rows))
    padded = [row + [0] * (width - len(row)) for row in rows]
    texts = tokenizer.detokenize(padded)
    texts = [text_of(text).replace(" [PAD]", "") for text in texts]
    assert texts == CODE[:6]
