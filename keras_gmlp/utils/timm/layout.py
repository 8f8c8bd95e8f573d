"""How each kind of timm tensor maps to a Keras variable.

A model's conversion is a list of `(timm key, Keras variable, kind)`
entries; the kind says how the tensor goes from timm's layout to Keras' and
back, and which of its timm axes index tokens (those are resampled when the
patch grid changes).
"""

# kind: (timm -> Keras, Keras -> timm, ((token axis, summed over), ...)).
KINDS = {
    "vector": (lambda w: w, lambda w: w, ()),
    "linear": (lambda w: w.T, lambda w: w.T, ()),
    "conv": (
        lambda w: w.transpose(2, 3, 1, 0),  # (O, I, H, W) -> (H, W, I, O)
        lambda w: w.transpose(3, 2, 0, 1),
        (),
    ),
    # timm's SGU has one head; the Keras layer stacks heads on axis 0.
    "sgu_kernel": (lambda w: w[None], lambda w: w[0], ((0, False), (1, True))),
    "sgu_bias": (lambda w: w[None], lambda w: w[0], ((0, False),)),
    "token_in_kernel": (lambda w: w.T, lambda w: w.T, ((1, True),)),
    "token_out_kernel": (lambda w: w.T, lambda w: w.T, ((0, False),)),
    "token_out_bias": (lambda w: w, lambda w: w, ((0, False),)),
}


def dense_entries(prefix, layer, kernel_kind="linear", bias_kind="vector"):
    """Entries of a timm `Linear` (or SGU projection) named `prefix`."""
    return [
        (f"{prefix}.weight", layer.kernel, kernel_kind),
        (f"{prefix}.bias", layer.bias, bias_kind),
    ]


def norm_entries(prefix, layer):
    """Entries of a timm `LayerNorm` named `prefix`."""
    return [
        (f"{prefix}.weight", layer.gamma, "vector"),
        (f"{prefix}.bias", layer.beta, "vector"),
    ]
