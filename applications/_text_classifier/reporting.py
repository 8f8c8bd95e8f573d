"""The fine-tuning program's report: the chosen weights scored once on the
test split, the confusion matrix and the summary."""

from _text_input.sources import PARTS


def test_and_plot(args, trainer, test, class_names):
    """Scores the chosen weights once on the packed test split and draws its
    confusion matrix; returns the test accuracy."""
    import numpy as np

    test_x, test_y = test
    logits = trainer.predict(test_x, batch_size=256, verbose=0)
    predictions = np.argmax(logits, axis=-1)
    plot_confusion_matrix(
        test_y, predictions, class_names, args.output_dir / "confusion_matrix.png"
    )
    return float(np.mean(predictions == test_y))


def plot_confusion_matrix(labels, predictions, class_names, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from _shared.report import save_figure

    k = len(class_names)
    matrix = np.zeros((k, k), dtype=int)
    np.add.at(matrix, (labels, predictions), 1)
    figure, axis = plt.subplots(figsize=(1.2 * k + 3, 1.1 * k + 2.5))
    image = axis.imshow(matrix, cmap="Blues")
    figure.colorbar(image, ax=axis, label="examples")
    axis.set_xticks(range(k), class_names, rotation=45, ha="right")
    axis.set_yticks(range(k), class_names)
    axis.set_xlabel("predicted")
    axis.set_ylabel("true")
    for i in range(k):
        for j in range(k):
            axis.text(
                j,
                i,
                matrix[i, j],
                ha="center",
                va="center",
                color="white" if matrix[i, j] > matrix.max() / 2 else "black",
            )
    axis.set_title("Confusion matrix (test)")
    figure.tight_layout()
    save_figure(figure, path)


def write_run_summary(args, started, run_facts, history, accuracy):
    """summary.json: the task, the test accuracy beside the majority-class
    baseline, which split is which, the classifier's parameters and the
    run's training facts; returns the summary."""
    from _shared.report import count_trainable
    from _shared.report import write_summary
    from _text_training.training import training_facts

    task, classifier, heldout = run_facts
    examples = {"train": int(task["counts"].sum())}
    examples.update({part: int(len(heldout[part][1])) for part in PARTS[1:]})
    return write_summary(
        args.output_dir / "summary.json",
        args,
        started,
        task=task["name"],
        accuracy=accuracy,
        majority_class_accuracy=task["majority_accuracy"],
        majority_class=task["classes"][task["majority"]],
        classes=task["classes"],
        splits={
            part: {"split": task["names"][part], "examples": examples[part]}
            for part in PARTS
        },
        parameters=int(classifier.count_params()),
        trainable_parameters=count_trainable(classifier),
        best_preset=str(args.output_dir / "best_preset"),
        final_preset=str(args.output_dir / "final_preset"),
        **training_facts(args, history),
    )


def print_outcome(args, task, summary, accuracy):
    verdict = "above" if accuracy > task["majority_accuracy"] else "NOT above"
    print(
        f"Test ({task['names']['test']}) accuracy {accuracy:.4f} vs majority-class "
        f"baseline {task['majority_accuracy']:.4f} ({verdict} it). Presets and plots "
        f"in {args.output_dir} ({summary['seconds']:.0f} s)."
    )
