"""Token shards: a corpus tokenized once (`tokenize_corpus.py`) and read
by the language-model programs (`--token-files`) at memory speed, without
TensorFlow.

- `shard_set`: the format (a folder of `.npy` shards, the vocabulary and a
  manifest), its checks, and reading windows from it. numpy only.
- `writer`: a corpus' parts tokenized into shards, resumably.
- `stream`: the train batches of a shard set, each a function of
  (seed, step), with the text streams' interface.
- `corpus`: a language-model program's corpus from a shard set.
- `flags`: `tokenize_corpus.py`'s flags and `--token-files` (standard
  library only, read before Keras is imported).
"""
