"""The image program's training: the backend's set-up, the optimiser and
its learning-rate schedule, and the fit (the distribution over devices and
processes is _shared.distribute's)."""


def learning_rate(args, steps_per_epoch):
    import keras

    total = steps_per_epoch * args.epochs
    warmup = min(args.warmup_steps, total)
    if args.schedule == "constant":
        if not warmup:
            return args.learning_rate
        # A cosine decay to the same value is constant after the warmup.
        return keras.optimizers.schedules.CosineDecay(
            0.0,
            max(1, total - warmup),
            alpha=1.0,
            warmup_target=args.learning_rate,
            warmup_steps=warmup,
        )
    if not warmup:
        return keras.optimizers.schedules.CosineDecay(args.learning_rate, total)
    return keras.optimizers.schedules.CosineDecay(
        0.0,
        max(1, total - warmup),
        warmup_target=args.learning_rate,
        warmup_steps=warmup,
    )


def prepare_backend(args):
    """Memory, determinism and the seed, before the first computation."""
    import keras

    from keras_gmlp.host_memory import keep_freed_host_memory

    if keras.backend.backend() == "jax":
        # Before the first computation: XLA's CPU runtime would otherwise
        # fault in its scratch buffer page by page on every training step.
        keep_freed_host_memory()
    if keras.backend.backend() == "tensorflow":
        # Same seed, same result, also for a resumed run.
        import tensorflow as tf

        tf.config.experimental.enable_op_determinism()
    keras.utils.set_random_seed(args.seed)


def compile_model(model, args, steps_per_epoch):
    """AdamW on the cross-entropy of the logits, with the recipe's flags."""
    import keras

    optimizer = keras.optimizers.AdamW(
        learning_rate=learning_rate(args, steps_per_epoch),
        weight_decay=args.weight_decay,
        epsilon=args.adam_epsilon,
        global_clipnorm=args.clip_norm,
        use_ema=args.ema,
        ema_momentum=args.ema_momentum,
    )
    # As in DeiT and timm: no weight decay on biases and norm scales.
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.CategoricalCrossentropy(
            from_logits=True, label_smoothing=args.label_smoothing
        ),
        metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")],
    )


def fit(model, args, batches, run):
    """Trains resumably (`run` is the output directory's RunState), keeping
    best.keras (by validation accuracy) and final.keras in --output-dir;
    returns the epoch history, with the best weights in `model`."""
    from _shared.batches import in_order
    from _shared.callbacks import fit_resumably
    from _shared.report import fit_verbose

    callbacks = []
    if batches["epoch_callback"] is not None:
        callbacks.append(batches["epoch_callback"])
    validation = batches["validation"]
    if batches["in_memory"]:
        validation = in_order(*validation, args.batch_size)
    return fit_resumably(
        model,
        run,
        monitor="val_accuracy",
        mode="max",
        patience=args.patience,
        x=batches["train"],
        validation_data=validation,
        epochs=args.epochs,
        callbacks=callbacks,
        verbose=fit_verbose(),
        # The batches shuffle themselves by (seed, epoch); Keras' shuffle of
        # a PyDataset's batch order draws from the global random state,
        # which a resumed run does not share with an uninterrupted one.
        shuffle=False,
    )
