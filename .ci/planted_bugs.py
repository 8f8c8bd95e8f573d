"""Plants deliberate bugs one at a time and runs the tests that should catch
each: a check that the tests can fail.

    python .ci/planted_bugs.py CLONE [NUMBER ...]

CLONE is a scratch clone of this repository (each file is restored after
its run, but do not point it at a working tree with changes). Prints one
JSON line per bug: whether the named tests failed, and which. KERAS_BACKEND
picks the backend (torch by default, the fastest). Not run by CI: the
twenty-six runs take about sixteen minutes.
"""

import json
import os
import pathlib
import subprocess
import sys
import time

REPO = pathlib.Path(sys.argv[1])
BACKEND = os.environ.get("KERAS_BACKEND", "torch")
BUGS = [
    (
        "SGU causal mask off by one: each token also sees the next one",
        "keras_gmlp/layers/spatial_gating_unit.py",
        "visible = ops.arange(columns)[None, :] <= positions[:, None]",
        "visible = ops.arange(columns)[None, :] <= positions[:, None] + 1",
        ["tests/layers/test_spatial_gating_unit.py", "tests/layers/test_properties.py"],
    ),
    (
        "gMLPBlock drops its residual",
        "keras_gmlp/layers/gmlp_block.py",
        "outputs = inputs + drop_branch(",
        "outputs = 0 * inputs + drop_branch(",
        ["tests/layers/test_gmlp_block.py"],
    ),
    (
        "TinyAttention softmax over the wrong axis (queries, not keys)",
        "keras_gmlp/layers/tiny_attention.py",
        "ops.softmax(scores, axis=-1)",
        "ops.softmax(scores, axis=-2)",
        ["tests/layers/test_tiny_attention.py"],
    ),
    (
        "TinyAttention scaled by d instead of sqrt(d)",
        "keras_gmlp/layers/tiny_attention.py",
        "/ math.sqrt(self.attention_dim)",
        "/ self.attention_dim",
        ["tests/layers/test_tiny_attention.py"],
    ),
    (
        "MixerBlock returns the token-mixed branch with a reshape where a transpose belongs",
        "keras_gmlp/layers/mixer_block.py",
        "x = inputs + ops.transpose(mixed, (0, 2, 1))",
        "x = inputs + ops.reshape(mixed, ops.shape(inputs))",
        ["tests/layers/test_mixer_block.py"],
    ),
    (
        "StochasticDepth keeps branches without rescaling by 1/(1-rate)",
        "keras_gmlp/layers/stochastic_depth.py",
        "return inputs * keep / ops.cast(keep_prob, inputs.dtype)",
        "return inputs * keep",
        ["tests/layers/test_stochastic_depth.py"],
    ),
    (
        "PatchEmbedding orders patches column-major",
        "keras_gmlp/layers/patch_embedding.py",
        "return ops.reshape(x, (shape[0], shape[1] * shape[2], self.hidden_dim))",
        "return ops.reshape(ops.transpose(x, (0, 2, 1, 3)), (shape[0], shape[1] * shape[2], self.hidden_dim))",
        ["tests/layers/test_patch_embedding.py"],
    ),
    (
        "timm conversion: the stem conv's kernel with height and width swapped",
        "keras_gmlp/utils/timm/layout.py",
        "lambda w: w.transpose(2, 3, 1, 0),",
        "lambda w: w.transpose(3, 2, 1, 0),",
        ["tests/applications/test_timm_parity.py"],
    ),
    (
        "gMLPBackbone's pooled output averages over padding",
        "keras_gmlp/models/gmlp/gmlp_backbone.py",
        "        mask=padding_mask_input,\n    )",
        "        mask=None,\n    )",
        [
            "tests/models/gmlp/test_gmlp_backbone.py",
            "tests/models/gmlp/test_gmlp_text_classifier.py",
        ],
    ),
    (
        "gMLPCausalLM generation reads the token one position early",
        "keras_gmlp/models/gmlp/gmlp_causal_lm.py",
        "cache_update_index = index - 1",
        "cache_update_index = ops.maximum(index - 2, 0)",
        ["tests/models/gmlp/test_gmlp_causal_lm.py"],
    ),
    (
        "gMLP-Ti with 29 blocks instead of 30 in the variant table",
        "keras_gmlp/utils/variants.py",
        '"timm_name": "gmlp_ti16_224",\n        "num_blocks": 30,',
        '"timm_name": "gmlp_ti16_224",\n        "num_blocks": 29,',
        ["tests/applications/test_param_counts.py"],
    ),
    (
        "Resume starts one epoch late",
        "applications/_shared/callbacks.py",
        "initial_epoch = backup.completed_epochs()",
        "initial_epoch = backup.completed_epochs() + 1",
        [
            "tests/applications/programs/test_resume.py",
            "tests/applications/programs/test_train_image_classifier.py::test_interrupt_then_resume_matches_uninterrupted",
        ],
    ),
    (
        "--learning-rate accepts 0",
        "applications/_shared/flags.py",
        'lambda v: v > 0, "above 0"',
        'lambda v: v >= 0, "above 0"',
        ["tests/applications/programs/test_program_flags.py"],
    ),
    (
        "The image program validates on the test images (checkpoint chosen on test)",
        "applications/_image_classifier/data.py",
        '"validation": (ends["train"], ends["validation"]),',
        '"validation": (ends["validation"], len(labels)),',
        [
            "tests/applications/programs/test_train_image_classifier.py::test_fast_default_writes_every_output"
        ],
    ),
    (
        "channels_first builders move the channels with height and width swapped",
        "keras_gmlp/applications/_image_classifier.py",
        'keras.layers.Permute((2, 3, 1), name="to_channels_last")',
        'keras.layers.Permute((3, 2, 1), name="to_channels_last")',
        ["tests/applications/test_channels_first.py"],
    ),
    (
        "A resumed text run restarts its input stream instead of restoring it",
        "applications/_shared/callbacks.py",
        "        backup.restore_stream()\n",
        "        pass\n",
        [
            "tests/applications/programs/test_text_streaming.py::test_steps_resume_mid_run_with_the_same_weights"
        ],
    ),
    (
        "Text windows cut one token short of the document stream",
        "applications/_shared/text_stream.py",
        "ids.rebatch(length - 1, drop_remainder=not pad_last)",
        "ids.rebatch(length - 2, drop_remainder=not pad_last)",
        [
            "tests/applications/programs/test_text_streaming.py::test_windows_join_documents_with_sep_across_boundaries"
        ],
    ),
    (
        "pretrain_mlm.py reports its scores on the validation windows as test",
        "applications/pretrain_mlm.py",
        'args, trainer, history, masked["test"], counts',
        'args, trainer, history, masked["validation"], counts',
        [
            "tests/applications/programs/test_pretrain_mlm.py::test_fast_default_writes_outputs"
        ],
    ),
    (
        "A direct call no longer range-checks ids given as numpy arrays",
        "keras_gmlp/models/gmlp/_checks.py",
        "                if isinstance(value, (np.ndarray, np.generic, list, tuple))",
        "                if False",
        [
            "tests/models/gmlp/test_robustness.py::test_ids_out_of_range_are_refused_before_the_step"
        ],
    ),
    (
        "The text backbone keeps keras-hub's LoRA targets (attention's query and value)",
        "keras_gmlp/models/gmlp/gmlp_backbone.py",
        "LORA_LAYER_NAMES = channel_projections(gMLPBlock, TinyAttention)",
        'LORA_LAYER_NAMES = ("query_dense", "value_dense", "query", "value")',
        ["tests/models/test_lora.py"],
    ),
    (
        "applications.enable_lora leaves the frozen model's other weights trainable",
        "keras_gmlp/applications/lora.py",
        "    for layer in layers:\n        layer.trainable = False\n",
        "    for layer in layers:\n        layer.trainable = layer.trainable\n",
        [
            "tests/applications/test_lora_builders.py::test_a_fit_changes_only_the_factors_the_adapted_biases_and_the_head"
        ],
    ),
    (
        "train_image_classifier.py --quantize scores the float model as the int8 one",
        "applications/_image_classifier/reporting.py",
        "loss, accuracy, _, _ = evaluate(quantized, args, batches)",
        "loss, accuracy, _, _ = evaluate(model, args, batches)",
        [
            "tests/applications/programs/test_train_image_classifier.py::test_quantize_int8_scores_and_saves_a_quantized_copy"
        ],
    ),
    (
        "PyTorch decoding keeps the caller's intra-op threads (a busy core stalls it)",
        "keras_gmlp/layers/_torch_decoding.py",
        "torch.set_num_threads(1)",
        "torch.set_num_threads(threads)",
        [
            "tests/models/gmlp/test_torch_decoding.py::test_decoding_runs_on_one_thread_and_restores_the_callers_count"
        ],
    ),
    (
        "--quantize quantizes the trained model itself, not a copy",
        "applications/_shared/serving.py",
        "        copy.quantize(mode)",
        "        model.quantize(mode)",
        [
            "tests/applications/programs/test_train_causal_lm.py::test_quantized_perplexity_counts_the_real_next_tokens"
        ],
    ),
    (
        "A resumed LoRA run starts from zero factors (Keras reloads them so)",
        "applications/_shared/lora_backup.py",
        "        if epoch == 0:",
        "        if epoch >= 0:",
        [
            "tests/applications/programs/test_train_image_classifier.py::test_lora_trains_factors_biases_and_head_and_resumes_as_uninterrupted"
        ],
    ),
    (
        "Without keras-hub, the error chains the raw ModuleNotFoundError",
        "keras_gmlp/_compat.py",
        '            name="keras_hub",\n        ) from None',
        '            name="keras_hub",\n        ) from error',
        ["tests/applications/test_light_imports.py"],
    ),
]

only = sys.argv[2:]
results = []
for number, (title, path, old, new, tests) in enumerate(BUGS, 1):
    if only and str(number) not in only:
        continue
    file = REPO / path
    text = file.read_text()
    assert text.count(old) == 1, (title, text.count(old))
    file.write_text(text.replace(old, new))
    start = time.time()
    try:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:warnings",
                "-x",
                "-m",
                "not multidevice",
                *tests,
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            env={**os.environ, "KERAS_BACKEND": BACKEND, "TF_CPP_MIN_LOG_LEVEL": "2"},
        )
    finally:
        file.write_text(text)
    failed = [
        line.split(" - ")[0]
        for line in run.stdout.splitlines()
        if line.startswith("FAILED")
    ]
    last = (
        run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr[-300:]
    )
    results.append(
        {
            "bug": number,
            "title": title,
            "file": path,
            "caught": run.returncode != 0,
            "failed": failed,
            "summary": last,
            "seconds": round(time.time() - start),
        }
    )
    print(json.dumps(results[-1]), flush=True)
