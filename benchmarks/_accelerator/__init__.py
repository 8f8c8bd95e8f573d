"""The GPU check of benchmarks/accelerator.py: sizes, workers and report.

`peers` runs timm and transformers in plain PyTorch (no Keras); `keras_checks`
and `keras_speed` run keras-gmlp on one Keras backend; `memory` finds the
largest masked-LM batch on one card. Each runs in a process of its own, one
after another, so that no two frameworks share the GPU's memory.
"""
