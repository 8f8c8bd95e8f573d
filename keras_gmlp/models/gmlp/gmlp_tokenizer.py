import keras
from keras_hub.tokenizers import WordPieceTokenizer
from keras_hub.tokenizers import compute_word_piece_vocabulary

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
    tokenizer.detokenize([5, 6, 7, 8, 9])  # "the quick brown fox ."

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
        self._add_special_token("[CLS]", "cls_token")
        self._add_special_token("[SEP]", "sep_token")
        self._add_special_token("[PAD]", "pad_token")
        self._add_special_token("[MASK]", "mask_token")
        # The packers read `start_token` and `end_token`.
        self._add_special_token("[CLS]", "start_token")
        self._add_special_token("[SEP]", "end_token")
        super().__init__(vocabulary=vocabulary, lowercase=lowercase, **kwargs)

    @classmethod
    def from_corpus(
        cls,
        data,
        vocabulary_size,
        lowercase=False,
        strip_accents=False,
        vocabulary_output_file=None,
        **kwargs,
    ):
        """Trains a WordPiece vocabulary on `data` and returns a tokenizer.

        Args:
            data: a `tf.data.Dataset` of strings (batch it, e.g. by
                1,000, for speed) or a list of paths of text files.
            vocabulary_size: int, the size of the vocabulary to train,
                special tokens included. Small corpora may give fewer.
            lowercase: bool, whether to lowercase the text.
            strip_accents: bool, whether to strip accents.
            vocabulary_output_file: optional path; the vocabulary is also
                written there, one token a line, for `vocabulary=path`.
            **kwargs: passed to the tokenizer's constructor.
        """
        vocabulary = compute_word_piece_vocabulary(
            data,
            vocabulary_size,
            vocabulary_output_file=vocabulary_output_file,
            lowercase=lowercase,
            strip_accents=strip_accents,
            reserved_tokens=list(SPECIAL_TOKENS),
        )
        if vocabulary_output_file is not None:
            # keras-hub then writes the file instead of returning the list.
            vocabulary = vocabulary_output_file
        return cls(
            vocabulary=vocabulary,
            lowercase=lowercase,
            strip_accents=strip_accents,
            **kwargs,
        )
