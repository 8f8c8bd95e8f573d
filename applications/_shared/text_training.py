"""Training and reporting shared by the text programs: a windowed corpus,
the warm-up-cosine AdamW fit of a keras-hub task on epoch-seeded batches,
and the summary of a language model's run."""

import keras

from keras_gmlp.utils import text_corpus

from .callbacks import resumable_callbacks
from .callbacks import save_model
from .report import fit_verbose
from .report import write_summary
from .text_data import tokenize
from .text_data import train_tokenizer


def split_documents(documents, heldout_fraction, limit=None):
    """({name: text} to train on, {name: text} held out), split by
    document; only the first `limit` names (sorted) when given."""
    if limit is not None:
        names = sorted(documents)[:limit]
        documents = {name: documents[name] for name in names}
    train, heldout = text_corpus.split_names(documents, heldout_fraction)
    return (
        {name: documents[name] for name in train},
        {name: documents[name] for name in heldout},
    )


def windowed_corpus(train_documents, heldout_documents, vocabulary_size, length):
    """A WordPiece tokenizer trained on the train documents, and the train
    and held-out documents cut into `[CLS] ... [SEP]` windows of `length`
    ids. Exits with a message when either side gives no window."""
    tokenizer = train_tokenizer(list(train_documents.values()), vocabulary_size)
    start_id, end_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")

    def windows(documents):
        tokens = tokenize(tokenizer, list(documents.values()))
        return text_corpus.pack_windows(tokens, length, start_id, end_id)

    train_ids, heldout_ids = windows(train_documents), windows(heldout_documents)
    if len(train_ids) == 0 or len(heldout_ids) == 0:
        raise SystemExit(
            "The corpus gave no train or no held-out windows: use more text."
        )
    return tokenizer, train_ids, heldout_ids


def corpus_facts(
    name, train_documents, heldout_documents, train_windows, heldout_windows
):
    """The summary's description of the corpus."""
    return {
        "name": name,
        "train_documents": len(train_documents),
        "heldout_documents": len(heldout_documents),
        "train_windows": int(train_windows),
        "heldout_windows": int(heldout_windows),
    }


def print_corpus(label, corpus, sequence_length, vocabulary_size):
    print(
        f"{label}: {corpus['train_documents']} train and "
        f"{corpus['heldout_documents']} held-out documents, "
        f"{corpus['train_windows']} and {corpus['heldout_windows']} windows of "
        f"{sequence_length} tokens; vocabulary {vocabulary_size} word pieces.",
        flush=True,
    )


def warmup_cosine_adamw(learning_rate, weight_decay, total_steps):
    """AdamW, clipped to norm 1, whose learning rate rises linearly over the
    first tenth of training and then follows a cosine to 0."""
    warmup_steps = max(1, total_steps // 10)
    schedule = keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0,
        decay_steps=max(1, total_steps - warmup_steps),
        warmup_target=learning_rate,
        warmup_steps=warmup_steps,
    )
    return keras.optimizers.AdamW(
        learning_rate=schedule, weight_decay=weight_decay, clipnorm=1.0
    )


def fit_task(task, batches, validation, args, compile_args, monitor, mode="min"):
    """Trains the keras-hub `task` on the epoch-seeded `batches`, resumably,
    keeping its best preset (by `monitor`) and its final one in
    --output-dir. Returns (trainer, history): the trainer is a functional
    model over the task's layers, compiled with `compile_args` (loss and
    metrics) and `warmup_cosine_adamw`."""
    # keras-hub's Task.fit turns its inputs into tf.data; a plain functional
    # model over the same layers trains on the epoch-seeded batches as they are.
    trainer = keras.Model(task.input, task.output, name=f"{task.name}_trainer")
    trainer.compile(
        optimizer=warmup_cosine_adamw(
            args.learning_rate, args.weight_decay, args.epochs * len(batches)
        ),
        **compile_args,
    )
    callbacks, history = resumable_callbacks(
        args.output_dir,
        monitor=monitor,
        mode=mode,
        save=task.save_to_preset,
        best_name="best_preset",
    )
    trainer.fit(
        batches,
        epochs=args.epochs,
        validation_data=validation,
        callbacks=callbacks + [batches.epoch_callback()],
        # The batches are shuffled by (seed, epoch); Keras' own shuffle of
        # their order draws from the global random state.
        shuffle=False,
        verbose=fit_verbose(),
    )
    save_model(task, args.output_dir / "final_preset", task.save_to_preset)
    return trainer, history


def fit_language_model(task, batches, validation, args, metrics, monitor):
    """`fit_task` of a language model: cross-entropy on logits that skips
    label 0, `metrics`, and the best preset by `monitor` (lowest). Returns
    (trainer, history, initial_scores), the last the Toeplitz scores of the
    backbone's spatial filters before training."""
    from keras_gmlp.visualization import toeplitz_scores

    compile_args = {
        # Label 0 is [PAD]: the positions after a document's end, or the
        # mask slots a short window leaves unused.
        "loss": keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=0
        ),
        "metrics": metrics,
    }
    # Scored before training; a resumed run rebuilds the same seeded start.
    initial_scores = toeplitz_scores(task.backbone)
    trainer, history = fit_task(task, batches, validation, args, compile_args, monitor)
    return trainer, history, initial_scores


def write_language_model_summary(args, started, task, history, scores, corpus, **extra):
    """Writes summary.json of a language model's run: `scores` first, then
    the model's size and vocabulary, the corpus, the presets, the epochs
    completed, and `extra`. Returns the summary."""
    output_dir = args.output_dir
    return write_summary(
        output_dir / "summary.json",
        args,
        started,
        **scores,
        parameters=int(task.count_params()),
        non_embedding_parameters=int(task.backbone.count_non_embedding_params()),
        vocabulary_size=task.backbone.vocabulary_size,
        corpus=corpus,
        best_preset=str(output_dir / "best_preset"),
        final_preset=str(output_dir / "final_preset"),
        epochs_completed=len(history.rows),
        **extra,
    )


def spatial_filter_report(task, initial_scores, path):
    """Draws the backbone's spatial filters (rows of each layer's W against
    token offset) to `path` and returns the per-layer Toeplitz scores, at
    initialisation (`initial_scores`) and now, for summary.json."""
    import matplotlib

    matplotlib.use("Agg")
    from keras_gmlp.visualization import plot_text_spatial_filters
    from keras_gmlp.visualization import toeplitz_scores

    from .report import save_figure

    length = task.backbone.max_sequence_length
    figure = plot_text_spatial_filters(
        task.backbone, tokens=sorted({length // 4, length // 2, length - 1})
    )
    figure.suptitle("spatial filters W[i, :] by offset, after training", fontsize=8)
    save_figure(figure, path)
    return {"initial": initial_scores, "final": toeplitz_scores(task.backbone)}
