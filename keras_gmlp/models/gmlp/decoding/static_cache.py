"""Decoding through a compiled one-token step over a static cache.

On a GPU, `TorchDecoder`'s eager step pays Python and a kernel launch per
op: about 80 launches a token for the 6-block check model, 350 tokens/s at
batch 1 on an H200 where JAX ran 4,917. PyTorch's answer (gpt-fast,
transformers' `StaticCache`) is a cache of fixed shape written in place
and the step compiled with `mode="reduce-overhead"`, which records it as a
CUDA graph and replays it with one launch.

So every shape here is fixed for a `(batch, length)` bucket: the caches
are `(batch bucket, length bucket, channels)`, the new token's gates,
keys and values go in with `index_copy_` at a position held in a device
tensor, and the spatial projection and the tiny attention read the whole
bucket, the positions after the token masked. A prompt of another length
or a batch of another size in the same bucket replays the same graph. The
prompt is prefilled by the same step, one position at a time: one graph,
and a replay costs microseconds.

The token loop never waits for the device, except every
`STOP_CHECK_STEPS` steps to end early when every row has stopped: rows
keep their tokens once all have stopped, so the tokens are those of
keras-hub's loop, which checks every step.

This module's `sample` is the loop of samplers that run after the step
(top-k, top-p, random): per token the host copies the token in and the
new token back. Greedy sampling runs a `greedy_graph.GreedyStaticCacheLoop`
instead, whose one replay advances several tokens with the whole loop's
update inside the graph.
"""

import math
import weakref

import keras_hub
import torch
import torch.nn.functional as F

from keras_gmlp.models.gmlp.decoding.torch_decoder import _layer_norm

# The fewest positions and rows a bucket holds: prompts of up to 64 tokens
# share one graph, and a batch of 1 is its own bucket.
SHORTEST_BUCKET = 64
# Steps between the host's looks at whether every row has stopped.
STOP_CHECK_STEPS = 8

# One step module per backbone and bucket, so that a later `generate`
# replays what an earlier one compiled; dropped with the backbone.
_STEPS = weakref.WeakKeyDictionary()


def bucket(size, least):
    """The next power of two from `size`, at least `least`."""
    return max(least, 1 << max(size - 1, 0).bit_length())


class StaticCacheStep(torch.nn.Module):
    """The one-token step of a `TorchDecoder`'s formulas over caches of
    fixed shape, for one `(batch, length)` bucket.

    `forward(token_ids, position)` writes the gates (and keys and values)
    of `token_ids` `(batch,)` at `position` (a `(1,)` int64 tensor) and
    returns the next-token logits.

    The caches are buffers of this module, so `torch.compile` treats them
    as static inputs: CUDA graphs may then write them in place.

    Args:
        decoder: the `TorchDecoder` whose weights the step reads; replace
            `decoder` before each `generate` to read the current weights.
        batch: the bucket's rows.
        length: the bucket's positions, at most the model's maximum length.
    """

    def __init__(self, decoder, batch, length):
        super().__init__()
        self.decoder, self.batch = decoder, batch
        device = decoder.token_embeddings.device
        self.register_buffer("positions", torch.arange(length, device=device))
        for number, block in enumerate(decoder.blocks):
            channels = block["gate_norm"][0].shape[0]
            self.register_buffer(
                f"gates_{number}", torch.zeros(batch, length, channels, device=device)
            )
            if block["attention"] is not None:
                shape = (batch, length, block["attention"]["dim"])
                self.register_buffer(
                    f"keys_{number}", torch.zeros(shape, device=device)
                )
                self.register_buffer(
                    f"values_{number}", torch.zeros(shape, device=device)
                )

    def forward(self, token_ids, position):
        with torch.no_grad():
            return self.logits(token_ids, position)

    def logits(self, token_ids, position):
        """The next-token logits of `token_ids` at `position`, written into
        the caches."""
        decoder = self.decoder
        visible = self.positions <= position
        x = decoder.embed(token_ids)
        for number, block in enumerate(decoder.blocks):
            x = x + self._block(number, block, x, position, visible)
        hidden_states = _layer_norm(x, *decoder.final_norm)
        return decoder.output(hidden_states, False)

    def _block(self, number, block, x, position, visible):
        gates = getattr(self, f"gates_{number}")
        normed = _layer_norm(x, *block["norm"])
        z = F.gelu(block["expand"](normed, False))
        u, v = torch.split(z, z.shape[-1] // 2, dim=-1)
        gates.index_copy_(1, position, _layer_norm(v, *block["gate_norm"])[:, None])
        # Row `position` of each head's spatial weights over the bucket,
        # zero after `position`: `(heads, 1, length) @ (batch, heads,
        # length, c)`.
        batch, length, channels = gates.shape
        kernel = block["spatial_kernel"].index_select(1, position)[:, :, :length]
        kernel = torch.where(visible, kernel, 0.0)
        heads = kernel.shape[0]
        context = gates.view(batch, length, heads, -1).transpose(1, 2)
        projected = torch.matmul(kernel, context)
        bias = block["spatial_bias"].index_select(1, position)
        projected = (projected + bias[None, :, :, None]).reshape(batch, channels)
        if block["attention"] is not None:
            projected = projected + self._tiny_attention(
                number, block["attention"], normed, position, visible
            )
        return block["output"](u * projected, False)

    def _tiny_attention(self, number, attention, x, position, visible):
        keys = getattr(self, f"keys_{number}")
        values = getattr(self, f"values_{number}")
        query, key, value = torch.split(
            attention["qkv"](x, False), attention["dim"], dim=-1
        )
        keys.index_copy_(1, position, key[:, None])
        values.index_copy_(1, position, value[:, None])
        scores = torch.matmul(query[:, None], keys.transpose(1, 2))
        scores = scores / math.sqrt(attention["dim"])
        weights = torch.softmax(scores.masked_fill(~visible, -math.inf), dim=-1)
        return attention["output"](torch.matmul(weights, values)[:, 0], False)


def greedy_temperature(sampler):
    """The temperature of keras-hub's greedy sampler, else None (the
    sampler then runs after the compiled step)."""
    if type(sampler) is keras_hub.samplers.GreedySampler:
        return float(sampler.temperature)
    return None


def bucket_shape(decoder, batch, length):
    """The `(rows, positions)` bucket of `batch` prompts of `length`
    positions for `decoder`'s model."""
    limit = decoder.blocks[0]["spatial_kernel"].shape[-1] if decoder.blocks else length
    return bucket(batch, 1), min(limit, bucket(length, SHORTEST_BUCKET))


def compiled_module(backbone, decoder, key, make, compile_options):
    """The compiled module `make()` of `backbone` for `key`, made once
    (its graphs replayed by later calls), reading `decoder`'s weights, its
    caches zeroed.

    Returns:
        `(step, module)`: the compiled callable and its module.
    """
    key = (*key, tuple(sorted(compile_options.items())))
    steps = _STEPS.setdefault(backbone, {})
    if key not in steps:
        module = make()
        steps[key] = (torch.compile(module, fullgraph=True, **compile_options), module)
    step, module = steps[key]
    module.decoder = decoder
    for cache in module.buffers():
        if cache is not module.positions:
            cache.zero_()
    return step, module


def compiled_step(backbone, decoder, batch, length, compile_options):
    """The compiled `StaticCacheStep` of `backbone`'s bucket for `batch`
    rows of `length` positions (see `compiled_module`).

    Returns:
        `(step, module)`: the compiled callable and its module.
    """
    shape = bucket_shape(decoder, batch, length)
    return compiled_module(
        backbone,
        decoder,
        ("step", *shape),
        lambda: StaticCacheStep(decoder, *shape),
        compile_options,
    )


def sample(step, module, sampler, prompt, index, mask, stop_token_ids):
    """keras-hub's `Sampler.__call__` loop around a compiled step: as
    `TorchDecoder.sample`, prefill included (positions before `index - 1`
    go through the same step), `sampler` run after each step.

    Args:
        step, module: as `compiled_step` returns them.
        sampler: a `keras_hub.samplers.Sampler` with keras-hub's loop.
        prompt: int tensor `(batch, length)`, the prompts, padded.
        index: int, at least 1, the first position to generate.
        mask: bool tensor like `prompt`, true where a token is kept.
        stop_token_ids: a tuple of ids, or None.

    Returns:
        The generated token ids, `(batch, length)`.
    """
    device = module.positions.device
    prompt = torch.as_tensor(prompt, device=device).clone()
    mask = torch.as_tensor(mask, device=device).bool()
    rows = prompt.shape[0]
    cuda_graphs = device.type == "cuda"
    # The step's inputs: tokens of the bucket's rows (extra rows decode
    # token 0, never read) and the position.
    token_ids = torch.zeros(module.batch, dtype=torch.int64, device=device)
    position = torch.zeros(1, dtype=torch.int64, device=device)

    def run(at):
        token_ids[:rows].copy_(prompt[:, at])
        position.fill_(at)
        if cuda_graphs:
            torch.compiler.cudagraph_mark_step_begin()
        return step(token_ids, position)[:rows]

    with torch.no_grad():
        for at in range(index - 1):
            run(at)
        stops = done = None
        if stop_token_ids is not None:
            stops = torch.tensor(list(stop_token_ids), device=device)
            done = _every_row_stopped(prompt, stops, mask)
        for at in range(index, prompt.shape[1]):
            if done is not None and (at - index) % STOP_CHECK_STEPS == 0:
                if bool(done):
                    break
            logits = run(at - 1)
            output = sampler.get_next_token(sampler.compute_probabilities(logits))
            keep = mask[:, at] if done is None else mask[:, at] | done
            prompt[:, at] = torch.where(keep, prompt[:, at], output.to(prompt.dtype))
            if done is not None:
                done = _every_row_stopped(prompt, stops, mask)
    return prompt


def _every_row_stopped(prompt, stops, mask):
    """keras-hub's stop condition, as a device tensor: each row holds a
    stop id outside `mask`."""
    return (torch.isin(prompt, stops) & ~mask).any(dim=-1).all()
