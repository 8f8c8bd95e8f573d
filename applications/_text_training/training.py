"""Training and reporting shared by the text programs: the schedule in
steps, the warm-up-cosine AdamW fit of a keras-hub task on a streamed,
checkpointed input, its throughput, and the summary of a language model's
run."""

import sys

import keras
from _shared.callbacks import fit_resumably
from _shared.distribute import evaluation_data
from _shared.progress import TrainingProgress
from _shared.progress import tensorboard_writer
from _shared.report import write_summary

from _text_training.flags import check_step_periods
from keras_gmlp.utils._checked_steps import CheckedSteps


def default_eval_every(steps):
    """The largest divisor of `steps` up to a tenth of them (at least 1):
    about ten evaluations, each at a checkpoint."""
    limit = max(1, steps // 10)
    return max(d for d in range(1, limit + 1) if steps % d == 0)


def resolve_steps(parser, args, steps_per_epoch):
    """Fills in --steps (from --epochs and `steps_per_epoch` when not
    given), --eval-every, --save-every and --warmup-steps, and checks that
    the checkpoint periods divide them; a mismatch is a flag error."""
    if args.steps is None:
        args.steps = args.epochs * steps_per_epoch
        args.eval_every = args.eval_every or steps_per_epoch
    args.eval_every = args.eval_every or default_eval_every(args.steps)
    args.save_every = args.save_every or args.eval_every
    if args.warmup_steps is None:
        args.warmup_steps = max(1, args.steps // 10)
    check_step_periods(parser, args)


def warmup_cosine_adamw(learning_rate, weight_decay, total_steps, warmup_steps):
    """AdamW, clipped to norm 1, whose learning rate rises linearly over
    `warmup_steps` and then follows a cosine to 0 at `total_steps`."""
    warmup_steps = max(1, warmup_steps)
    schedule = keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0,
        decay_steps=max(1, total_steps - warmup_steps),
        warmup_target=learning_rate,
        warmup_steps=warmup_steps,
    )
    return keras.optimizers.AdamW(
        learning_rate=schedule, weight_decay=weight_decay, clipnorm=1.0
    )


def stream_places(args):
    """(the input shards this process reads, the folder of its stream's
    states): process p of N reads input shards p, p + N, ..., each giving
    its part of the global batch, so the global batches do not depend on
    N; the states go to `<output-dir>/stream/` (a folder per process)."""
    import pathlib

    owned = range(args.process_id, args.input_shards, args.num_processes)
    snapshots = pathlib.Path(args.output_dir) / "stream"
    if args.num_processes > 1:
        snapshots /= f"process-{args.process_id}"
    return owned, snapshots


def training_stream(args, documents, prepare, finish=None):
    """The train batches of `documents` (a tf.data dataset of texts) as a
    BatchStream: shuffled with --shuffle-buffer from --seed, turned into
    examples by `prepare`, batched, `finish`ed per step and shard. The
    documents are dealt round-robin into --input-shards shards, read as
    `stream_places` says."""
    import tensorflow as tf
    from _text_input.stream import BatchStream
    from _text_input.stream import train_batches

    shards = args.input_shards
    owned, snapshots = stream_places(args)
    buffers = (args.shuffle_buffer, args.shuffle_buffer)
    parts = tuple(
        train_batches(
            documents.shard(shards, shard),
            prepare,
            args.batch_size // shards,
            args.seed + shard,
            buffers,
        )
        for shard in owned
    )
    return BatchStream(
        tf.data.Dataset.zip(parts), args.save_every, snapshots, finish, owned
    )


def language_model_stream(args, train, tokenizer, length, finish):
    """The train batches of windows of `length` ids, `finish`ed per step
    and shard: of a shard set's train part (a `ShardSet`, read without
    TensorFlow) or of a `DocumentSource`'s documents tokenized in tf.data
    (`training_stream`)."""
    from _token_shards.shard_set import ShardSet
    from _token_shards.stream import ShardBatchStream

    if not isinstance(train, ShardSet):
        from _text_input.windows import token_windows

        def prepare(documents):
            return token_windows(documents, tokenizer, length)

        return training_stream(args, train.dataset(), prepare, finish)
    owned, snapshots = stream_places(args)
    return ShardBatchStream(
        train,
        length,
        tokenizer.token_to_id("[CLS]"),
        args.batch_size,
        args.input_shards,
        args.seed,
        period=args.save_every,
        snapshots=snapshots,
        finish=finish,
        shards=owned,
    )


class StepTrainer(CheckedSteps, keras.Model):
    """A functional model whose `compile(jit_compile="auto")` takes the
    library's compiled steps on PyTorch with CUDA, as its models do
    (`keras_gmlp.utils._checked_steps.CheckedSteps`)."""


def compiled_trainer(task, args, compile_args):
    """A functional model over the keras-hub `task`'s layers, compiled with
    `compile_args` (loss and metrics) and `warmup_cosine_adamw`: keras-hub's
    Task.fit turns its inputs into tf.data; this trains on the stream's
    batches as they are."""
    trainer = StepTrainer(task.input, task.output, name=f"{task.name}_trainer")
    trainer.compile(
        optimizer=warmup_cosine_adamw(
            args.learning_rate, args.weight_decay, args.steps, args.warmup_steps
        ),
        **compile_args,
    )
    return trainer


def fit_task(
    task,
    stream,
    validation,
    args,
    run,
    compile_args,
    monitor,
    mode="min",
    ignored_label=None,
):
    """Trains the keras-hub `task` for --steps on the `stream`'s batches,
    resumably (`run` is the output directory's RunState): a checkpoint every
    --save-every steps, a validation score every --eval-every, keeping its
    best preset (by `monitor` on the `validation` data) and its final one in
    --output-dir. Returns (trainer, history), the best weights loaded: the
    trainer is a functional model over the task's layers, compiled with
    `compile_args` (loss and metrics) and `warmup_cosine_adamw`.
    `ignored_label` is the label the loss skips, if any (see
    `distribute.evaluation_data`)."""
    trainer = compiled_trainer(task, args, compile_args)
    tokens = args.batch_size * getattr(args, "sequence_length", 0)
    progress = TrainingProgress(
        stream,
        tokens,
        args.steps,
        args.log_every_steps,
        args.log_every_s,
        run.started,
        write_lines=not sys.stdout.isatty(),
        scalars=tensorboard_writer(run.output_dir / "tensorboard"),
    )
    history = fit_resumably(
        trainer,
        run,
        monitor=monitor,
        mode=mode,
        save=task.save_to_preset,
        names=("best_preset", "final_preset"),
        patience=args.patience,
        stream=stream,
        steps_per_epoch=args.save_every,
        epochs=args.steps // args.save_every,
        validation_data=evaluation_data(*validation, ignored_label),
        validation_freq=args.eval_every // args.save_every,
        callbacks=[progress],
        # The stream is shuffled already, from --seed.
        shuffle=False,
        # A progress bar on a terminal; in a log file, `progress`'s lines
        # (Keras' own, one per epoch, would make every step wait for the
        # last: its logger is not `async_safe`).
        verbose=1 if sys.stdout.isatty() else 0,
    )
    return trainer, history


def fit_language_model(task, stream, validation, args, run, metrics, monitor):
    """`fit_task` of a language model: cross-entropy on logits that skips
    label 0, `metrics`, and the best preset by `monitor` (lowest). Returns
    (trainer, history, initial_scores), the last the Toeplitz scores of the
    backbone's spatial filters before training."""
    from keras_gmlp.visualization import toeplitz_scores

    # Scored before training; a resumed run rebuilds the same seeded start.
    initial_scores = toeplitz_scores(task.backbone)
    compile_args = language_model_compile_args(metrics)
    trainer, history = fit_task(
        task, stream, validation, args, run, compile_args, monitor, ignored_label=0
    )
    return trainer, history, initial_scores


def language_model_compile_args(metrics):
    """A language model's loss, cross-entropy on logits that skips label 0,
    and `metrics`."""
    return {
        # Label 0 is [PAD]: the positions after a document's end, or the
        # mask slots a short window leaves unused.
        "loss": keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=0
        ),
        "metrics": metrics,
    }


def score_heldout(trainer, heldout):
    """The chosen weights' scores ({metric: value}) on `heldout` (inputs,
    labels; label 0 weighs nothing), and a copy of `trainer` on this
    process's devices for what follows (predictions, plots)."""
    from _shared.distribute import local_copy

    x, y, weights = evaluation_data(*heldout, ignored_label=0)
    scores = trainer.evaluate(
        x, y, sample_weight=weights, batch_size=256, verbose=0, return_dict=True
    )
    return scores, local_copy(trainer)


def reduced_predictions(model, x, reduce, batch_size=128):
    """`reduce(logits, rows)` of each batch of `model`'s predictions on `x`
    (an array or a dict of arrays; `rows` the batch's slice of them),
    concatenated: the logits of a whole held-out set (windows x positions x
    vocabulary, gigabytes at the paper's sizes) are never held at once."""
    import numpy as np

    count = len(keras.tree.flatten(x)[0])
    results = []
    for start in range(0, count, batch_size):
        rows = slice(start, start + batch_size)
        batch = keras.tree.map_structure(lambda a, rows=rows: a[rows], x)
        # `predict`, not `predict_on_batch`: under a tf.distribute strategy
        # it splits the batch across the replicas.
        logits = model.predict(batch, batch_size=batch_size, verbose=0)
        results.append(reduce(logits, rows))
    return np.concatenate(results)


def next_token_losses(model, x, y):
    """The cross-entropy of each label of `y` (windows x positions) under
    `model`'s logits on `x`, in float64, batch by batch."""
    import numpy as np

    def losses(logits, rows):
        logits = logits.astype("float64")
        logits -= logits.max(axis=-1, keepdims=True)
        log_probs = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
        return -np.take_along_axis(log_probs, y[rows][..., None], axis=-1)[..., 0]

    return reduced_predictions(model, x, losses)


def throughput(history):
    """The median tokens per second and input share over the checkpoint
    periods of `history` (None where no period was timed)."""
    import statistics

    facts = {}
    for name in ("tokens_per_second", "input_share"):
        values = history.metric(name)
        facts[name] = statistics.median(values) if values else None
    return facts


def training_facts(args, history):
    """What summary.json says of training: periods, steps, throughput and
    the seconds from the program's start to its first step (of its last
    start, where a run was resumed)."""
    first_steps = history.metric("seconds_to_first_step")
    return {
        "epochs_completed": len(history.rows),
        "steps_completed": len(history.rows) * args.save_every,
        "steps": args.steps,
        "throughput": throughput(history),
        "seconds_to_first_step": first_steps[-1] if first_steps else None,
    }


def write_language_model_summary(args, started, task, history, scores, corpus, **extra):
    """Writes summary.json of a language model's run: `scores` first, then
    the model's size and vocabulary, the corpus, the presets, the training
    completed and its throughput, and `extra`. Returns the summary."""
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
        **training_facts(args, history),
        **extra,
    )


def spatial_filter_report(task, initial_scores, path):
    """Draws the backbone's spatial filters (rows of each layer's W against
    token offset) to `path` and returns the per-layer Toeplitz scores, at
    initialisation (`initial_scores`) and of the trained (chosen) weights,
    for summary.json."""
    import matplotlib

    matplotlib.use("Agg")
    from _shared.report import save_figure

    from keras_gmlp.visualization import plot_text_spatial_filters
    from keras_gmlp.visualization import toeplitz_scores

    length = task.backbone.max_sequence_length
    figure = plot_text_spatial_filters(
        task.backbone, tokens=sorted({length // 4, length // 2, length - 1})
    )
    figure.suptitle("spatial filters W[i, :] by offset, trained", fontsize=8)
    save_figure(figure, path)
    return {"initial": initial_scores, "trained": toeplitz_scores(task.backbone)}
