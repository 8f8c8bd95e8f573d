"""The masked-LM program's report: the chosen weights scored once on the
test windows, the training curves and the test accuracy by token
frequency."""


def test_and_plot(args, trainer, history, test, counts):
    """Scores the chosen weights once on the test documents, and draws the
    training curves and the test accuracy by token frequency; returns
    (accuracy, perplexity)."""
    from _shared.report import plot_history
    from _text_training.training import score_heldout

    test_x, test_y = test
    scores, trainer = score_heldout(trainer, test)
    plot_history(
        history,
        args.output_dir / "training_curves.png",
        f"{args.model} masked LM on {args.dataset or 'the Python reference'}",
    )
    plot_accuracy_by_frequency(
        trainer,
        test_x,
        test_y,
        counts,
        args.output_dir / "heldout_accuracy_by_frequency.png",
    )
    return float(scores["masked_lm_accuracy"]), float(scores["masked_lm_perplexity"])


def plot_accuracy_by_frequency(model, heldout_x, labels, counts, path):
    """Held-out masked-token accuracy for rare to frequent tokens: a
    masked LM first learns the frequent ones."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from _shared.report import save_figure
    from _text_training.training import reduced_predictions

    predicted = reduced_predictions(
        model, heldout_x, lambda logits, rows: np.argmax(logits, axis=-1)
    )
    real = labels > 0
    correct = (predicted == labels)[real]
    edges, bins = frequency_bins(counts[labels[real]])
    accuracy = [correct[bins == b].mean() for b in range(len(edges) - 1)]
    names = [
        f"{int(edges[b])}-{int(edges[b + 1])}\n({int((bins == b).sum())} tokens)"
        for b in range(len(edges) - 1)
    ]
    figure, axis = plt.subplots(figsize=(6, 3.5))
    axis.bar(names, accuracy, color="tab:blue")
    axis.set_xlabel("train occurrences of the masked token")
    axis.set_ylabel("held-out accuracy")
    axis.set_title("Masked-token accuracy by token frequency")
    axis.set_ylim(0, 1)
    axis.tick_params(axis="x", labelsize=7)
    figure.tight_layout()
    save_figure(figure, path)


def frequency_bins(frequency, num_bins=5, min_tokens=20):
    """Bins over token frequencies: quantile edges, then the smallest bin
    merged into its smaller neighbour until every bin holds `min_tokens`
    tokens, so no bar is empty or rests on a handful of tokens.

    Returns `(edges, bins)`: bin `b` is `[edges[b], edges[b + 1])` (the last
    one closed), and `bins` gives each token's bin."""
    import numpy as np

    edges = np.unique(np.quantile(frequency, np.linspace(0, 1, num_bins + 1)))
    while True:
        bins = np.clip(
            np.searchsorted(edges, frequency, side="right") - 1, 0, len(edges) - 2
        )
        sizes = np.bincount(bins, minlength=len(edges) - 1)
        smallest = int(np.argmin(sizes))
        if len(sizes) == 1 or sizes[smallest] >= min_tokens:
            return edges, bins
        if smallest == 0 or (
            smallest < len(sizes) - 1 and sizes[smallest + 1] < sizes[smallest - 1]
        ):
            edges = np.delete(edges, smallest + 1)  # merge with the next bin
        else:
            edges = np.delete(edges, smallest)  # merge with the previous bin


def write_run_summary(args, started, model, history, scores, corpus, initial_scores):
    """summary.json: the test `scores` ((accuracy, perplexity), with the
    unigram baseline and the masked tokens counted), the corpus, the run's
    training facts and the spatial filters' Toeplitz scores (drawn to
    spatial_filters.png); returns the summary."""
    from _text_training.training import spatial_filter_report
    from _text_training.training import write_language_model_summary

    accuracy, perplexity, unigram, masked_tokens = scores
    return write_language_model_summary(
        args,
        started,
        model,
        history,
        {
            "heldout_masked_token_accuracy": accuracy,
            "heldout_masked_token_perplexity": perplexity,
            "unigram_perplexity": unigram,
            "heldout_masked_tokens": masked_tokens,
        },
        corpus,
        toeplitz_scores=spatial_filter_report(
            model, initial_scores, args.output_dir / "spatial_filters.png"
        ),
    )


def print_outcome(args, summary, accuracy, perplexity, unigram):
    print(
        f"Test masked tokens ({summary['heldout_masked_tokens']}): accuracy "
        f"{accuracy:.4f}, perplexity {perplexity:.2f} (unigram baseline "
        f"{unigram:.2f}). Presets and plots in {args.output_dir} "
        f"({summary['seconds']:.0f} s)."
    )
