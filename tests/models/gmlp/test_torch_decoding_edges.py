"""The PyTorch decoding step's size- and thread-dependent paths, through
`gMLPCausalLM.generate`: products of at least the split threshold run in
their split form when the step runs on two threads (float and int8), and
a thread count chosen by an earlier call is not used when the caller now
allows fewer. Each compared with the layers' path (`use_kernels("plain")`).

A fake clock makes two threads win the thread choice's timed tries, so the
split form runs whatever the machine's load. On TensorFlow and JAX the
step never runs (these tests are skipped; test_torch_decoding.py checks
generation there).
"""

import time

import keras
import numpy as np
import pytest

from keras_gmlp.layers._kernels import use_kernels
from keras_gmlp.models import gMLPBackbone
from keras_gmlp.models import gMLPCausalLM

# The decoder's helpers, reached here only (a move is a change here alone):
# the size from which products split, and the process-wide thread choice.
from keras_gmlp.models.gmlp.decoding.torch_decoder import SPLIT_WEIGHTS
from keras_gmlp.models.gmlp.decoding.torch_threads import CHOICE
from keras_gmlp.models.gmlp.decoding.torch_threads import FIRST_WAIT

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="the raw-PyTorch decoding step runs on PyTorch only",
)

HIDDEN_DIM = 32


def split_sized_causal_lm(quantization):
    """One block whose expansion (32 x threshold/32) and tied output table
    (vocabulary threshold/32 x 32) are exactly the split threshold; the
    block's output product (half as large) stays below it."""
    wide = SPLIT_WEIGHTS // HIDDEN_DIM
    backbone = gMLPBackbone(
        vocabulary_size=wide,
        num_layers=1,
        hidden_dim=HIDDEN_DIM,
        intermediate_dim=wide,
        max_sequence_length=10,
        attention_dim=8,
        causal=True,
        dropout=0.0,
    )
    block = backbone.gmlp_blocks[0]
    assert block.expand_dense.kernel.shape == (HIDDEN_DIM, wide)
    # Every weight random (equal values would hide an indexing bug); the
    # products' kernels scaled by their inputs, so that no block's output
    # drowns the token's embedding and the continuations vary.
    rng = np.random.default_rng(5)
    for variable in backbone.trainable_weights:
        scale = 0.5
        if len(variable.shape) == 2 and "embeddings" not in variable.path:
            scale = 1 / np.sqrt(variable.shape[0])
        variable.assign(scale * rng.standard_normal(variable.shape))
    model = gMLPCausalLM(backbone)
    if quantization:
        model.quantize(quantization)
    return model


def prompts():
    rng = np.random.default_rng(6)
    lengths = np.array([2, 5, 3])
    padding_mask = np.arange(10)[None, :] < lengths[:, None]
    token_ids = rng.integers(5, SPLIT_WEIGHTS // HIDDEN_DIM, size=(3, 10))
    return {
        "token_ids": np.where(padding_mask, token_ids, 0).astype("int32"),
        "padding_mask": padding_mask,
    }


def greedy(model, choice):
    with use_kernels(choice):
        model.compile(sampler="greedy")  # drops a generate traced in another form
        generated = model.generate(prompts(), stop_token_ids=None)
    return keras.ops.convert_to_numpy(generated["token_ids"])


@pytest.fixture
def threads_clock(monkeypatch):
    """A fake clock that runs ten times faster on two threads than on one,
    and records the thread count at each reading; the thread choice starts
    as in a fresh process (and is put back after)."""
    import torch

    now, seen = [0.0], []

    def clock():
        count = torch.get_num_threads()
        seen.append(count)
        now[0] += 1.0 if count == 1 else 0.1
        return now[0]

    monkeypatch.setattr(time, "perf_counter", clock)
    for name, value in (("chosen", 1), ("until_try", 0), ("wait", FIRST_WAIT)):
        monkeypatch.setattr(CHOICE, name, value)
    callers = torch.get_num_threads()
    yield seen
    torch.set_num_threads(callers)


@pytest.mark.parametrize("quantization", [None, "int8"])
def test_split_products_on_two_threads_pick_the_layers_tokens(
    threads_clock, quantization
):
    import torch

    seen = threads_clock
    model = split_sized_causal_lm(quantization)
    plain = greedy(model, "plain")
    torch.set_num_threads(2)
    seen.clear()
    fast = greedy(model, "auto")
    # The steps ran on two threads: the split form.
    assert seen.count(2) > 8, seen
    np.testing.assert_array_equal(fast, plain)
    assert torch.get_num_threads() == 2
    assert len(np.unique(plain[:, 5:])) > 3


def test_a_thread_count_chosen_before_is_not_used_past_the_callers(threads_clock):
    """Two threads chosen on a caller's two; the caller then allows one:
    every step runs on one, and the tokens are the layers'."""
    import torch

    seen = threads_clock
    model = split_sized_causal_lm(None)
    torch.set_num_threads(2)
    greedy(model, "auto")
    assert CHOICE.chosen == 2
    torch.set_num_threads(1)
    seen.clear()
    one = greedy(model, "auto")
    assert seen and set(seen) == {1}
    assert torch.get_num_threads() == 1
    np.testing.assert_array_equal(one, greedy(model, "plain"))
