"""The fine-tuning program's model: a text classifier over the --preset
encoder, with LoRA factors when --lora-rank is given (beside int8
kernels with --quantize-base)."""


def load_classifier(args, num_classes):
    """A classifier over the --preset encoder, or one line on why not."""
    from keras_gmlp.models import gMLPTextClassifier

    try:
        classifier = gMLPTextClassifier.from_preset(
            str(args.preset), num_classes=num_classes, dropout=args.dropout
        )
    except Exception as error:
        raise SystemExit(
            f"--preset {args.preset} could not be loaded as a gMLP encoder: {error}"
        ) from None
    if args.quantize_base:
        from _shared.serving import quantize_in_place

        # The encoder only: the new head trains in float.
        quantize_in_place(classifier.backbone, args.quantize_base)
    if args.lora_rank:
        classifier.backbone.enable_lora(args.lora_rank)
    return classifier
