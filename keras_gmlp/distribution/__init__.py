"""Sharding rules for training gMLP, aMLP and MLP-Mixer on many devices.

`get_layout_map` returns a `keras.distribution.LayoutMap` for the image
models (`gMLP*`, `Mixer*`) and the text backbone (`gMLPBackbone` and the
tasks built on it); `ModelParallel` is `keras.distribution.ModelParallel`
that replicates an axis the mesh does not divide instead of failing.
Multi-host runs use the same code after `keras.distribution.initialize()`;
the sharding itself is done by the backend (GSPMD under JAX), not here.
This module imports only keras.

Layout (Megatron-style tensor parallelism along d_ffn, the widest axis):

- `expand` kernel `(d, d_ffn)` -> `(None, model)`, its bias -> `(model,)`:
  each device computes its slice of the d_ffn activations from the full
  (replicated) input, with no communication; GELU is element-wise.
- `output` kernel `(d_ffn / 2, d)` -> `(model, None)`, its bias replicated:
  each device multiplies its channel slice and one all-reduce of the
  `(batch, length, d)` partial sums per block finishes the projection, the
  one collective of a Megatron MLP.
- SGU kernel `W` `(heads, n, n)` and bias `(heads, n)`: replicated. The
  spatial projection mixes tokens, not channels, so with the gates sharded
  along channels every device projects its own channels with the full `W`
  and no communication. `W` is small (`n^2` per head, 1 MiB at n = 512)
  next to the `d * d_ffn` channel kernels it sits between.
- SGU LayerNorm gamma/beta `(d_ffn / 2,)` -> `(model,)`, matching the
  sharded gates. Normalising over a sharded channel axis costs an
  all-reduce of two scalars (mean, variance) per token.
- The split of the d_ffn activations into `u` (first half) and `v` (second
  half) does not line up with a contiguous sharding: with `m` shards, `u`
  lives on the first `m / 2` devices and `v` on the others, while the SGU's
  output `u * v'` must be spread over all `m` for the `output` projection.
  GSPMD inserts the resharding (a collective permute / all-to-all of about
  half of each device's `(batch, length, d_ffn / m)` slice), so the result
  is exact and costs one activation exchange per block on top of the
  all-reduce. Avoiding it would need the expand kernel's columns stored
  interleaved per shard (`[u_0, v_0, u_1, v_1, ...]`), which breaks the
  timm weight layout the converters rely on; we keep the layout.
- Tiny attention (aMLP): `qkv` replicated (a single small head,
  `(d, 3 * attention_dim)`); its `output` kernel `(attention_dim, d_ffn/2)`
  -> `(None, model)` and bias -> `(model,)`, so the attention's
  contribution arrives sharded like the gate it is added to.
- MLP-Mixer: `token_expand` / `channel_expand` kernels -> `(None, model)`,
  biases -> `(model,)`; `token_output` / `channel_output` kernels ->
  `(model, None)`: the same Megatron pair for both MLPs.
- Text embeddings `(vocabulary, d)` (token and segment) -> `(None, model)`,
  the hidden axis: BERT's vocabulary of 30,522 = 2 * 3 * 5087 is not
  divisible by any power of two above 2, so a vocabulary-sharded table
  would fall back to replication on common 4- or 8-way meshes. The tied
  MLM/LM output (`x @ E^T`) then ends in an all-reduce of the logits'
  partial sums.
- Everything else (stem, norms of the residual stream, heads) is small
  and replicated; the batch is split along `data_parallel_dim_name`.

Fallback: a `LayoutMap` lookup sees only a variable's path, not its shape,
so it cannot know whether a mesh axis divides the axis it shards. The check
happens where the variable is known, in `ModelParallel.get_variable_layout`:
a non-dividing axis is replaced by `None` (replicated) with a warning that
names the variable, the axis and the sizes. `keras.distribution.
ModelParallel` has no such hook; given a mesh that does not divide a sharded
axis it fails at variable creation (JAX: a divisibility ValueError), so use
`keras_gmlp.distribution.ModelParallel` with meshes you have not checked.
"""

from keras_gmlp.distribution.layout_map import get_layout_map
from keras_gmlp.distribution.model_parallel import ModelParallel

__all__ = ["ModelParallel", "get_layout_map"]
