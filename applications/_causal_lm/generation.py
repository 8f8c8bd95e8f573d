"""The causal-LM program's generation: the prompts continued with each of
keras-hub's samplers (--samplers), from the trained model or a --preset,
optionally quantized, written to generations.json."""

import json

from _shared.files import write_text

from .recipe import DEFAULT_PROMPTS


def make_sampler(name, seed):
    import keras_hub

    samplers = keras_hub.samplers
    if name == "greedy":
        return samplers.GreedySampler()
    if name == "beam":
        return samplers.BeamSampler(num_beams=4)
    if name == "random":
        return samplers.RandomSampler(seed=seed)
    if name == "top_k":
        return samplers.TopKSampler(k=10, seed=seed)
    if name == "top_p":
        return samplers.TopPSampler(p=0.9, seed=seed)
    return samplers.ContrastiveSampler(k=5, alpha=0.6)


def generate_all(causal_lm, prompts, args):
    """{sampler: [continuation of each prompt]}, printed as they come."""
    generations = {}
    for name in args.samplers:
        causal_lm.compile(sampler=make_sampler(name, args.seed))
        outputs = causal_lm.generate(list(prompts), max_length=args.max_length)
        if isinstance(outputs, str):
            outputs = [outputs]
        generations[name] = [str(text) for text in outputs]
        print(f"\n[{name}]")
        for prompt, text in zip(prompts, generations[name]):
            print(f"  {prompt!r} -> {text}")
    return generations


def write_generations(output_dir, prompts, generations):
    write_text(
        output_dir / "generations.json",
        json.dumps({"prompts": prompts, "generations": generations}, indent=2) + "\n",
    )


def generate_only(parser, args, started):
    import keras
    from _shared.report import write_summary
    from _shared.tensorflow_input import keep_tensorflow_off_gpus

    keep_tensorflow_off_gpus()  # before TensorFlow runs anything
    from keras_gmlp.models import gMLPCausalLM

    keras.utils.set_random_seed(args.seed)
    try:
        causal_lm = gMLPCausalLM.from_preset(str(args.preset))
    except Exception as error:
        raise SystemExit(
            f"--preset {args.preset} could not be loaded: {error}"
        ) from None
    if args.quantize:
        from _shared.serving import quantized_copy

        from .data import bundled_calibration

        calibration = bundled_calibration(
            args,
            causal_lm.preprocessor.tokenizer,
            causal_lm.backbone.max_sequence_length,
        )
        causal_lm = quantized_copy(causal_lm, args.quantize, calibration)
    prompts = args.prompt or list(DEFAULT_PROMPTS)
    try:
        generations = generate_all(causal_lm, prompts, args)
    except ValueError as error:
        parser.error(str(error))
    write_generations(args.output_dir, prompts, generations)
    return write_summary(
        args.output_dir / "summary.json",
        args,
        started,
        mode="generate",
        preset=str(args.preset),
        quantize=args.quantize,
        generations=generations,
    )


def quantized_generator(args, causal_lm, heldout, calibration=None):
    """The --quantize copy of `causal_lm` (GPTQ fitted to `calibration`,
    token windows), and {"heldout_perplexity_<mode>": its test perplexity},
    counted as the float model's."""
    import keras
    import numpy as np
    from _shared.serving import quantized_copy
    from _text_training.training import next_token_losses

    quantized = quantized_copy(causal_lm, args.quantize, calibration)
    x, y = heldout
    losses = next_token_losses(keras.Model(quantized.input, quantized.output), x, y)
    # The perplexity of the real next tokens (label 0 is padding).
    perplexity = float(np.exp(losses[y > 0].mean()))
    print(f"Test perplexity {perplexity:.2f} with {args.quantize} weights.", flush=True)
    return quantized, {f"heldout_perplexity_{args.quantize}": perplexity}


def generate_and_write(args, causal_lm, heldout, train):
    """The generations of the prompts (--prompt, or the defaults), also
    written to generations.json, and the --quantize copy's test scores
    (GPTQ calibrated on the first windows of `train`: (train part,
    tokenizer))."""
    import keras
    from _shared.distribute import local_copy

    from .data import calibration_windows

    generator, scores = local_copy(causal_lm), {}
    if args.quantize:
        calibration = None
        if args.quantize == "gptq":
            calibration = calibration_windows(*train, args.sequence_length)
        generator, scores = quantized_generator(args, generator, heldout, calibration)
    prompts = args.prompt or list(DEFAULT_PROMPTS)
    keras.utils.set_random_seed(args.seed)
    generations = generate_all(generator, prompts, args)
    write_generations(args.output_dir, prompts, generations)
    return generations, scores
