"""Pictures of what gMLP and MLP-Mixer models learn, and the measures
behind them. Needs matplotlib (the `apps` extra)."""

from keras_gmlp.visualization.spatial_weights import plot_spatial_weights
from keras_gmlp.visualization.text_filters import plot_text_spatial_filters
from keras_gmlp.visualization.text_filters import toeplitz_score
from keras_gmlp.visualization.text_filters import toeplitz_scores
from keras_gmlp.visualization.token_mixing import plot_token_mixing_units

__all__ = [
    "plot_spatial_weights",
    "plot_text_spatial_filters",
    "plot_token_mixing_units",
    "toeplitz_score",
    "toeplitz_scores",
]
