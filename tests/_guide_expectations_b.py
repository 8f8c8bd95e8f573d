"""Checks on the module-level results of guides 4, 5 and 7 in fast mode.

Merged into tests/test_guides.py: {guide file: {variable: predicate}}. Each
predicate compares a trained result with a baseline the guide computes
itself (chance, majority class, unigram model) or with a tolerance.
"""

EXPECTATIONS_B = {
    "masked_language_modeling.py": {
        # Masked-token accuracy beats always guessing the most frequent token.
        "gmlp_masked_accuracy": lambda v, g: v > g["majority_token_accuracy"],
        "amlp_masked_accuracy": lambda v, g: v > g["majority_token_accuracy"],
        # Held-out perplexity beats the context-free unigram model.
        "gmlp_perplexity": lambda v, g: v < g["unigram_perplexity"],
        "amlp_perplexity": lambda v, g: v < g["unigram_perplexity"],
        # Fine-tuned classifiers beat their majority class.
        "sentence_accuracy": lambda v, g: v > g["sentence_majority"] + 0.1,
        "pair_accuracy": lambda v, g: v > g["pair_majority"] + 0.05,
    },
}
