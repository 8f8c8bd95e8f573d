"""The `compile` default that the library's image models change from Keras'."""

from keras_gmlp.layers._kernels import default_jit_compile


class XLAOnTensorFlowCPU:
    """Mixin for a `keras.Model` subclass: `compile(jit_compile="auto")`
    compiles with XLA on TensorFlow CPUs too, where the image models train
    faster with it (benchmarks/docs/throughput.md). Keras' own "auto" turns XLA off
    on TensorFlow when there is no accelerator. An explicit `jit_compile`
    is kept, and every other backend and device, and a multi-replica
    `tf.distribute` strategy, keep Keras' "auto"."""

    def compile(self, *args, jit_compile="auto", **kwargs):
        if jit_compile == "auto":
            jit_compile = default_jit_compile(self)
        super().compile(*args, jit_compile=jit_compile, **kwargs)
