"""Plants deliberate bugs one at a time and runs the tests that should catch
each: a check that the tests can fail.

    python .ci/planted_bugs.py CLONE [NUMBER ...]

CLONE is a scratch clone of this repository (each file is restored after
its run, but do not point it at a working tree with changes). Prints one
JSON line per bug: whether the named tests failed, and which. KERAS_BACKEND
picks the backend (torch by default, the fastest). Not run by CI: the
eighty-seven runs take about thirty minutes (the first twenty-six about
sixteen; 27-76, caught by the programs' unit tests in
tests/applications/units, about eight and a half). 77-85 plant a bug at
each kind of edge of issue 66 (a resume through the program, chunked reads,
rounding at realistic sizes, whole distributions, size-
and thread-dependent paths, global state restored; reported figures by
value are bug 75, the progress lines'); about six minutes. 86-87 plant
one in the compiled static-cache step and one in int8 decoding (issue 67).
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
        "applications/_shared/flag_values.py",
        'lambda v: v > 0, "above 0"',
        'lambda v: v >= 0, "above 0"',
        ["tests/applications/units/test_flag_edges.py"],
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
        "applications/_text_input/windows.py",
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
        "PyTorch decoding leaves its chosen thread count behind, not the caller's",
        "keras_gmlp/models/gmlp/decoding/torch_threads.py",
        "            torch.set_num_threads(callers)",
        "            pass",
        [
            "tests/models/gmlp/test_torch_decoding.py::test_thread_choice_follows_the_faster_count_as_the_load_changes"
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
    (
        "pretrain_mlm.py chooses its checkpoint on the test windows",
        "applications/pretrain_mlm.py",
        'args, run_state, tokenizer, train_source, masked["validation"]',
        'args, run_state, tokenizer, train_source, masked["test"]',
        [
            "tests/applications/units/test_checkpoint_split.py::test_pretrain_mlm_chooses_on_validation_and_scores_test_once"
        ],
    ),
    (
        "pretrain_mlm.py masks every step's batch the same way",
        "applications/_masked_lm/data.py",
        "np.random.default_rng([args.seed, step, 1, shard])",
        "np.random.default_rng([args.seed, 1, shard])",
        [
            "tests/applications/units/test_task_inputs.py::test_mlm_train_masks_are_drawn_from_seed_step_and_shard"
        ],
    ),
    (
        "train_causal_lm.py labels each token with itself, not the next one",
        "applications/_causal_lm/data.py",
        "    return x, rows[:, 1:]",
        "    return x, rows[:, :-1]",
        [
            "tests/applications/units/test_task_inputs.py::test_causal_lm_labels_are_the_next_tokens"
        ],
    ),
    (
        "train_causal_lm.py chooses its checkpoint on the test windows",
        "applications/train_causal_lm.py",
        'args, run_state, tokenizer, train_source, data["validation"]',
        'args, run_state, tokenizer, train_source, data["test"]',
        [
            "tests/applications/units/test_checkpoint_split.py::test_causal_lm_chooses_on_validation_and_scores_test_once"
        ],
    ),
    (
        "train_causal_lm.py refuses --max-length equal to --sequence-length",
        "applications/_causal_lm/recipe.py",
        "elif args.max_length > args.sequence_length:",
        "elif args.max_length >= args.sequence_length:",
        ["tests/applications/units/test_flag_edges.py::test_edges_between_flags"],
    ),
    (
        "finetune_text_classifier.py chooses its checkpoint on the test examples",
        "applications/finetune_text_classifier.py",
        'task["sources"]["train"], heldout["validation"]',
        'task["sources"]["train"], heldout["test"]',
        [
            "tests/applications/units/test_checkpoint_split.py::test_text_classifier_chooses_on_validation_and_scores_test_once"
        ],
    ),
    (
        "finetune_text_classifier.py accepts --test-fraction 0 (no validation data)",
        "applications/_text_classifier/recipe.py",
        '"--test-fraction",\n        type=fraction,',
        '"--test-fraction",\n        type=unit_float,',
        ["tests/applications/units/test_flag_edges.py::test_numeric_flag_edges"],
    ),
    (
        "train_image_classifier.py sizes its schedule in images, not steps",
        "applications/train_image_classifier.py",
        'training.compile_model(model, args, batches["steps_per_epoch"])',
        'training.compile_model(model, args, batches["train_size"])',
        [
            "tests/applications/units/test_schedules.py::test_image_program_schedule_counts_steps_not_images"
        ],
    ),
    (
        "A failed atomic write leaves its temporary file behind",
        "applications/_shared/files.py",
        "        if os.path.exists(temporary):\n            os.remove(temporary)",
        "        pass",
        ["tests/applications/units/test_atomic_writes.py"],
    ),
    (
        "--dropout (and every rate in [0, 1)) accepts 1",
        "applications/_shared/flag_values.py",
        'lambda v: 0 <= v < 1, "in [0, 1)"',
        'lambda v: 0 <= v <= 1, "in [0, 1)"',
        ["tests/applications/units/test_flag_edges.py::test_numeric_flag_edges"],
    ),
    (
        "The text programs' cosine reaches 0 warm-up steps after the last step",
        "applications/_text_training/training.py",
        "decay_steps=max(1, total_steps - warmup_steps),",
        "decay_steps=max(1, total_steps),",
        [
            "tests/applications/units/test_schedules.py::test_text_programs_warm_up_then_decay_to_zero_at_the_last_step"
        ],
    ),
    (
        "The language models' loss counts padding and unused mask slots",
        "applications/_text_training/training.py",
        "from_logits=True, ignore_class=0",
        "from_logits=True, ignore_class=None",
        [
            "tests/applications/units/test_task_inputs.py::test_language_model_loss_counts_only_real_labels"
        ],
    ),
    (
        "A preset save removes the previous preset before the new one is whole",
        "applications/_shared/callbacks.py",
        '    staging = make_temporary_dir(path.parent, f".{path.name}-")\n    try:\n        save(str(staging))',
        '    staging = make_temporary_dir(path.parent, f".{path.name}-")\n    shutil.rmtree(path, ignore_errors=True)\n    try:\n        save(str(staging))',
        ["tests/applications/units/test_atomic_writes.py"],
    ),
    (
        "Early stopping counts the best epoch itself towards --patience",
        "applications/_shared/callbacks.py",
        "if epoch > best and monitor in row]",
        "if epoch >= best and monitor in row]",
        [
            "tests/applications/units/test_checkpoint_split.py::test_fit_resumably_keeps_the_best_validation_epoch_and_stops_on_it"
        ],
    ),
    (
        "A preset save interrupted between its two renames leaves no preset in place",
        "applications/_shared/callbacks.py",
        "            if old.exists() and not path.exists():\n                old.rename(path)\n",
        "            pass\n",
        [
            "tests/applications/units/test_atomic_writes.py::test_a_preset_interrupted_as_it_is_moved_in_keeps_the_previous_one"
        ],
    ),
    (
        "Held-out labels padded for several replicas are copies, counted twice",
        "applications/_shared/distribute.py",
        "return x, pad(y, ignored_label), None",
        "return x, pad(y), None",
        [
            "tests/applications/units/test_task_inputs.py::test_heldout_arrays_padded_for_replicas_weigh_nothing"
        ],
    ),
    (
        "summary.json is written in place (a failed write damages the last one)",
        "applications/_shared/report.py",
        "    write_text(path, text)\n    return summary",
        "    path.write_text(text)\n    return summary",
        [
            "tests/applications/units/test_atomic_writes.py::test_summary_that_fails_halfway_keeps_the_previous_summary"
        ],
    ),
    (
        "A failed write of the stream's state leaves its staging folder behind",
        "applications/_text_input/stream.py",
        "            shutil.rmtree(staging, ignore_errors=True)",
        "            pass",
        [
            "tests/applications/units/test_atomic_writes.py::test_a_stream_state_that_fails_halfway_keeps_the_previous_state"
        ],
    ),
    (
        "--schedule constant decays after its warm-up",
        "applications/_image_classifier/training.py",
        "            alpha=1.0,",
        "            alpha=0.0,",
        [
            "tests/applications/units/test_schedules.py::test_image_constant_schedule_stays_at_the_peak"
        ],
    ),
    (
        "The image program chooses its checkpoint on the test images",
        "applications/_image_classifier/training.py",
        '    validation = batches["validation"]',
        '    validation = batches["test"]',
        [
            "tests/applications/units/test_checkpoint_split.py::test_image_fit_chooses_and_stops_on_the_validation_images"
        ],
    ),
    (
        "The image program refuses --warmup-steps 0",
        "applications/_image_classifier/recipe.py",
        '"--warmup-steps",\n        type=non_negative_int,',
        '"--warmup-steps",\n        type=positive_int,',
        ["tests/applications/units/test_flag_edges.py::test_numeric_flag_edges"],
    ),
    (
        "The image program scores the validation images as test",
        "applications/_image_classifier/reporting.py",
        '    test = batches["test"]',
        '    test = batches["validation"]',
        [
            "tests/applications/units/test_checkpoint_split.py::test_image_report_scores_the_test_images"
        ],
    ),
    (
        "The digits' validation and test batches are swapped",
        "applications/_image_classifier/data.py",
        '        data["validation"],\n        data["test"],\n    )',
        '        data["test"],\n        data["validation"],\n    )',
        [
            "tests/applications/units/test_checkpoint_split.py::test_image_batches_keep_validation_and_test_apart"
        ],
    ),
    (
        "detokenize splits '==' into '= ='",
        "keras_gmlp/models/gmlp/gmlp_tokenizer.py",
        '_RUNS = frozenset("=*<>/-_.:+&^%~!")',
        '_RUNS = frozenset("*<>/-_.:+&^%~!")',
        ["tests/applications/units/test_detokenize_code.py"],
    ),
    (
        "detokenize reads every '__' after a word as the end of a dunder name (def__init__)",
        "keras_gmlp/models/gmlp/gmlp_tokenizer.py",
        "closing = dunder_open and previous[-1:].isalnum()",
        "closing = previous[-1:].isalnum()",
        ["tests/applications/units/test_detokenize_code.py"],
    ),
    (
        "BERT masking may mask [CLS] and [SEP]",
        "keras_gmlp/utils/text_corpus.py",
        "candidates = token_ids >= FIRST_WORD_ID",
        "candidates = token_ids > 0",
        [
            "tests/applications/units/test_task_inputs.py::test_mlm_masks_word_pieces_only_and_labels_them_with_the_original_ids"
        ],
    ),
    (
        "A line of spaces or tabs no longer separates documents",
        "applications/_text_input/text_files.py",
        'blank = tf.equal(tf.strings.strip(line), "")',
        'blank = tf.equal(line, "")',
        [
            "tests/applications/units/test_text_stream.py::test_documents_end_at_blank_lines_in_text_and_gzip_files"
        ],
    ),
    (
        "A file's last document is dropped unless a blank line follows it",
        "applications/_text_input/text_files.py",
        'lines = lines.concatenate(tf.data.Dataset.from_tensors(tf.constant("")))',
        "lines = lines",
        [
            "tests/applications/units/test_text_stream.py::test_documents_end_at_blank_lines_in_text_and_gzip_files"
        ],
    ),
    (
        "Carving from the train files trains on the last held-out part's documents",
        "applications/_text_input/sources.py",
        'kept["train"] = (len(heldout), every)',
        'kept["train"] = (len(heldout) - 1, every)',
        [
            "tests/applications/units/test_text_stream.py::test_the_train_stream_never_yields_a_carved_held_out_document"
        ],
    ),
    (
        "A resume by replay stops one batch short: the batch after it is the one trained before",
        "applications/_text_input/stream.py",
        'for _ in range(position["step"] - self.step):',
        'for _ in range(position["step"] - self.step - 1):',
        [
            "tests/applications/units/test_text_stream.py::test_a_resume_by_replay_takes_the_batch_an_uninterrupted_run_would"
        ],
    ),
    (
        "KERAS_DISTRIBUTION_* variables override the multi-process flags given",
        "applications/_shared/distribute.py",
        "if getattr(args, name) is None and os.environ.get(ENVIRONMENT[name]):",
        "if os.environ.get(ENVIRONMENT[name]):",
        [
            "tests/applications/units/test_flag_precedence.py::test_flags_win_over_the_distribution_environment"
        ],
    ),
    (
        "--recipe paper overrides the flags given",
        "applications/_masked_lm/recipe.py",
        "        args = parser.parse_args(argv)\n    paper = ",
        "        vars(args).update(PAPER_RECIPE)\n    paper = ",
        [
            "tests/applications/units/test_flag_precedence.py::test_a_flag_given_wins_over_the_paper_recipe"
        ],
    ),
    (
        "fit_task's schedule decays to 0 at --steps minus the warm-up",
        "applications/_text_training/training.py",
        "args.learning_rate, args.weight_decay, args.steps, args.warmup_steps",
        "args.learning_rate, args.weight_decay, args.steps - args.warmup_steps, args.warmup_steps",
        [
            "tests/applications/units/test_compiled_with.py::test_fit_task_compiles_the_warmup_cosine_schedule"
        ],
    ),
    (
        "The causal LM is built in float32 whatever --dtype-policy says",
        "applications/_causal_lm/model.py",
        "        causal=True,\n        dropout=args.dropout,\n    )",
        '        causal=True,\n        dropout=args.dropout,\n        dtype="float32",\n    )',
        [
            "tests/applications/units/test_compiled_with.py::test_the_causal_lm_computes_in_bfloat16_with_float32_variables"
        ],
    ),
    (
        "pretrain_mlm never sets --dtype-policy",
        "applications/pretrain_mlm.py",
        "    keras.config.set_dtype_policy(args.dtype_policy)\n",
        "",
        [
            "tests/applications/units/test_compiled_with.py::test_pretraining_computes_in_bfloat16_with_float32_variables"
        ],
    ),
    (
        "A LoRA target naming a norm or the spatial gating unit passes the check",
        "keras_gmlp/layers/_lora.py",
        'if layer.weights and hasattr(layer, "enable_lora")',
        "if layer.weights",
        [
            "tests/applications/units/test_lora_edges.py::test_names_of_layers_lora_cannot_adapt_are_refused"
        ],
    ),
    (
        "The LoRA backup prunes the factors the epoch backup still names",
        "applications/_shared/lora_backup.py",
        'if int(old.stem.split("-")[-1]) < epoch:',
        'if int(old.stem.split("-")[-1]) <= epoch:',
        [
            "tests/applications/units/test_lora_edges.py::test_lora_factors_survive_an_interruption_between_the_two_writes"
        ],
    ),
    (
        "A drop-path list longer than the blocks is accepted",
        "keras_gmlp/layers/_patch_mlp.py",
        "valid = len(rates) == num_blocks and",
        "valid = len(rates) >= num_blocks and",
        [
            "tests/applications/units/test_argument_edges.py::test_a_drop_path_list_of_another_length_than_the_blocks_is_refused"
        ],
    ),
    (
        "Token ids given by keyword (model(inputs=...)) are not range-checked",
        "keras_gmlp/models/gmlp/_checks.py",
        'inputs = args[0] if args else kwargs.get("inputs")',
        "inputs = args[0] if args else None",
        [
            "tests/applications/units/test_argument_edges.py::test_a_direct_call_checks_token_ids_by_position_and_by_keyword"
        ],
    ),
    (
        "decode_predictions names each class after the one before it",
        "keras_gmlp/applications/imagenet_utils.py",
        "results.append([(*classes[i], float(row[i])) for i in best])",
        "results.append([(*classes[i - 1], float(row[i])) for i in best])",
        [
            "tests/applications/test_builders.py::test_decode_predictions_offline_in_imagenet_order"
        ],
    ),
    (
        "One process with several input shards reads only one",
        "applications/_text_training/training.py",
        "owned = range(args.process_id, args.input_shards, args.num_processes)",
        "owned = range(args.process_id, args.num_processes)",
        [
            "tests/applications/units/test_text_stream.py::test_one_process_reading_two_input_shards_takes_both"
        ],
    ),
    (
        "The rewound stream counts the replayed batches twice",
        "applications/_text_input/stream.py",
        "self.stream.step = self.start + len(replay)",
        "self.stream.step = self.start",
        [
            "tests/applications/units/test_text_stream.py::test_the_rewound_stream_starts_again_where_the_first_iteration_did"
        ],
    ),
    (
        "The held-out windows drop the last partial window",
        "applications/_text_input/corpus.py",
        "sources[part].dataset(), tokenizer, length, pad_last=True",
        "sources[part].dataset(), tokenizer, length",
        [
            "tests/applications/units/test_text_stream.py::test_held_out_windows_keep_the_last_partial_window"
        ],
    ),
    (
        "The image backbone's config forgets its gating (presets reload as split)",
        "keras_gmlp/models/gmlp_image/gmlp_image_backbone.py",
        '        config["gating"] = self.gating\n',
        "",
        [
            "tests/applications/units/test_argument_edges.py::test_the_image_backbone_keeps_its_gating_in_config_and_presets"
        ],
    ),
    (
        "Token shards: a shard whose bytes changed is not refused (its digest unchecked)",
        "applications/_token_shards/shard_set.py",
        'size != offset + length * dtype.itemsize or file_digest(path) != entry["sha256"]',
        "size != offset + length * dtype.itemsize",
        [
            "tests/applications/programs/test_token_shards.py::test_damaged_shard_sets_are_refused"
        ],
    ),
    (
        "Token shards: a resumed tokenization writes again the documents its shards hold",
        "applications/_token_shards/writer.py",
        'documents = source.dataset().skip(entry["documents"])',
        "documents = source.dataset()",
        [
            "tests/applications/programs/test_token_shards.py::test_an_interrupted_tokenization_resumes_to_the_same_shards"
        ],
    ),
    (
        "Shard stream: every pass over the windows takes them in the same order",
        "applications/_token_shards/stream.py",
        "rng = np.random.default_rng([self.seed, epoch, 3])",
        "rng = np.random.default_rng([self.seed, 0, 3])",
        [
            "tests/applications/programs/test_token_shards.py::test_the_stream_takes_every_window_once_a_pass"
        ],
    ),
    (
        "Shard stream: input shard s reads the rows of shard 0 (processes overlap)",
        "applications/_token_shards/stream.py",
        "first = step * self.batch_size + shard * self.rows",
        "first = step * self.batch_size",
        [
            "tests/applications/programs/test_token_shards.py::test_the_batches_do_not_depend_on_processes_and_resume_exactly"
        ],
    ),
    (
        "The progress lines' input share counts the waits since the start",
        "applications/_shared/progress.py",
        '"input_share": min(1.0, (end[2] - start[2]) / seconds),',
        '"input_share": min(1.0, end[2] / seconds),',
        [
            "tests/applications/units/test_progress.py::test_lines_every_n_steps_give_the_figures_of_the_steps_since_the_last"
        ],
    ),
    (
        "The programs leave TensorFlow its GPUs on JAX and PyTorch",
        "applications/_shared/tensorflow_input.py",
        'tf.config.set_visible_devices([], "GPU")',
        "pass",
        [
            "tests/applications/units/test_tensorflow_input.py::test_tensorflow_sees_no_gpu_unless_keras_runs_on_it"
        ],
    ),
    (
        "tokenize_corpus.py: a resumed run does not compare --heldout-fraction",
        "applications/_token_shards/flags.py",
        '    "heldout_fraction",\n',
        "",
        ["tests/applications/programs/test_tokenize_corpus_resume.py"],
    ),
    (
        "UTF-8 check: a character cut across read chunks named where its chunk begins",
        "applications/_text_input/text_files.py",
        "{offset - held + error.start}",
        "{offset + error.start}",
        [
            "tests/applications/units/test_input_edges.py::test_utf8_is_checked_across_read_chunks_with_the_offset_named"
        ],
    ),
    (
        "Held-out split: validation takes a tenth of what the test split left",
        "applications/_text_input/sources.py",
        "share = min(0.5, fraction / (1.0 - fraction))",
        "share = min(0.5, fraction)",
        [
            "tests/applications/units/test_input_edges.py::test_held_out_splits_of_a_thousand_documents_are_800_100_100"
        ],
    ),
    (
        "Shard path: batches per epoch drop the partial last batch",
        "applications/_token_shards/corpus.py",
        "counts, -(-windows // args.batch_size)",
        "counts, windows // args.batch_size",
        [
            "tests/applications/units/test_input_edges.py::test_shard_batches_per_epoch_count_a_partial_last_batch"
        ],
    ),
    (
        "Vocabulary sample: the byte bound counts the document it falls in",
        "applications/_text_input/windows.py",
        "return total + size, (total, text)",
        "return total + size, (total + size, text)",
        [
            "tests/applications/units/test_input_edges.py::test_the_vocabulary_sample_ends_with_the_document_its_byte_bound_falls_in"
        ],
    ),
    (
        "Masking: 15% random word pieces and 5% kept instead of 10% and 10%",
        "keras_gmlp/utils/text_corpus.py",
        "np.where(action < 0.9, random_ids, chosen)",
        "np.where(action < 0.95, random_ids, chosen)",
        [
            "tests/test_text_corpus.py::test_masking_shares_are_80_10_10_for_mask_random_and_kept"
        ],
    ),
    (
        "PyTorch decoder: split products on several threads drop the bias",
        "keras_gmlp/models/gmlp/decoding/torch_decoder.py",
        "return torch.addmm(self.bias_column, self.transposed, x.T).T",
        "return (self.transposed @ x.T).T",
        [
            "tests/models/gmlp/test_torch_decoding_edges.py::test_split_products_on_two_threads_pick_the_layers_tokens"
        ],
    ),
    (
        "PyTorch decoder: a thread count chosen before is kept past the caller's",
        "keras_gmlp/models/gmlp/decoding/torch_threads.py",
        "        if self.chosen not in self.counts:\n            self.chosen = 1\n",
        "",
        [
            "tests/models/gmlp/test_torch_decoding_edges.py::test_a_thread_count_chosen_before_is_not_used_past_the_callers"
        ],
    ),
    (
        "PyTorch ONNX export: its ONNX functions stay registered in torch.onnx",
        "keras_gmlp/utils/_torch_export.py",
        "            torch.onnx.unregister_custom_op_symbolic(name, opset)",
        "            pass",
        [
            "tests/deployment/test_onnx_export.py::test_a_torch_onnx_export_leaves_nothing_registered_in_torch_onnx"
        ],
    ),
    (
        "Static-cache decoding: each token also sees the next position",
        "keras_gmlp/models/gmlp/decoding/static_cache.py",
        "visible = self.positions <= position",
        "visible = self.positions <= position + 1",
        [
            "tests/models/gmlp/test_static_cache_decoding.py::test_compiled_step_gives_the_eager_tokens_with_one_graph_a_bucket"
        ],
    ),
    (
        "PyTorch int8 decoding truncates a row's values instead of rounding them",
        "keras_gmlp/models/gmlp/decoding/torch_decoder.py",
        "quantized = torch.mul(x, row_scale).round_()",
        "quantized = torch.mul(x, row_scale)",
        [
            "tests/models/gmlp/test_torch_decoding.py::test_fast_step_equals_the_layers_cached_path"
        ],
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
