"""What the image program reports: the test scores, the confusion matrix,
the learned spatial weights, the training curves and summary.json; with
--quantize, the quantized copy's test scores and best_<mode>.keras."""


def plot_confusion_matrix(labels, predictions, classes, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from _shared.report import save_figure

    matrix = np.zeros((classes, classes), dtype=np.int64)
    np.add.at(matrix, (labels, predictions), 1)
    side = min(12.0, 3.0 + 0.45 * classes)
    figure, axis = plt.subplots(figsize=(side + 1.0, side))
    image = axis.imshow(matrix, cmap="Blues")
    figure.colorbar(image, ax=axis, label="images")
    if classes <= 20:
        limit = matrix.max() / 2 if matrix.size else 0
        for (row, column), count in np.ndenumerate(matrix):
            axis.text(
                column,
                row,
                str(count),
                ha="center",
                va="center",
                fontsize=8,
                color="white" if count > limit else "black",
            )
        axis.set_xticks(range(classes))
        axis.set_yticks(range(classes))
    axis.set_xlabel("predicted class")
    axis.set_ylabel("true class")
    axis.set_title(title)
    figure.tight_layout()
    save_figure(figure, path)


def plot_model_weights(model, path, mixer):
    """What the token mixing learned: the SGUs' spatial weights (gMLP) or
    the first token-mixing units (Mixer), on the patch grid."""
    import matplotlib

    matplotlib.use("Agg")
    from _shared.files import atomic_path

    from keras_gmlp.visualization import plot_spatial_weights
    from keras_gmlp.visualization import plot_token_mixing_units

    if mixer:
        figure = plot_token_mixing_units(model)  # the first block
        figure.suptitle("first token-mixing units on the patch grid", fontsize=8)
    else:
        figure = plot_spatial_weights(model)
        figure.suptitle("spatial weights W[token, :] on the patch grid", fontsize=8)
    with atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=150)


def print_start(args, model, start, data, batches, distribution):
    """One line on what is about to be trained, on what."""
    import keras
    from _shared.report import count_trainable

    parts = ", ".join(
        f"{batches[f'{part}_size']} {part} ({data[f'{part}_split']})"
        for part in ("train", "validation", "test")
    )
    lora = f", LoRA rank {args.lora_rank}" if args.lora_rank else ""
    print(
        f"{args.model}: {model.count_params():,} parameters, "
        f"{count_trainable(model):,} trainable ({start}{lora}); "
        f"{args.dataset} images: {parts}; backend {keras.backend.backend()}"
        + (f"; distributed: {distribution}" if distribution else ""),
        flush=True,
    )


def evaluate(model, args, batches):
    """(loss, accuracy, true labels, predicted labels) on the test split."""
    import numpy as np
    from _shared.batches import in_order
    from _shared.distribute import local_copy

    test = batches["test"]
    if batches["in_memory"]:
        test_batches = in_order(*test, args.batch_size)
        loss, accuracy = model.evaluate(test_batches, verbose=0)
        logits = local_copy(model).predict(test_batches, verbose=0)
        true_labels = batches["test_labels"]
    else:
        loss, accuracy = model.evaluate(test, verbose=0)
        logits = local_copy(model).predict(test, verbose=0)
        true_labels = np.concatenate(
            [np.argmax(y, -1) for _, y in test.as_numpy_iterator()]
        )
    return loss, accuracy, true_labels, np.argmax(logits, axis=-1)


def quantized_scores(args, model, batches):
    """The --quantize copy of the chosen model (`_shared.serving`; `model`
    stays float), scored on the test split by `evaluate` as the float model
    is, and saved as best_<mode>.keras: {"test_accuracy_<mode>": ...,
    "test_loss_<mode>": ...}."""
    import pathlib

    import keras
    from _shared.callbacks import save_model
    from _shared.serving import quantized_copy

    mode = args.quantize
    quantized = quantized_copy(model, mode)
    # Only the loss and metric of `training.compile_model`: no optimizer.
    quantized.compile(
        loss=model.loss,
        metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")],
    )
    loss, accuracy, _, _ = evaluate(quantized, args, batches)
    save_model(quantized, pathlib.Path(args.output_dir) / f"best_{mode}.keras")
    return {f"test_accuracy_{mode}": float(accuracy), f"test_loss_{mode}": float(loss)}


def report(args, model, run, history, started):
    """Evaluates the chosen model (best on the validation split) once on
    the test split (and its --quantize copy), draws the pictures and writes
    summary.json. `run` holds what the summary tells beyond the model and
    history: data, batches, start (how the weights began) and
    distribution."""
    import pathlib
    import time

    from _shared.report import plot_history

    output_dir = pathlib.Path(args.output_dir)
    data = run["data"]
    loss, accuracy, true_labels, predictions = evaluate(model, args, run["batches"])
    title = f"{args.model} on {args.dataset}"
    plot_history(history, output_dir / "training_curves.png", title)
    plot_confusion_matrix(
        true_labels,
        predictions,
        data["classes"],
        output_dir / "confusion_matrix.png",
        f"{title} (test: {data['test_split']}): accuracy {accuracy:.3f}",
    )
    mixer = args.model.startswith("mixer")
    picture = "token_mixing_units.png" if mixer else "spatial_weights.png"
    plot_model_weights(model, output_dir / picture, mixer)
    scores = quantized_scores(args, model, run["batches"]) if args.quantize else {}
    write_run_summary(args, model, run, history, started, loss, accuracy, scores)
    print(
        f"test ({data['test_split']}): loss {loss:.4f}, accuracy {accuracy:.4f} "
        f"({time.time() - started:.0f} s). Outputs in {output_dir}/",
        flush=True,
    )
    if args.quantize:
        print(
            f"Test accuracy {scores[f'test_accuracy_{args.quantize}']:.4f} with "
            f"{args.quantize} weights (float32 {accuracy:.4f}).",
            flush=True,
        )


def write_run_summary(args, model, run, history, started, loss, accuracy, scores):
    """summary.json; `scores` are the --quantize copy's (or empty)."""
    import pathlib

    from _shared.callbacks import best_epoch
    from _shared.report import count_trainable
    from _shared.report import write_summary

    data, batches = run["data"], run["batches"]
    best = best_epoch(history.rows, "val_accuracy", "max")
    write_summary(
        pathlib.Path(args.output_dir) / "summary.json",
        args,
        started,
        model=args.model,
        parameters=model.count_params(),
        trainable_parameters=count_trainable(model),
        start_weights=run["start"],
        dataset=args.dataset,
        splits=split_facts(data, batches, "images"),
        classes=int(data["classes"]),
        epochs_completed=len(history.rows),
        test_loss=float(loss),
        test_accuracy=float(accuracy),
        **scores,
        best_val_accuracy=None if best is None else history.rows[best]["val_accuracy"],
        best_epoch=None if best is None else best + 1,
        distribution=run["distribution"],
        mixed_precision=args.mixed_precision,
    )


def split_facts(data, batches, unit):
    """Which split is which, for summary.json: the train split fits the
    weights, the validation split chooses the epoch (and stops early), the
    test split scores the chosen weights once."""
    return {
        part: {"split": data[f"{part}_split"], unit: int(batches[f"{part}_size"])}
        for part in ("train", "validation", "test")
    }
