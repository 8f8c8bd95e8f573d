import warnings

import keras
from keras_hub.tokenizers import WordPieceTokenizer
from keras_hub.tokenizers import compute_word_piece_vocabulary

from keras_gmlp._compat import add_special_token
from keras_gmlp.models.gmlp.gmlp_backbone import gMLPBackbone

# BERT's special tokens, "[PAD]" first so that padding is token id 0.
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


@keras.saving.register_keras_serializable(package="keras_gmlp")
class gMLPTokenizer(WordPieceTokenizer):
    """A WordPiece tokenizer with BERT's special tokens, for gMLP and aMLP.

    Splits text into WordPiece sub-words and maps them to integer ids. The
    vocabulary must hold `"[PAD]"`, `"[UNK]"`, `"[CLS]"`, `"[SEP]"` and
    `"[MASK]"`; any BERT WordPiece vocabulary works. To train a vocabulary
    on your own corpus, use `gMLPTokenizer.from_corpus()`, which runs
    keras-hub's `compute_word_piece_vocabulary` (needs `tensorflow-text`).

    Batched inputs give ragged outputs (`tf.RaggedTensor` inside tf.data,
    lists of lists otherwise); a scalar string gives a dense vector.

    `detokenize()` joins the pieces as the text most likely had them:
    WordPiece continuations (`"##"`) without a space, and the punctuation
    that the tokenizer split off against its word, as English prose and
    Python code write it: `__getitem__()`, `it’s`, `"quoted"`, `a == b`,
    `def __init__(self) -> None:`, `x **= -1`, `f(*args, **kwargs)`.
    Where the tokens do not say (`os.path` or `end. next`), the text gets
    the more common spelling. Re-tokenizing the result gives the same
    tokens.

    Args:
        vocabulary: a list of strings, one word piece each, or the path of a
            text file with one word piece per line.
        lowercase: bool, whether to lowercase the text first. Must match
            how the vocabulary was built.
        **kwargs: further `keras_hub.tokenizers.WordPieceTokenizer`
            arguments, e.g. `strip_accents` or `special_tokens_in_strings`.

    Examples:

    ```python
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab += ["the", "quick", "brown", "fox", "."]
    tokenizer = keras_gmlp.models.gMLPTokenizer(vocabulary=vocab)
    tokenizer("the quick brown fox.")  # [5, 6, 7, 8, 9]
    tokenizer.detokenize([5, 6, 7, 8, 9])  # "the quick brown fox."

    # A vocabulary trained on your own text: a tf.data.Dataset of strings
    # or a list of text files.
    texts = tf.data.Dataset.from_tensor_slices(["a first text.", "a second."])
    tokenizer = keras_gmlp.models.gMLPTokenizer.from_corpus(
        texts.batch(1000), vocabulary_size=100, lowercase=True
    )
    ```
    """

    backbone_cls = gMLPBackbone

    def __init__(self, vocabulary=None, lowercase=False, **kwargs):
        add_special_token(self, "[CLS]", "cls_token")
        add_special_token(self, "[SEP]", "sep_token")
        add_special_token(self, "[PAD]", "pad_token")
        add_special_token(self, "[MASK]", "mask_token")
        # The packers read `start_token` and `end_token`.
        add_special_token(self, "[CLS]", "start_token")
        add_special_token(self, "[SEP]", "end_token")
        super().__init__(vocabulary=vocabulary, lowercase=lowercase, **kwargs)
        # Nothing to build (the vocabulary is host state). Marked built so
        # that `task.quantize(...)`, which checks every leaf layer is built
        # before asking it to quantize, passes over it as over a norm.
        self.built = True

    def detokenize(self, inputs):
        return _respace(super().detokenize(inputs))

    @classmethod
    def from_corpus(
        cls,
        data,
        vocabulary_size,
        lowercase=False,
        strip_accents=False,
        vocabulary_output_file=None,
        split=True,
        split_on_cjk=True,
        suffix_indicator="##",
        reserved_tokens=None,
        **kwargs,
    ):
        """Trains a WordPiece vocabulary on `data` and returns a tokenizer.

        Runs keras-hub's `compute_word_piece_vocabulary` (tensorflow-text's
        WordPiece learner) and passes the settings that shape the
        vocabulary to the tokenizer as well, so both split text the same
        way. The learner keeps only word pieces that occur at least 10
        times (its lowest count threshold, which keras-hub does not
        expose), so a small corpus can give fewer tokens than
        `vocabulary_size`: that raises a `UserWarning` saying how many.

        Args:
            data: a `tf.data.Dataset` of strings (batch it, e.g. by
                1,000, for speed) or a list of paths of text files.
            vocabulary_size: int, the most tokens to keep, special tokens
                included.
            lowercase: bool, whether to lowercase the text.
            strip_accents: bool, whether to strip accents.
            vocabulary_output_file: optional path; the vocabulary is also
                written there, one token a line, for `vocabulary=path`.
            split: bool, whether to split text on whitespace and
                punctuation. `False` needs a dataset of already split words
                (and the tokenizer then expects split input too).
            split_on_cjk: bool, whether to split CJK characters apart.
            suffix_indicator: str, the prefix that marks a word piece
                continuing a word, `"##"` in BERT.
            reserved_tokens: optional list of strings kept in the
                vocabulary after BERT's five special tokens, e.g. extra
                markers for your data.
            **kwargs: passed to the tokenizer's constructor.

        Examples:

        ```python
        texts = tf.data.Dataset.from_tensor_slices(paragraphs).batch(1000)
        tokenizer = keras_gmlp.models.gMLPTokenizer.from_corpus(
            texts, vocabulary_size=2000, lowercase=True,
            reserved_tokens=["[CODE]"],
        )
        tokenizer.vocabulary_size()  # 2000, or fewer with a warning
        ```
        """
        reserved = _reserved_tokens(reserved_tokens, vocabulary_size)
        vocabulary = compute_word_piece_vocabulary(
            data,
            vocabulary_size,
            vocabulary_output_file=vocabulary_output_file,
            lowercase=lowercase,
            strip_accents=strip_accents,
            split=split,
            split_on_cjk=split_on_cjk,
            suffix_indicator=suffix_indicator,
            reserved_tokens=reserved,
        )
        vocabulary, trained_size = _trained_vocabulary(
            vocabulary, vocabulary_output_file
        )
        if trained_size < vocabulary_size:
            warnings.warn(
                f"gMLPTokenizer.from_corpus() was asked for "
                f"vocabulary_size={vocabulary_size} but trained only "
                f"{trained_size} tokens. {_shortfall_reason(vocabulary_size, trained_size)}",
                stacklevel=2,
            )
        return cls(
            vocabulary=vocabulary,
            lowercase=lowercase,
            strip_accents=strip_accents,
            split=split,
            split_on_cjk=split_on_cjk,
            suffix_indicator=suffix_indicator,
            **kwargs,
        )


def _reserved_tokens(reserved_tokens, vocabulary_size):
    """BERT's special tokens followed by the new `reserved_tokens`; raises
    `ValueError` unless `vocabulary_size` leaves room for trained ones."""
    reserved = list(SPECIAL_TOKENS)
    for token in reserved_tokens or ():
        if not isinstance(token, str):
            raise ValueError(
                "Argument `reserved_tokens` must be a list of strings. "
                f"Received: reserved_tokens={reserved_tokens!r}"
            )
        if token not in reserved:
            reserved.append(token)
    if (
        isinstance(vocabulary_size, bool)
        or not isinstance(vocabulary_size, int)
        or vocabulary_size <= len(reserved)
    ):
        raise ValueError(
            "Argument `vocabulary_size` must be an integer larger than "
            f"the {len(reserved)} reserved tokens {reserved}. "
            f"Received: vocabulary_size={vocabulary_size!r}"
        )
    return reserved


def _trained_vocabulary(vocabulary, vocabulary_output_file):
    """The vocabulary to build the tokenizer with (the list, or the file
    path when one was given) and the number of tokens it holds."""
    if vocabulary_output_file is None:
        return vocabulary, len(vocabulary)
    # keras-hub then writes the file instead of returning the list.
    with open(vocabulary_output_file, encoding="utf-8") as file:
        trained_size = sum(1 for _ in file)
    return vocabulary_output_file, trained_size


def _shortfall_reason(asked, trained):
    """Why keras-hub's trainer (tensorflow-text's WordPiece learner)
    returned fewer tokens than asked. It binary-searches a whole-number
    count threshold, never below 10 occurrences, and stops as soon as the
    vocabulary is at most 5% short of the target."""
    if asked - trained <= 0.05 * asked:
        return (
            "keras-hub's WordPiece trainer (tensorflow-text's learner) "
            "stops searching once the vocabulary is within 5% below the "
            "size asked for. Ask for a little more to get closer."
        )
    return (
        "keras-hub's WordPiece trainer (tensorflow-text's learner) keeps "
        "the word pieces seen at least a whole-number count of times, "
        "never fewer than 10, and no such count gives more on this "
        "corpus: it has too few frequent distinct word pieces. Train on "
        "more text for a larger vocabulary, or ask for "
        f"vocabulary_size={trained}."
    )


# Punctuation that prose and Python code write against the word before it,
# or against the word after it.
_NO_SPACE_BEFORE = frozenset(".,;:!?)]}’”_-([")
_NO_SPACE_AFTER = frozenset("([{“‘_-@~")
# A run of one of these is one operator or marker: "==", "**", "...", ">>>".
_RUNS = frozenset("=*<>/-_.:+&^%~!")
_OPERATORS = frozenset(
    (":=", "<=", ">=", "!=", "+=", "-=", "*=", "/=", "->", "%=", "&=", "|=", "^=")
    + ("**=", "//=", "<<=", ">>=")
)
# The punctuation after which these characters start a value in code.
_BEFORE_A_VALUE = {"(": set("=,:"), "[": set("=,:"), "-": set("=,<>")}
# Written in pairs around what they quote: "text", 'text', *emphasis*.
_PAIRED = frozenset("\"'*")
_CONTRACTIONS = frozenset(("s", "t", "d", "m", "ll", "re", "ve"))


def _join_words(words):
    """Joins the words of a detokenized text (WordPiece continuations
    already merged, punctuation split off) with the spaces the text most
    likely had."""
    text = []
    open_marks = set()
    previous = None
    attach_next = False
    dunder_open = False
    for index, word in enumerate(words):
        following = words[index + 1] if index + 1 < len(words) else None
        space = previous is not None and not attach_next
        if (
            len(word) == 1
            and previous is not None
            and ((word == previous and word in _RUNS) or previous + word in _OPERATORS)
        ):
            # The rest of an operator, spaced like its first character.
            text.append(word)
            previous = word
            continue
        attach_next = False
        if _starts_operator(words, index):
            # "!=", "->", "-=", ":=", "**=": spaced as code spaces an
            # operator, not as prose spaces its first character.
            pass
        elif word == "_" and following == "_":
            # "__" opens a dunder name ("def __init__", "x.__len__") or,
            # after its word, closes it ("__name__ == x").
            closing = dunder_open and previous[-1:].isalnum()
            dunder_open = not closing
            space = space and not closing and previous != "."
            attach_next = not closing
        elif len(word) == 1:
            # After "=" or ",", a "(" or "[" opens a value, not a call or an
            # index ("d = {'a': [1]}", also after ":"), and a "-" is a minus
            # sign, not a hyphen ("x = -1", also after "<" and ">").
            value = previous in _BEFORE_A_VALUE.get(word, ())
            space = space and (word not in _NO_SPACE_BEFORE or value)
            # An apostrophe: "it’s", "x"’s, "don't"; a "'" after a space
            # opens a quote instead.
            apostrophe = word == "’" or (
                word == "'" and (previous or "")[-1:].isalnum()
            )
            if apostrophe and following in _CONTRACTIONS:
                space, attach_next = False, True
            elif word == following == "*" and previous == ",":
                # Unpacking ("f(*args, **kwargs)"), not emphasis: no pair.
                attach_next = True
            elif word in _PAIRED:
                # The first of a pair opens; the second closes.
                attach_next = word not in open_marks
                space = space and attach_next
                open_marks ^= {word}
            else:
                attach_next = word in _NO_SPACE_AFTER
        text.append(" " + word if space else word)
        previous = word
    return "".join(text)


def _starts_operator(words, index):
    """Whether `words[index:]` starts with an operator of `_OPERATORS`
    (each of its characters a word of its own)."""
    return any(
        "".join(words[index : index + size]) in _OPERATORS
        and all(len(word) == 1 for word in words[index : index + size])
        for size in (2, 3)
    )


def _respace(detokenized):
    """keras-hub's detokenized text (the words joined by single spaces),
    respaced by `_join_words`: a string, a list of them, or a string
    tensor of any shape."""
    if isinstance(detokenized, str):
        return _join_words(detokenized.split(" "))
    if isinstance(detokenized, (list, tuple)):
        return [_respace(text) for text in detokenized]
    import numpy as np
    import tensorflow as tf

    def respace_array(array):
        respaced = [
            _join_words(text.decode("utf-8").split(" ")).encode("utf-8")
            for text in np.asarray(array).reshape(-1)
        ]
        return np.array(respaced, dtype=object).reshape(np.shape(array))

    if tf.executing_eagerly():
        return tf.constant(respace_array(detokenized.numpy()), dtype=tf.string)
    respaced = tf.numpy_function(respace_array, [detokenized], tf.string)
    respaced.set_shape(detokenized.shape)
    return respaced
