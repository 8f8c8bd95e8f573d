"""The causal-LM program's report: the chosen weights' test perplexity, the
training curves, the perplexity by position and the summary."""


def evaluate_and_plot(args, trainer, history, heldout):
    """Test perplexity of the chosen weights, the training curves and the
    perplexity by position; returns the perplexity."""
    from _shared.report import plot_history
    from _text_training.training import score_heldout

    heldout_x, heldout_y = heldout
    scores, trainer = score_heldout(trainer, heldout)
    plot_history(
        history,
        args.output_dir / "training_curves.png",
        f"causal {args.model} on the {args.corpus} corpus",
    )
    plot_perplexity_by_position(
        trainer, heldout_x, heldout_y, args.output_dir / "perplexity_by_position.png"
    )
    return float(scores["causal_lm_perplexity"])


def plot_perplexity_by_position(trainer, x, y, path):
    """Held-out perplexity at each position of a window: the more context
    a causal model has, the better it should predict the next token."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from _shared.report import plain_log_axis
    from _shared.report import save_figure
    from _text_training.training import next_token_losses

    losses = next_token_losses(trainer, x, y)
    real = y > 0
    counts = real.sum(axis=0)
    positions = np.flatnonzero(counts)
    perplexity = np.exp((losses * real).sum(axis=0)[positions] / counts[positions])
    figure, axis = plt.subplots(figsize=(6, 3.5))
    axis.plot(positions + 1, perplexity, marker=".")
    plain_log_axis(axis)
    axis.set_xlabel("position in the window (tokens of context)")
    axis.set_ylabel("held-out perplexity")
    axis.set_title("Next-token perplexity by position")
    axis.grid(alpha=0.3, which="both")
    figure.tight_layout()
    save_figure(figure, path)


def write_run_summary(args, started, causal_lm, history, scores, corpus, extra):
    """summary.json: the test `scores`, the corpus, the run's training facts,
    the spatial filters' Toeplitz scores (drawn to spatial_filters.png) and
    `extra` (the generations); returns the summary."""
    from _text_training.training import spatial_filter_report
    from _text_training.training import write_language_model_summary

    return write_language_model_summary(
        args,
        started,
        causal_lm,
        history,
        scores,
        corpus,
        toeplitz_scores=spatial_filter_report(
            causal_lm, extra["initial_scores"], args.output_dir / "spatial_filters.png"
        ),
        generations=extra["generations"],
    )
