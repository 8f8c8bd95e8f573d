"""The compiled static-cache decoding step (CUDA graphs on a GPU) against
the eager PyTorch decoder and keras-hub's loop, on a CPU.

On CUDA the step is compiled with `mode="reduce-overhead"`; here the same
step is compiled with `fullgraph=True` by inductor's default mode, or
traced by dynamo into a backend that counts the graphs it is handed and
runs them as traced (cheap: no code generation). Either way the tokens
must be the eager decoder's, and prompts of other lengths and batches in
the same bucket must reuse the one graph. Greedy decoding runs several
tokens a graph (`greedy_graph`); the tests run 3 (on CUDA 8), cheaper to
trace, and 1 under inductor. TensorFlow and JAX never run it.
"""

import keras
import keras_hub
import numpy as np
import pytest

from keras_gmlp.layers._kernels import use_kernels
from keras_gmlp.models import gMLPBackbone
from keras_gmlp.models import gMLPCausalLM
from keras_gmlp.models.gmlp import decoding

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="the compiled decoding step runs on PyTorch only",
)

VOCABULARY_SIZE = 40
LENGTH = 16


def _causal_lm(quantization=None, length=LENGTH):
    backbone = gMLPBackbone(
        vocabulary_size=VOCABULARY_SIZE,
        num_layers=2,
        hidden_dim=32,
        intermediate_dim=64,
        max_sequence_length=length,
        attention_dim=8,
        causal=True,
        dropout=0.0,
    )
    # Every weight random: equal values would hide an indexing bug.
    rng = np.random.default_rng(2)
    for variable in backbone.trainable_weights:
        variable.assign(0.5 * rng.standard_normal(variable.shape))
    model = gMLPCausalLM(backbone)
    if quantization:
        model.quantize(quantization)
    return model


def _prompts(prompt_lengths, seed, length=LENGTH):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1, VOCABULARY_SIZE, size=(len(prompt_lengths), length))
    padding_mask = np.arange(length)[None, :] < np.array(prompt_lengths)[:, None]
    return {
        "token_ids": np.where(padding_mask, token_ids, 0).astype("int32"),
        "padding_mask": padding_mask,
    }


def _generate(model, prompts, sampler, stop_token_ids=None):
    model.compile(sampler=sampler())
    output = model.generate(prompts, stop_token_ids=stop_token_ids)
    return keras.ops.convert_to_numpy(output["token_ids"])


def _compiled(monkeypatch, options, steps=3):
    """Forces the compiled path with `options`, greedy decoding `steps`
    tokens a graph."""
    # Imported here: it imports torch, which other backends' runs skip.
    from keras_gmlp.models.gmlp.decoding import static_cache

    monkeypatch.setattr(decoding, "compile_options", lambda device: options)
    monkeypatch.setattr(static_cache, "STOP_CHECK_STEPS", steps)


def _counting_backend():
    """A `torch.compile` backend that runs each graph as dynamo traced it,
    and the list it appends each graph to."""
    graphs = []

    def backend(graph_module, example_inputs):
        graphs.append(graph_module)
        return graph_module.forward

    return backend, graphs


@pytest.mark.parametrize("quantization", [None, "int8"])
def test_compiled_step_gives_the_eager_tokens_with_one_graph_a_bucket(
    monkeypatch, quantization
):
    """Prompts of 1, 4 and 9 tokens padded to 16 (a batch of 3), then of
    2, 6, 3 and 5 (a batch of 4, the same bucket): greedy tokens equal the
    eager decoder's, and the second call reuses the first one's graph."""
    model = _causal_lm(quantization)
    greedy = keras_hub.samplers.GreedySampler
    first, second = _prompts([1, 4, 9], seed=0), _prompts([2, 6, 3, 5], seed=1)
    eager = [_generate(model, prompts, greedy) for prompts in (first, second)]
    assert decoding.decoder_name(model) == "eager-torch"
    backend, graphs = _counting_backend()
    _compiled(monkeypatch, {"backend": backend})
    assert decoding.decoder_name(model) == "compiled-torch"
    np.testing.assert_array_equal(_generate(model, first, greedy), eager[0])
    assert len(graphs) == 1
    np.testing.assert_array_equal(_generate(model, second, greedy), eager[1])
    assert len(graphs) == 1
    # The prompts are kept and the continuations vary.
    np.testing.assert_array_equal(
        np.where(first["padding_mask"], eager[0], 0), first["token_ids"]
    )
    assert len(np.unique(eager[0][:, 9:])) > 3


@pytest.mark.parametrize("sampler", ["greedy", "top_k"])
def test_compiled_loop_stops_where_keras_hubs_loop_stops(monkeypatch, sampler):
    """With stop ids, rows that stopped keep their tokens until every row
    has stopped, though the host looks only every few steps; top-k draws
    run after the compiled step, seeded as in the eager loop."""
    model = _causal_lm()
    samplers = {
        "greedy": keras_hub.samplers.GreedySampler,
        "top_k": lambda: keras_hub.samplers.TopKSampler(k=4, seed=3),
    }
    prompts = _prompts([2, 6, 3], seed=4)
    stops = (3, 7)
    eager = _generate(model, prompts, samplers[sampler], stops)
    backend, _ = _counting_backend()
    _compiled(monkeypatch, {"backend": backend})
    compiled = _generate(model, prompts, samplers[sampler], stops)
    np.testing.assert_array_equal(compiled, eager)
    # Every row stopped before the end, so the early stop was exercised.
    generated = ~prompts["padding_mask"]
    assert np.isin(eager, stops)[generated.nonzero()].any()
    assert (np.where(generated, eager, -1) == 0).any()


def test_compiled_step_under_inductor_gives_the_eager_tokens(monkeypatch):
    """The greedy loop as CUDA compiles it, but in inductor's default mode
    (CUDA graphs need a GPU): fullgraph, the same greedy tokens. One token
    a graph: inductor's code generation grows with the tokens, and the
    other tests check several a graph."""
    model = _causal_lm()
    prompts = _prompts([1, 4, 9], seed=0)
    greedy = keras_hub.samplers.GreedySampler
    eager = _generate(model, prompts, greedy)
    _compiled(monkeypatch, {"mode": "default"}, steps=1)
    np.testing.assert_array_equal(_generate(model, prompts, greedy), eager)


# 12 is in the third prompt only: a stop id in a prompt does not stop its
# row. Three ids fill a buffer of four.
@pytest.mark.parametrize("stop_token_ids", [None, (30, 21, 12)])
def test_greedy_graph_of_several_tokens_gives_keras_hubs_tokens(
    monkeypatch, stop_token_ids
):
    """Three tokens a graph, 17 positions (16 through the step, not a
    multiple of 3: the last graph runs past the bucket), prompts of 2, 6 (one
    position masked out) and 4 tokens (a batch of 3 in a bucket of 4, the
    first token generated at the second position of a graph): the tokens
    of keras-hub's own loop over the layers, with and without stop ids."""
    model = _causal_lm(length=17)
    prompts = _prompts([2, 6, 4], seed=0, length=17)
    # A position before the first generated one, outside the mask: kept.
    prompts["padding_mask"][1, 1] = False
    greedy = keras_hub.samplers.GreedySampler
    with use_kernels("plain"):
        reference = _generate(model, prompts, greedy, stop_token_ids)
    backend, graphs = _counting_backend()
    _compiled(monkeypatch, {"backend": backend})
    np.testing.assert_array_equal(
        _generate(model, prompts, greedy, stop_token_ids), reference
    )
    assert len(graphs) == 1
    generated = ~prompts["padding_mask"]
    if stop_token_ids is not None:
        # Rows stopped at different positions, the last in the middle of a
        # graph's 3 (at 14: positions 12 to 14 write 13 to 15), and the loop
        # ended there.
        stopped_at = np.argmax(np.isin(reference, stop_token_ids) & generated, axis=1)
        np.testing.assert_array_equal(stopped_at, [3, 8, 14])
        np.testing.assert_array_equal(reference[:, 15:], prompts["token_ids"][:, 15:])
