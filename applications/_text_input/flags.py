"""The flags of the text programs' input: local text files, a
tensorflow-datasets corpus, the held-out share and the shuffle buffer.
Standard library only, so `--help` and flag errors answer before Keras is
imported."""

from _shared.flag_values import fraction
from _shared.flag_values import positive_int

# The documents of the bundled corpus that --fast keeps, and the word
# pieces of a --fast vocabulary.
FAST_DOCUMENTS = 12
FAST_VOCABULARY_SIZE = 300
# The word pieces of a trained vocabulary, by default: what the bundled
# corpus gives.
VOCABULARY_SIZE = 1200


# The text the vocabulary is trained on, at most: keras-hub's WordPiece
# trainer (tensorflow-text's learner) holds every distinct word and its
# pieces, about 23 MB of memory per MB of English prose (measured: peak
# 962 MB on 1.7 MB, 1,116 MB on 8 MB, 1,302 MB on 16 MB), so a default
# counted in documents alone grew with their length. Raise it for a larger
# vocabulary on a host with memory to spare.
VOCABULARY_SAMPLE_BYTES = 4_000_000

# The corpus flags of the language-model programs, likewise.
CORPUS_RUN_FLAGS = (
    "dataset",
    "text_feature",
    "token_files",
    "vocabulary",
    "vocabulary_sample",
    "vocabulary_sample_bytes",
    "heldout_fraction",
)


def add_text_file_flags(parser, with_vocabulary=True, shuffle=True):
    """--train-files, --validation-files, --test-files, with
    `with_vocabulary` the vocabulary flags, with `shuffle`
    --shuffle-buffer."""
    group = parser.add_argument_group("local text files")
    for part, note in (
        ("train", "the documents to train on"),
        (
            "validation",
            "held-out documents that choose the checkpoint "
            "(default: carved from the train files)",
        ),
        (
            "test",
            "held-out documents scored once (default: carved from the train files)",
        ),
    ):
        group.add_argument(
            f"--{part}-files",
            metavar="GLOB",
            help=f"{note}: UTF-8 text files (.txt, or .gz), a blank line "
            "between documents; quote the glob",
        )
    if shuffle:
        group.add_argument(
            "--shuffle-buffer",
            type=positive_int,
            default=10000,
            help="documents (and windows) shuffled together: the memory that "
            "shuffling takes",
        )
    if with_vocabulary:
        group.add_argument(
            "--vocabulary",
            metavar="FILE",
            help="a WordPiece vocabulary, one word piece a line with BERT's "
            "special tokens (vocab.txt), instead of training one",
        )
        group.add_argument(
            "--vocabulary-sample",
            type=positive_int,
            default=100000,
            help="most train documents the vocabulary is trained on",
        )
        group.add_argument(
            "--vocabulary-sample-bytes",
            type=positive_int,
            default=VOCABULARY_SAMPLE_BYTES,
            help="most bytes of text the vocabulary is trained on (its "
            "trainer's memory grows with them)",
        )


def check_text_file_flags(parser, args):
    """--validation-files and --test-files need --train-files, and the
    files exclude --dataset."""
    if getattr(args, "dataset", None) and args.train_files:
        parser.error("--train-files and --dataset both choose the corpus: give one")
    for part in ("validation", "test"):
        if getattr(args, f"{part}_files") and not args.train_files:
            parser.error(f"--{part}-files needs --train-files")


def add_corpus_flags(parser, default_corpus, shuffle=True):
    """--dataset (a tensorflow-datasets text corpus, streamed), its
    --data-dir and --text-feature, the local text files, and the share of
    documents held out where a corpus has no such split."""
    parser.add_argument(
        "--heldout-fraction",
        type=fraction,
        default=0.1,
        help="share of documents held out for validation and again for test "
        "(where the corpus has no such split)",
    )
    parser.add_argument(
        "--dataset",
        help=f"a tensorflow-datasets text corpus (e.g. wikipedia/20230601.en, "
        f"c4) instead of {default_corpus}, read as a stream",
    )
    parser.add_argument(
        "--data-dir", help="where tensorflow-datasets keeps prepared datasets"
    )
    parser.add_argument(
        "--text-feature",
        help="the --dataset feature holding the text (default: 'text', "
        "or its only text feature)",
    )
    add_text_file_flags(parser, shuffle=shuffle)


def check_corpus_flags(parser, args):
    """The corpus flags' checks, as flag errors."""
    if (args.data_dir or args.text_feature) and not args.dataset:
        parser.error("--data-dir and --text-feature need --dataset")
    check_text_file_flags(parser, args)
