"""Checks on the module-level results of guides 4, 5 and 7 in fast mode.

Merged into tests/test_guides.py: {guide file: {variable: predicate}}. The
guides compute each trained result's margin over a baseline they measure
themselves (majority class, most frequent token, unigram model, uncached
decoding) or its distance to a reference, so the predicates need only the
one value.
"""

EXPECTATIONS_B = {
    "masked_language_modeling.py": {
        # Masked-token accuracy above always guessing the most frequent token.
        "gmlp_accuracy_over_majority": lambda v: v > 0.01,
        "amlp_accuracy_over_majority": lambda v: v > 0.01,
        # Held-out perplexity below the context-free unigram model's.
        "gmlp_perplexity_below_unigram": lambda v: v > 0,
        "amlp_perplexity_below_unigram": lambda v: v > 0,
        # Fine-tuned classifiers above their majority class.
        "sentence_accuracy_over_majority": lambda v: v > 0.1,
        "pair_accuracy_over_majority": lambda v: v > 0.05,
    },
    "text_generation.py": {
        # Held-out next-token perplexity below the context-free unigram's.
        "perplexity_below_unigram": lambda v: v > 0,
        # Cached and uncached greedy decoding give the same tokens (speed is
        # printed, never asserted).
        "cached_matches_uncached": lambda v: v is True,
    },
    "export_and_serving.py": {
        # The .keras file loaded on another backend gives the same outputs.
        "cross_backend_max_abs_diff": lambda v: v < 1e-4,
        # Every exported artifact, run by its own runtime, matches Keras.
        "export_max_abs_diff": lambda v: v < 1e-4,
        "num_export_formats": lambda v: v == 3,
    },
}
