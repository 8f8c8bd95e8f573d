"""Tokenizes a text corpus once into shards of token ids for pretraining.

pretrain_mlm.py and train_causal_lm.py tokenize their corpus on every run,
on the training host, through TensorFlow. This program does it once: the
train, validation and test documents (--train-files, --dataset or the
bundled Python Language Reference, split as those programs split them)
become shards of token ids with the WordPiece vocabulary beside them
(trained on the first --vocabulary-sample train documents, at most
--vocabulary-sample-bytes of text, or read from --vocabulary). The programs
then train on them with --token-files: windows read at memory speed, the
same every run, and on JAX or PyTorch without TensorFlow.

Outputs in --output-dir: train/, validation/ and test/ (shards of
--shard-tokens ids each, `.npy`), vocabulary.txt, train_token_counts.npy
and manifest.json (documents, tokens and SHA-256 of every shard, the
vocabulary's digest and the flags that made them). An interrupted run
resumes where it stopped when started again with the same flags; a
finished one says so.

    .venv/bin/python applications/tokenize_corpus.py               # the bundled corpus
    .venv/bin/python applications/tokenize_corpus.py --train-files 'corpus/*.txt.gz' \\
        --vocabulary-size 30522 --output-dir shards/corpus
    .venv/bin/python applications/pretrain_mlm.py --token-files shards/corpus
"""

import time

from _shared.flag_parser import keep_output_dir
from _shared.interrupt import run
from _shared.logs import quiet_tensorflow_logs
from _shared.run_state import flag_differences
from _shared.run_state import flag_values
from _token_shards import flags

PROGRAM = "tokenize_corpus.py"


def parse_args(argv=None):
    """(parser, flags), checked before Keras is imported."""
    return flags.parse_args(__doc__, argv)


def resumed_manifest(args, made_with):
    """The manifest of an interrupted tokenization in --output-dir made with
    the same flags, or None; a finished one ends the program."""
    from _token_shards import shard_set

    if not (args.output_dir / shard_set.MANIFEST).exists():
        return None
    try:
        manifest = shard_set.read_manifest(args.output_dir)
    except shard_set.ShardSetError as error:
        raise SystemExit(f"error: {error}") from None
    if manifest["complete"]:
        tokens = manifest["parts"]["train"]["tokens"]
        print(f"{args.output_dir} holds a finished shard set: {tokens:,} train tokens.")
        raise SystemExit(0)
    differences = flag_differences(manifest["made_with"], made_with)
    if differences:
        raise SystemExit(
            f"error: {args.output_dir} holds a tokenization made with other flags "
            f"({'; '.join(differences)}): rerun with those, or use another --output-dir"
        )
    return manifest


def main(argv=None):
    parser, args = parse_args(argv)
    made_with = flag_values(args, flags.MADE_WITH)
    manifest = resumed_manifest(args, made_with)
    quiet_tensorflow_logs()
    started = time.time()
    from _text_input.corpus import language_model_sources
    from _token_shards import writer

    from keras_gmlp.utils.text_corpus import reference_documents

    sources = language_model_sources(parser, args, reference_documents)
    tokenizer, vocabulary = writer.shard_vocabulary(args, sources["train"], manifest)
    if manifest is None:
        manifest = writer.new_manifest(made_with, sources, vocabulary, tokenizer)
        writer.write_manifest(args.output_dir, manifest)
    # From here on an interrupted run resumes from what it wrote.
    keep_output_dir()
    for part in writer.PARTS:
        writer.tokenize_part(
            args.output_dir, manifest, part, sources[part], tokenizer, args.shard_tokens
        )
    writer.write_train_counts(args.output_dir, manifest, tokenizer.vocabulary_size())
    manifest["complete"] = True
    writer.write_manifest(args.output_dir, manifest)
    print(
        f"\nShards of {tokenizer.vocabulary_size()} word pieces in {args.output_dir} "
        f"({time.time() - started:.0f} s); train on them with "
        f"pretrain_mlm.py or train_causal_lm.py --token-files {args.output_dir}"
    )
    return manifest


if __name__ == "__main__":
    run(main)
