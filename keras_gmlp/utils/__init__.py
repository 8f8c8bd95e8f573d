"""Utilities below the model families: checkpoint conversion from timm
(`keras_gmlp.utils.timm`) and preset file access (`preset_files`).

Modules here import only keras, numpy and `keras_gmlp.layers`, never
`keras_gmlp.models` or `keras_gmlp.applications`, which import them.
"""
