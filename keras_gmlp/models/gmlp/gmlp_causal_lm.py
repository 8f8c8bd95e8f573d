import functools

import keras
import keras_hub
from keras import ops
from keras_hub.models import CausalLM

from keras_gmlp.models.gmlp import decoding
from keras_gmlp.models.gmlp._checks import CheckedTextSteps
from keras_gmlp.models.gmlp._checks import check_preprocessor_matches
from keras_gmlp.models.gmlp._quantization_structure import quantization_layer_structure
from keras_gmlp.models.gmlp.gmlp_backbone import gMLPBackbone
from keras_gmlp.models.gmlp.gmlp_causal_lm_preprocessor import gMLPCausalLMPreprocessor
from keras_gmlp.utils.export import CheckedExport

SAMPLER_NAMES = ("beam", "contrastive", "greedy", "random", "top_k", "top_p")


@keras.saving.register_keras_serializable(package="keras_gmlp")
class gMLPCausalLM(CheckedExport, CheckedTextSteps, CausalLM):
    """An autoregressive gMLP or aMLP language model with cached generation.

    The backbone must be causal (`gMLPBackbone(causal=True)`): every spatial
    projection is lower-triangular and every tiny attention masks later
    tokens. Next-token logits come from the transposed token embedding
    (tied input and output embeddings); all segment ids are 0.

    `generate()` decodes incrementally through keras-hub's samplers: each
    block keeps a cache of the normalised gates (and, in aMLP, the tiny
    attention's keys and values) of the tokens seen so far, so a new token
    costs `O(length * intermediate_dim)` per block instead of a pass over
    the whole prefix. The sampler is set by `compile(sampler=...)`
    (`"greedy"`, `"top_k"`, `"top_p"`, or a `keras_hub.samplers.Sampler`).

    Args:
        backbone: a causal `gMLPBackbone`.
        preprocessor: a `gMLPCausalLMPreprocessor` or `None`.

    Examples:

    ```python
    backbone = keras_gmlp.models.gMLPBackbone(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=2,
        hidden_dim=64, intermediate_dim=256, max_sequence_length=64,
        causal=True,
    )
    preprocessor = keras_gmlp.models.gMLPCausalLMPreprocessor(
        tokenizer, sequence_length=64
    )
    causal_lm = keras_gmlp.models.gMLPCausalLM(backbone, preprocessor)
    causal_lm.fit(["some text to learn from", "and more of it"], epochs=1)
    causal_lm.compile(sampler="greedy")
    causal_lm.generate(["some text"], max_length=32)
    ```
    """

    backbone_cls = gMLPBackbone
    preprocessor_cls = gMLPCausalLMPreprocessor

    def __init__(self, backbone, preprocessor=None, **kwargs):
        if not backbone.causal:
            raise ValueError(
                "gMLPCausalLM needs a causal backbone: a bidirectional one "
                "lets each token see the tokens it must predict. Received: "
                "a backbone with causal=False; build it with causal=True."
            )
        check_preprocessor_matches(backbone, preprocessor, self.__class__.__name__)
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor

        # === Functional Model ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        padding_mask = keras.Input(shape=(None,), dtype="int32", name="padding_mask")
        sequence_output = backbone(
            {
                "token_ids": token_ids,
                "segment_ids": ops.zeros_like(token_ids),
                "padding_mask": padding_mask,
            }
        )["sequence_output"]
        logits = backbone.token_embedding(sequence_output, reverse=True)
        super().__init__(
            inputs={"token_ids": token_ids, "padding_mask": padding_mask},
            outputs=logits,
            **kwargs,
        )

    def compile(self, *args, sampler="top_k", **kwargs):
        super().compile(*args, sampler=sampler, **kwargs)
        # keras-hub hands an unknown sampler name back as the string itself,
        # which would only fail deep inside generate().
        if not isinstance(self.sampler, keras_hub.samplers.Sampler):
            raise ValueError(
                "Argument `sampler` must be a keras_hub.samplers.Sampler or "
                f"one of the names {SAMPLER_NAMES}. Received: sampler={sampler!r}"
            )

    def get_quantization_layer_structure(self, mode=None):
        """The embedding, then the gMLP blocks: what `quantize("gptq")`
        and `quantize("awq")` calibrate block by block."""
        return quantization_layer_structure(self.backbone, mode)

    def generate(
        self, inputs, max_length=None, stop_token_ids="auto", strip_prompt=False
    ):
        limit = self.backbone.max_sequence_length
        if max_length is None and self.preprocessor is not None:
            max_length = self.preprocessor.sequence_length
        if max_length is not None and max_length > limit:
            raise ValueError(
                f"gMLPCausalLM can generate at most the backbone's "
                f"max_sequence_length={limit} tokens (prompt included). "
                f"Received: max_length={max_length}"
            )
        return super().generate(
            inputs,
            max_length=max_length,
            stop_token_ids=stop_token_ids,
            strip_prompt=strip_prompt,
        )

    def call_with_cache(self, token_ids, cache, cache_update_index):
        """Runs `token_ids` (the tokens at positions `cache_update_index ...`)
        through the backbone with each block's decoding cache.

        Args:
            token_ids: int tensor `(batch, length)`.
            cache: one cache per block, as made by `_build_cache`.
            cache_update_index: int or scalar tensor, position of the first
                token in `token_ids`.

        Returns:
            `(logits, hidden_states, cache)`: logits `(batch, length,
            vocabulary_size)`, the final normalised hidden states and the
            updated caches.
        """
        backbone = self.backbone
        x = backbone.token_embedding(token_ids) + backbone.segment_embedding(
            ops.zeros_like(token_ids)
        )
        updated_cache = []
        for block, block_cache in zip(backbone.gmlp_blocks, cache):
            x, block_cache = block(
                x, cache=block_cache, cache_update_index=cache_update_index
            )
            updated_cache.append(block_cache)
        hidden_states = backbone.final_layer_norm(x)
        logits = backbone.token_embedding(hidden_states, reverse=True)
        return logits, hidden_states, tuple(updated_cache)

    def _build_cache(self, token_ids, prefill_length=None):
        """Fills every block's cache from the padded prompts.

        With `prefill_length` (an int), only the first `prefill_length`
        positions are run; later cache slots and hidden states stay zero
        until decoding writes them. The causal blocks make the filled part
        the same either way.
        """
        batch_size, length = ops.shape(token_ids)[0], ops.shape(token_ids)[1]
        cache = tuple(
            block.initial_cache(batch_size, length, dtype=self.compute_dtype)
            for block in self.backbone.gmlp_blocks
        )
        if prefill_length is None:
            _, hidden_states, cache = self.call_with_cache(token_ids, cache, 0)
            return hidden_states, cache
        _, hidden_states, cache = self.call_with_cache(
            token_ids[:, :prefill_length], cache, 0
        )
        hidden_states = ops.pad(
            hidden_states, ((0, 0), (0, length - prefill_length), (0, 0))
        )
        return hidden_states, cache

    def _sample(
        self, decode, token_ids, cache, index, mask, stop_token_ids, hidden_states
    ):
        """The sampler's own loop over the decoding steps: `decode(token_ids,
        cache, position)` where given, else the layers' cached `call`."""

        def next(prompt, cache, index):
            cache_update_index = index - 1
            if decode is not None:
                position = int(cache_update_index)
                logits, hidden_states = decode(prompt[:, position], cache, position)
                return logits, hidden_states, cache
            batch_size = ops.shape(prompt)[0]
            last_token = ops.slice(prompt, [0, cache_update_index], [batch_size, 1])
            logits, hidden_states, cache = self.call_with_cache(
                last_token, cache, cache_update_index
            )
            return (
                ops.squeeze(logits, axis=1),
                ops.squeeze(hidden_states, axis=1),
                cache,
            )

        return self.sampler(
            next=next,
            prompt=token_ids,
            cache=cache,
            index=index,
            mask=mask,
            stop_token_ids=stop_token_ids,
            hidden_states=hidden_states,
            model=self,
        )

    def _decode_in_torch(self, fast_step, token_ids, index, mask, stop_token_ids):
        """Generation with the raw-PyTorch step `fast_step`, prefill
        included: compiled over a static cache on CUDA, else on the thread
        count it finds faster."""
        if decoding.compiles(fast_step, self.sampler, index):
            return decoding.decode_compiled(
                self.backbone,
                fast_step,
                self.sampler,
                token_ids,
                index,
                mask,
                stop_token_ids,
            )
        with fast_step.thread_choice(ops.shape(token_ids)[0]) as threads:
            # Eager PyTorch knows `index` on the host, so the prefill can
            # stop there: the decoder writes every later position itself.
            hidden_states, cache = self._build_cache(
                token_ids, prefill_length=max(index, 1)
            )
            if _keeps_the_sampler_loop(self.sampler):
                return fast_step.sample(
                    self.sampler, threads, token_ids, cache, index, mask, stop_token_ids
                )
            decode = functools.partial(threads.step, fast_step)
            return self._sample(
                decode, token_ids, cache, index, mask, stop_token_ids, hidden_states
            )

    def generate_step(self, inputs, stop_token_ids=None):
        """Generates the tokens after each prompt of a padded batch.

        Args:
            inputs: dict with `"token_ids"` and `"padding_mask"`, prompts
                right-padded to the generation length.
            stop_token_ids: optional tuple of ids that end a sequence.
        """
        token_ids, padding_mask = inputs["token_ids"], inputs["padding_mask"]
        # Decoding starts at the end of the shortest prompt; longer prompts'
        # tokens are kept where the padding mask is true.
        index = ops.min(ops.sum(ops.cast(padding_mask, "int32"), axis=-1))
        fast_step = decoding.torch_decoder(self.backbone)
        if fast_step is None:
            hidden_states, cache = self._build_cache(token_ids)
            token_ids = self._sample(
                None,
                token_ids,
                cache,
                index,
                padding_mask,
                stop_token_ids,
                hidden_states,
            )
        else:
            token_ids = self._decode_in_torch(
                fast_step, token_ids, int(index), padding_mask, stop_token_ids
            )
        padding_mask = _generated_padding_mask(token_ids, padding_mask, stop_token_ids)
        return {"token_ids": token_ids, "padding_mask": padding_mask}


def _keeps_the_sampler_loop(sampler):
    """Whether `sampler` runs keras-hub's `Sampler.__call__` loop (greedy,
    top-k, top-p, random), which `TorchDecoder.sample` reproduces; beam
    and contrastive search have loops of their own."""
    return type(sampler).__call__ is keras_hub.samplers.Sampler.__call__


def _generated_padding_mask(token_ids, prompt_padding_mask, stop_token_ids):
    """The padding mask of generated `token_ids`: every token up to and
    including the first generated stop token of each row (all of them
    without `stop_token_ids`). `prompt_padding_mask` is true on the prompt
    tokens, which are never taken for stop tokens."""
    if stop_token_ids is None:
        return ops.ones_like(token_ids, dtype="bool")
    generated = ops.logical_not(ops.cast(prompt_padding_mask, "bool"))
    is_stop = ops.zeros_like(generated)
    for stop_id in stop_token_ids:
        is_stop = ops.logical_or(is_stop, ops.equal(token_ids, stop_id))
    stops = ops.cast(ops.logical_and(is_stop, generated), "int32")
    stops_before = ops.cumsum(stops, axis=-1) - stops
    return ops.equal(stops_before, 0)
