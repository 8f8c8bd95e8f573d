"""Greedy decoding with keras-hub's whole loop inside the compiled graph,
several tokens a replay.

With the step alone in a CUDA graph (`static_cache.StaticCacheStep`), the
host still ran, per token, the copy of the token into the step, the
position's update, the write of the new token into the prompt and the
stop condition: about a dozen eager kernel launches and their Python, most
of the 311 us a token PyTorch took at batch 1 on an H200 (JAX, whose whole
loop is one XLA program, took 191). Here they are in the graph too, as
gpt-fast and XLA do: the prompt, its mask and the stop ids are buffers of
the bucket's shape, the position is a buffer the graph advances, and one
replay runs `steps` (`static_cache.STOP_CHECK_STEPS`) positions, each
reading its token from the prompt buffer and writing the greedy token
after it. The host replays the graph and, every replay, reads the one
flag saying whether every row has stopped.

The tokens are keras-hub's: before each write the graph evaluates
keras-hub's stop condition on the prompt, and a write happens only at a
position at or after `index`, not in the mask, while some row has not
stopped. The prefill runs through the same replays, its writes all off.
Positions past the prompt (the last replay's, the bucket's) write nothing:
their cache writes go to the bucket's last position, which nothing later
reads, and the prompt buffer has `steps - 1` columns more than the bucket.
"""

import functools
import math

import torch

from keras_gmlp.models.gmlp.decoding import static_cache


class GreedyStaticCacheLoop(static_cache.StaticCacheStep):
    """keras-hub's sampling loop with its greedy sampler, `steps` positions
    a call, over the static caches of a `(batch, length)` bucket.

    `load(prompt, mask, index, stop_token_ids)` copies a call's inputs into
    the buffers; each `forward()` then advances `steps` positions from the
    `position` buffer and leaves in the `stopped` buffer whether every row
    has stopped; the prompt buffer then holds the generated tokens.

    Args:
        decoder: as for `StaticCacheStep`.
        batch: the bucket's rows.
        length: the bucket's positions.
        temperature: the greedy sampler's temperature.
        stop_count: the size of the stop ids' buffer (ids beyond a call's
            repeat its first), 0 where no stop ids are given.
        steps: positions a call advances.
    """

    def __init__(self, decoder, batch, length, temperature, stop_count, steps):
        super().__init__(decoder, batch, length)
        self.temperature, self.stop_count, self.steps = temperature, stop_count, steps
        device = self.positions.device
        # The last call's positions may run past the bucket: `steps - 1`
        # columns more hold the token after each.
        shape = (batch, length + steps - 1)
        ints = functools.partial(torch.zeros, dtype=torch.int64, device=device)
        flags = functools.partial(torch.zeros, dtype=torch.bool, device=device)
        self.register_buffer("prompt", ints(shape))
        # Where a token may be written: not in the mask, from `index` on.
        self.register_buffer("writable", flags(shape))
        # Where a stop id ends a row: not in the mask.
        self.register_buffer("counted", flags(shape))
        # Rows of the bucket past the call's batch: stopped from the start.
        self.register_buffer("filler_rows", flags(batch))
        self.register_buffer("stop_ids", ints(stop_count))
        self.register_buffer("position", ints(1))
        self.register_buffer("stopped", flags(()))

    def load(self, prompt, mask, index, stop_token_ids):
        """Copies a call's `prompt` and `mask` (`(rows, length)` tensors),
        first generated position `index` and `stop_token_ids` (a tuple of
        at most `stop_count` ids, or None) in; the position to 0."""
        rows, length = prompt.shape
        columns = torch.arange(length, device=prompt.device)
        self.prompt.zero_()
        self.prompt[:rows, :length] = prompt
        self.counted.zero_()
        self.counted[:rows, :length] = ~mask
        self.writable.zero_()
        self.writable[:rows, :length] = ~mask & (columns >= index)
        self.filler_rows.fill_(True)
        self.filler_rows[:rows] = False
        if self.stop_count:
            ids = list(stop_token_ids)
            ids += ids[:1] * (self.stop_count - len(ids))
            self.stop_ids.copy_(torch.tensor(ids, dtype=torch.int64))
        self.position.zero_()
        self.stopped.zero_()

    def forward(self):
        with torch.no_grad():
            stopped = self._every_row_stopped()
            last = self.positions.shape[0] - 1
            for offset in range(self.steps):
                position = self.position + offset
                token_ids = self.prompt.index_select(1, position)[:, 0]
                logits = self.logits(token_ids, position.clamp(max=last))
                probabilities = torch.softmax(logits / self.temperature, dim=-1)
                tokens = probabilities.argmax(dim=-1)
                after = position + 1
                kept = self.prompt.index_select(1, after)[:, 0]
                writes = self.writable.index_select(1, after)[:, 0]
                if stopped is not None:
                    writes = writes & ~stopped
                new = torch.where(writes, tokens, kept)
                self.prompt.index_copy_(1, after, new[:, None])
                stopped = self._every_row_stopped()
            self.position.add_(self.steps)
            if stopped is not None:
                self.stopped.copy_(stopped)

    def _every_row_stopped(self):
        """keras-hub's stop condition on the prompt buffer (each row holds
        a stop id outside the mask), a device tensor; None without stop
        ids."""
        if not self.stop_count:
            return None
        stops = (self.prompt[..., None] == self.stop_ids).any(dim=-1)
        return ((stops & self.counted).any(dim=-1) | self.filler_rows).all()


def compiled_loop(backbone, decoder, batch, length, compile_options, **options):
    """The compiled `GreedyStaticCacheLoop` of `backbone`'s bucket for
    `batch` rows of `length` positions (see `static_cache.compiled_module`).

    Args:
        options: `temperature`, `stop_count` and `steps`, as for
            `GreedyStaticCacheLoop`.

    Returns:
        `(step, module)`: the compiled callable and its module.
    """
    shape = static_cache.bucket_shape(decoder, batch, length)
    key = ("greedy", *shape, *(options[name] for name in sorted(options)))
    return static_cache.compiled_module(
        backbone,
        decoder,
        key,
        lambda: GreedyStaticCacheLoop(decoder, *shape, **options),
        compile_options,
    )


def stop_count(stop_token_ids):
    """The size of the stop ids' buffer for `stop_token_ids`: a power of
    two, so that 3 and 4 ids share a graph; 0 for none."""
    if not stop_token_ids:
        return 0
    return static_cache.bucket(len(stop_token_ids), 1)


def sample(step, module, prompt, index, mask, stop_token_ids):
    """keras-hub's greedy `Sampler.__call__` loop through `module`'s
    compiled replays (`step`), prefill included.

    Args:
        step, module: as `compiled_loop` returns them.
        prompt: int tensor `(batch, length)`, the prompts, padded.
        index: int, at least 1, the first position to generate.
        mask: bool tensor like `prompt`, true where a token is kept.
        stop_token_ids: a tuple of ids, or None.

    Returns:
        The generated token ids, `(batch, length)`.
    """
    device = module.positions.device
    prompt = torch.as_tensor(prompt, device=device)
    mask = torch.as_tensor(mask, device=device).bool()
    rows, length = prompt.shape
    if index >= length:
        return prompt.clone()
    cuda_graphs = device.type == "cuda"
    with torch.no_grad():
        module.load(prompt, mask, index, stop_token_ids)
        # Positions 0 to `length - 2` each give the token after them; the
        # call holding `index - 1` is the first that writes.
        calls = math.ceil((length - 1) / module.steps)
        writing = (index - 1) // module.steps
        for call in range(calls):
            if cuda_graphs:
                torch.compiler.cudagraph_mark_step_begin()
            step()
            if module.stop_count and call >= writing and bool(module.stopped):
                break
        return module.prompt[:rows, :length].to(prompt.dtype, copy=True)
