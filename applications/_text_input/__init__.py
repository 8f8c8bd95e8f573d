"""The text programs' input pipeline, one stage a module, each calling only
the ones before it:

    text_files, datasets  ->  sources  ->  windows  ->  stream
                                   vocabulary (beside: the tokenizer)
                     corpus: a language model's tokenizer, held-out
                     windows and counts, from the stages above

- `text_files`: documents of local UTF-8 text files (`.txt`, `.gz`).
- `datasets`: tensorflow-datasets builders and their text features.
- `sources`: the train, validation and test parts of a corpus
  (`DocumentSource`), bundled, from files or from tensorflow-datasets.
- `windows`: documents tokenized and cut into windows of a fixed length.
- `stream`: the endless, shuffled, checkpointed train batches
  (`BatchStream`).
- `vocabulary`: the WordPiece vocabulary, trained or read, kept for a
  resumed run.
- `corpus`: a language-model program's corpus, put together from them.
- `flags`: the input's flags (files, --dataset, held-out share).
- `errors`: `refuse`, bad data as a one-line error before training.

Only `flags` may be imported before the flags are parsed (standard library
alone); the other modules import Keras or TensorFlow.
"""
