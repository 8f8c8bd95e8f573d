"""
Title: Masked language modeling with gMLP and aMLP
Author: keras-gmlp contributors
Date created: 2026/11/23
Last modified: 2026/11/23
Description: Train a WordPiece tokenizer, pretrain gMLP and aMLP masked language models, and fine-tune a text classifier from the saved preset.
Accelerator: None
"""

"""
## Introduction

gMLP ("Pay Attention to MLPs", Liu et al. 2021) replaces self-attention with
a *spatial gating unit*: a learned linear projection along the token axis.
The paper pretrains it like BERT, by masked language modeling (MLM), and
shows that adding one tiny attention head per block (aMLP) closes the gap
to Transformers on tasks that compare two sentences.

This guide runs the recipe on text that ships with every Python (the
Language Reference in `pydoc_data.topics`): it trains a WordPiece
vocabulary, pretrains a gMLP and an aMLP encoder and measures them against
a unigram baseline, saves the better one as a preset and fine-tunes
`gMLPTextClassifier` from it on single sentences and on sentence pairs.

`KERAS_GMLP_GUIDE_FAST=1` runs a tiny version (what the test suite runs);
without it the guide trains for longer, at larger sizes.
"""

"""
## Setup
"""

import os
import re
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "jax")  # or "tensorflow", "torch"

import keras
import numpy as np
import tensorflow as tf
from pydoc_data import topics

from keras_gmlp import models

FAST = os.environ.get("KERAS_GMLP_GUIDE_FAST") == "1"
SEQUENCE_LENGTH = 32 if FAST else 64
VOCABULARY_SIZE = 400 if FAST else 1200
HIDDEN_DIM, NUM_LAYERS = (64, 2) if FAST else (128, 4)
PRETRAIN_EPOCHS = 1 if FAST else 10
LEARNING_RATE, FINETUNE_LEARNING_RATE = 5e-3, 2e-3
FINETUNE_EPOCHS = 5 if FAST else 10
BATCH_SIZE = 32
keras.utils.set_random_seed(42)

"""
## The corpus

`pydoc_data.topics` maps 79 topic names ("assignment", "formatstrings",
"typesseq", ...) to about 465,000 characters of documentation. We drop the
reStructuredText underlines (`*****`, `-----`), hold out 10% of the
*documents* (not of the sentences: sentences of one document share rare
words, and we want perplexity on text the model has not seen) and cut every
document into chunks of 24 words.
"""


def clean(text):
    return re.sub(r"[-*=~^]{3,}", " ", text)


def chunks(text, words_per_chunk):
    words = clean(text).split()
    starts = range(0, max(1, len(words) - words_per_chunk // 2), words_per_chunk)
    return [" ".join(words[i : i + words_per_chunk]) for i in starts]


names = sorted(topics.topics)
heldout_names = sorted(np.random.default_rng(0).choice(names, 8, replace=False))
train_names = [name for name in names if name not in heldout_names]
train_chunks = [c for n in train_names for c in chunks(topics.topics[n], 24)]
heldout_chunks = [c for n in heldout_names for c in chunks(topics.topics[n], 24)]
print(f"{len(train_chunks)} train chunks, {len(heldout_chunks)} held-out chunks")

"""
## Training the tokenizer

`gMLPTokenizer.from_corpus()` runs keras-hub's WordPiece trainer (the one
BERT's vocabulary comes from) and returns a tokenizer whose vocabulary
starts with BERT's special tokens `[PAD]`, `[UNK]`, `[CLS]`, `[SEP]` and
`[MASK]`. It reads a `tf.data.Dataset` of strings or, faster, a list of
text files. The trainer keeps only word pieces seen at least 10 times, so
on a small corpus it can return fewer tokens than asked for, with a
warning that says why. (Fast mode trains it on an eighth of the text.)
"""

workdir = tempfile.mkdtemp()
corpus_path = os.path.join(workdir, "train.txt")
with open(corpus_path, "w", encoding="utf-8") as file:
    file.write("\n".join(train_chunks[: len(train_chunks) // 8 if FAST else None]))
tokenizer = models.gMLPTokenizer.from_corpus(
    [corpus_path], vocabulary_size=VOCABULARY_SIZE, lowercase=True
)
vocabulary_size = tokenizer.vocabulary_size()
example = "The with statement wraps a block in a context manager."
print("Vocabulary size:", vocabulary_size)
print([tokenizer.id_to_token(int(i)) for i in np.asarray(tokenizer(example))])

"""
## Masking

`gMLPMaskedLMPreprocessor` packs each chunk as `[CLS] tokens [SEP]` and
selects 15% of the tokens to predict; of those, 80% become `[MASK]`, 10% a
random token and 10% stay. Mapped over a `tf.data` pipeline it draws new
masks for every batch; here we mask the training set a few times up front
(BERT's "duplication factor"), which is cheaper on a CPU, and the held-out
set once, so that every model is scored on the same masked tokens.
"""

preprocessor = models.gMLPMaskedLMPreprocessor(
    tokenizer, sequence_length=SEQUENCE_LENGTH, mask_selection_length=8
)


def mask(texts):
    x, y, weight = preprocessor(tf.constant(texts))
    return keras.tree.map_structure(keras.ops.convert_to_numpy, (x, y, weight))


train_x, train_y, train_weight = mask(train_chunks * (2 if FAST else 4))
heldout_x, heldout_y, heldout_weight = mask(heldout_chunks)

"""
Two baselines tell us what "learned something" means. A model that ignores
the context and predicts every masked token from its frequency in the
training text reaches the *unigram* perplexity; always guessing the most
frequent token gives the *majority-token* accuracy.
"""

train_ids = train_x["token_ids"].copy()  # Put the masked tokens back.
np.put_along_axis(train_ids, train_x["mask_positions"], train_y, axis=1)
counts = np.bincount(train_ids.ravel(), minlength=vocabulary_size).astype("float64")
counts[:5] = 0  # Special tokens are never masked.
unigram = (counts + 1) / (counts + 1).sum()
heldout_labels = heldout_y[heldout_weight > 0]
unigram_perplexity = float(np.exp(-np.log(unigram[heldout_labels]).mean()))
majority_token_accuracy = float(np.mean(heldout_labels == counts.argmax()))
print(
    f"{heldout_labels.size} held-out masked tokens; unigram perplexity "
    f"{unigram_perplexity:.1f}, majority-token accuracy {majority_token_accuracy:.3f}"
)

"""
## Pretraining gMLP and aMLP

Both encoders share every setting; aMLP adds a single-head attention of
size 16 to each block (`attention_dim`). Held-out perplexity comes from
`keras_gmlp.models.MaskedLMPerplexity`: `exp` of the mean cross-entropy
over the *real* masked tokens. (The loss Keras reports divides by all mask
slots, padded ones included, so `exp(loss)` is not a perplexity.)
`MaskedLMAccuracy` likewise counts only real masked tokens. Both go in
`weighted_metrics`, so they receive the preprocessor's sample weights.
"""


def pretrain(attention_dim):
    keras.utils.set_random_seed(42)
    backbone = models.gMLPBackbone(
        vocabulary_size=vocabulary_size,
        num_layers=NUM_LAYERS,
        hidden_dim=HIDDEN_DIM,
        intermediate_dim=2 * HIDDEN_DIM,
        max_sequence_length=SEQUENCE_LENGTH,
        attention_dim=attention_dim,
        dropout=0.0 if FAST else 0.1,
    )
    masked_lm = models.gMLPMaskedLM(backbone, preprocessor=None)
    steps = PRETRAIN_EPOCHS * (len(train_y) // BATCH_SIZE)
    schedule = keras.optimizers.schedules.CosineDecay(
        1e-4, steps, alpha=0.1, warmup_target=LEARNING_RATE, warmup_steps=steps // 10
    )
    masked_lm.compile(
        optimizer=keras.optimizers.AdamW(schedule, weight_decay=0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[models.MaskedLMAccuracy(), models.MaskedLMPerplexity()],
    )
    start = time.perf_counter()
    masked_lm.fit(
        train_x,
        train_y,
        sample_weight=train_weight,
        batch_size=BATCH_SIZE,
        epochs=PRETRAIN_EPOCHS,
        verbose=2,
    )
    scores = masked_lm.evaluate(
        heldout_x, heldout_y, sample_weight=heldout_weight, verbose=0, return_dict=True
    )
    scores["seconds"] = time.perf_counter() - start
    scores["parameters"] = backbone.count_params()
    return masked_lm, scores


results = {"gMLP": pretrain(None), "aMLP": pretrain(16)}
print(f"{'':5} {'params':>8} {'perplexity':>10} {'accuracy':>8} {'seconds':>7}")
for name, (_, s) in results.items():
    print(
        f"{name:5} {s['parameters']:>8,} {s['masked_lm_perplexity']:>10.1f} "
        f"{s['masked_lm_accuracy']:>8.3f} {s['seconds']:>7.1f}"
    )
gmlp_perplexity = float(results["gMLP"][1]["masked_lm_perplexity"])
gmlp_masked_accuracy = float(results["gMLP"][1]["masked_lm_accuracy"])
amlp_perplexity = float(results["aMLP"][1]["masked_lm_perplexity"])
amlp_masked_accuracy = float(results["aMLP"][1]["masked_lm_accuracy"])

"""
Both models end well below the unigram perplexity and above the
majority-token accuracy: they use the context, not only word frequencies.
Which of the two wins at this tiny scale varies with the seed; the paper's
gap in aMLP's favour (Table 4) opens with more data and steps, and on
tasks that compare two sentences.

## Saving the encoder as a preset

keras-hub tasks save to a *preset* directory: the backbone's config and
weights, the tokenizer's vocabulary, the preprocessor and the task. We
pretrained without a preprocessor attached (the data was masked up front),
so we attach it now and save the model with the lower perplexity.
"""

best = min(results, key=lambda name: results[name][1]["masked_lm_perplexity"])
masked_lm = results[best][0]
masked_lm.preprocessor = preprocessor
preset_dir = os.path.join(workdir, f"{best.lower()}_pydoc")
masked_lm.save_to_preset(preset_dir)
print(f"Saved {best} to {preset_dir}:", sorted(os.listdir(preset_dir)))

"""
## Fine-tuning on single sentences

A classification task with real labels: given 16 words, which of four
reference pages do they come from (compound statements, format strings,
sequence types or special method names)? `gMLPTextClassifier.from_preset()`
loads the pretrained encoder and the tokenizer, and adds a fresh dense
head on the backbone's pooled output. We take the same number of chunks
from each page, so the majority class is a quarter of the test set.
"""

pages = ["compound", "formatstrings", "typesseq", "specialnames"]
per_page = 100 if FAST else 200
rng = np.random.default_rng(1)
page_chunks = [rng.permutation(chunks(topics.topics[p], 16))[:per_page] for p in pages]


def split(items, labels, test_fraction=0.25):
    order = rng.permutation(len(labels))
    test = order[: int(test_fraction * len(labels))]
    train = order[len(test) :]
    return (items[train], labels[train]), (items[test], labels[test])


def fine_tune(num_classes, train, test):
    keras.utils.set_random_seed(42)
    classifier = models.gMLPTextClassifier.from_preset(
        preset_dir, num_classes=num_classes
    )
    classifier.compile(
        optimizer=keras.optimizers.AdamW(FINETUNE_LEARNING_RATE),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    classifier.fit(*train, batch_size=BATCH_SIZE, epochs=FINETUNE_EPOCHS, verbose=2)
    accuracy = classifier.evaluate(*test, verbose=0, return_dict=True)["accuracy"]
    majority = np.bincount(test[1]).max() / len(test[1])
    print(f"test accuracy {accuracy:.3f}, majority class {majority:.3f}")
    return classifier, float(accuracy), float(majority)


sentences = np.concatenate(page_chunks)
labels = np.repeat(np.arange(len(pages)), [len(c) for c in page_chunks])
train, test = split(sentences, labels)
classifier, sentence_accuracy, sentence_majority = fine_tune(len(pages), train, test)

"""
## Fine-tuning on sentence pairs

Sentence pairs are packed as `[CLS] first [SEP] second [SEP]`, with segment
id 0 for the first text and 1 for the second. Pass them as a tuple
`x=(first, second)` of equal-length arrays. The task: one of the two texts
comes from the page on special method names, the other from one of the
three other pages; which one is it, the first (label 0) or the second
(label 1)? Neither text alone answers that: the encoder has to read both
and tell them apart by their segment.
"""


def make_pairs(pools, num_pairs):
    """Pairs of one special-names text and one other text, in random order."""
    second_is_special = rng.random(num_pairs) < 0.5
    special = rng.choice(pools[3], num_pairs)
    other = np.array([rng.choice(pools[rng.integers(3)]) for _ in range(num_pairs)])
    first = np.where(second_is_special, other, special)
    second = np.where(second_is_special, special, other)
    return (first, second), second_is_special.astype("int32")


# Texts in test pairs never appear in training pairs.
pair_chunks = [rng.permutation(chunks(topics.topics[p], 10)) for p in pages]
train_pools = [c[: 3 * len(c) // 4] for c in pair_chunks]
test_pools = [c[3 * len(c) // 4 :] for c in pair_chunks]
num_pairs = 600 if FAST else 3000
pair_train = make_pairs(train_pools, num_pairs)
pair_test = make_pairs(test_pools, num_pairs // 3)
_, pair_accuracy, pair_majority = fine_tune(2, pair_train, pair_test)
"""
## Results

Each result against its baseline; the test suite checks these margins.
"""

gmlp_accuracy_over_majority = gmlp_masked_accuracy - majority_token_accuracy
amlp_accuracy_over_majority = amlp_masked_accuracy - majority_token_accuracy
gmlp_perplexity_below_unigram = unigram_perplexity - gmlp_perplexity
amlp_perplexity_below_unigram = unigram_perplexity - amlp_perplexity
sentence_accuracy_over_majority = sentence_accuracy - sentence_majority
pair_accuracy_over_majority = pair_accuracy - pair_majority
print(
    f"Masked-token accuracy over the majority token: gMLP "
    f"{gmlp_accuracy_over_majority:+.3f}, aMLP {amlp_accuracy_over_majority:+.3f}"
)
print(
    f"Perplexity below unigram: gMLP {gmlp_perplexity_below_unigram:+.1f}, "
    f"aMLP {amlp_perplexity_below_unigram:+.1f}"
)
print(
    f"Accuracy over the majority class: sentences "
    f"{sentence_accuracy_over_majority:+.3f}, pairs {pair_accuracy_over_majority:+.3f}"
)
