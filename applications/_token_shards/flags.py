"""The flags of `tokenize_corpus.py` and the `--token-files` flag of the
language-model programs. Standard library only, so `--help` and flag
errors answer before Keras is imported."""

from _shared.flag_values import positive_int
from _shared.flags import make_parser
from _shared.flags import prepare_output_dir
from _text_input.flags import FAST_VOCABULARY_SIZE
from _text_input.flags import VOCABULARY_SIZE
from _text_input.flags import add_corpus_flags
from _text_input.flags import check_corpus_flags

# Ids per shard: 2**24 (32 MiB of uint16), so a shard is written every few
# seconds at the tokenizer's speed and a resumed run redoes little.
SHARD_TOKENS = 1 << 24
# What makes a shard set: a resumed tokenization must have the same.
MADE_WITH = (
    "train_files",
    "validation_files",
    "test_files",
    "dataset",
    "text_feature",
    "heldout_fraction",
    "vocabulary",
    "vocabulary_size",
    "vocabulary_sample",
    "vocabulary_sample_bytes",
    "shard_tokens",
    "fast",
)


def add_token_files_flag(parser):
    """--token-files: a shard set of tokenize_corpus.py as the corpus."""
    parser.add_argument(
        "--token-files",
        metavar="DIR",
        help="a corpus tokenized by tokenize_corpus.py (its --output-dir): "
        "read as token ids, with its vocabulary, without TensorFlow; instead "
        "of the corpus and vocabulary flags",
    )


def check_token_files_flag(parser, args, argv):
    """--token-files excludes the flags that choose or tokenize a corpus;
    the vocabulary size then comes from the shard set (None here) unless
    given, when it must match. After --fast is applied: its vocabulary
    size is not the user's."""
    from _shared.flags import flag_given

    if not args.token_files:
        return
    for flag in ("train_files", "dataset", "vocabulary"):
        if getattr(args, flag, None):
            parser.error(
                f"--token-files and --{flag.replace('_', '-')} both choose the "
                "corpus or its vocabulary: give one (the shard set carries its "
                "vocabulary)"
            )
    if not flag_given(argv, "--vocabulary-size"):
        args.vocabulary_size = None


def build_parser(doc):
    parser = make_parser(doc, "outputs/tokenize_corpus", training=False)
    add_corpus_flags(parser, "the Python reference", shuffle=False)
    parser.add_argument(
        "--vocabulary-size",
        type=positive_int,
        default=VOCABULARY_SIZE,
        help="WordPiece vocabulary size to train (a small corpus may give fewer)",
    )
    parser.add_argument(
        "--shard-tokens",
        type=positive_int,
        default=SHARD_TOKENS,
        help="token ids per shard (a shard ends at a document's end past it)",
    )
    return parser


def parse_args(doc, argv=None):
    """(parser, flags) of tokenize_corpus.py, every flag checked."""
    parser = build_parser(doc)
    args = parser.parse_args(argv)
    check_corpus_flags(parser, args)
    if args.vocabulary_size < 50:
        parser.error(
            f"--vocabulary-size must be at least 50; received {args.vocabulary_size}"
        )
    if args.fast:
        args.vocabulary_size = min(args.vocabulary_size, FAST_VOCABULARY_SIZE)
    args.output_dir = prepare_output_dir(parser, args.output_dir)
    return parser, args
