"""gMLP, aMLP and Mixer written in numpy from the papers' formulas.

An independent reference for the layer tests: float64, loops where they
make the formula plain, no code shared with keras_gmlp.
"""

import math

import numpy as np

_erf = np.vectorize(math.erf)


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def spatial_gating_unit(
    z,
    kernel,
    bias,
    gamma,
    beta,
    eps=1e-5,
    mask=None,
    causal=False,
    attention_output=None,
    gating="split",
):
    """z: (B, m, 2c); kernel: (h, n, n); bias: (h, n); mask: (B, m) bool.

    `gating` is one of the paper's forms (Table 3), with f(Z) = W norm(Z) + b:
    split Z1 * f(Z2), multiplicative Z * f(Z), additive Z + f(Z), linear f(Z).
    """
    batch, length, channels = z.shape
    if gating == "split":
        u, v = z[..., : channels // 2], z[..., channels // 2 :]
    else:
        u, v = z, z
    v = layer_norm(v, gamma, beta, eps)
    heads = kernel.shape[0]
    head_dim = v.shape[-1] // heads
    out = np.zeros_like(v)
    for b in range(batch):
        for h in range(heads):
            cols = slice(h * head_dim, (h + 1) * head_dim)
            for i in range(length):
                acc = np.full(head_dim, bias[h, i], dtype=np.float64)
                for j in range(length):
                    if causal and j > i:
                        continue
                    if mask is not None and not mask[b, j]:
                        continue
                    acc += kernel[h, i, j] * v[b, j, cols]
                out[b, i, cols] = acc
    if attention_output is not None:
        out = out + attention_output
    if gating == "additive":
        return u + out
    if gating == "linear":
        return out
    return u * out


def tiny_attention(x, qkv_kernel, out_kernel, out_bias, mask=None, causal=False):
    """x: (B, m, d); qkv_kernel: (d, 3a); out_kernel: (a, o)."""
    attention_dim = qkv_kernel.shape[1] // 3
    qkv = x @ qkv_kernel
    q = qkv[..., :attention_dim]
    k = qkv[..., attention_dim : 2 * attention_dim]
    v = qkv[..., 2 * attention_dim :]
    scores = q @ np.swapaxes(k, 1, 2) / math.sqrt(attention_dim)
    length = x.shape[1]
    allowed = np.ones(scores.shape, dtype=bool)
    if mask is not None:
        allowed &= mask[:, None, :].astype(bool)
    if causal:
        allowed &= np.tril(np.ones((length, length), dtype=bool))[None]
    scores = np.where(allowed, scores, -np.inf)
    scores = scores - scores.max(-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(-1, keepdims=True)
    return (weights @ v) @ out_kernel + out_bias


def gmlp_block(x, w, mask=None, causal=False, gating="split"):
    """w: dict of float64 arrays named as in the paper's pseudo-code."""
    shortcut = x
    x = layer_norm(x, w["norm_gamma"], w["norm_beta"], 1e-6)
    attention_output = None
    if "qkv_kernel" in w:
        attention_output = tiny_attention(
            x,
            w["qkv_kernel"],
            w["attn_out_kernel"],
            w["attn_out_bias"],
            mask=mask,
            causal=causal,
        )
    z = gelu(x @ w["U"] + w["U_bias"])
    z = spatial_gating_unit(
        z,
        w["W"],
        w["b"],
        w["sgu_gamma"],
        w["sgu_beta"],
        1e-5,
        mask=mask,
        causal=causal,
        attention_output=attention_output,
        gating=gating,
    )
    return shortcut + z @ w["V"] + w["V_bias"]


def mixer_block(x, w, mask=None):
    """mask: (B, n) bool; padded tokens enter the token-mixing MLP as 0."""
    y = layer_norm(x, w["norm1_gamma"], w["norm1_beta"], 1e-6)
    if mask is not None:
        y = np.where(mask[:, :, None], y, 0.0)
    y = np.swapaxes(y, 1, 2)
    y = gelu(y @ w["tok_fc1"] + w["tok_fc1_bias"]) @ w["tok_fc2"] + w["tok_fc2_bias"]
    x = x + np.swapaxes(y, 1, 2)
    y = layer_norm(x, w["norm2_gamma"], w["norm2_beta"], 1e-6)
    y = gelu(y @ w["ch_fc1"] + w["ch_fc1_bias"]) @ w["ch_fc2"] + w["ch_fc2_bias"]
    return x + y


def patch_embedding(images, kernel, bias, patch):
    """images: (B, H, W, C); kernel: (p, p, C, D). Row-major patch order."""
    batch, height, width, _ = images.shape
    tokens = []
    for r in range(height // patch):
        for c in range(width // patch):
            piece = images[:, r * patch : (r + 1) * patch, c * patch : (c + 1) * patch]
            tokens.append(np.einsum("bhwc,hwcd->bd", piece, kernel) + bias)
    return np.stack(tokens, axis=1)
