class BackboneLengthFromPreset:
    """Mixin for the gMLP preprocessors loaded with `from_preset`.

    A preset saved by another task (e.g. a classifier made from a pretrained
    masked LM) holds no preprocessor of this class; keras-hub would then pack
    to its default of 512 tokens, which may exceed the backbone. Pack to the
    saved backbone's `max_sequence_length` instead.
    """

    @classmethod
    def _add_missing_kwargs(cls, loader, kwargs):
        kwargs = super()._add_missing_kwargs(loader, kwargs)
        kwargs.setdefault(
            "sequence_length", loader.config["config"]["max_sequence_length"]
        )
        return kwargs
