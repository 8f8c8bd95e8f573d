"""Batches taken ahead of the training step, in a background thread, so
that reading, shuffling and masking the next batches overlaps the step
(tf.data's `prefetch`, for a Python stream)."""

import queue
import threading
import time

import keras


class _Failure:
    """An exception the background thread met, raised again in `fit`'s."""

    def __init__(self, error):
        self.error = error


class Prefetch:
    """Iterates `take()`'s batches, `depth` of them taken ahead in a
    background thread.

    On PyTorch the thread also turns them into tensors on Keras' device
    (`keras.ops.convert_to_tensor`), so the copy to a GPU is not made
    between steps either; on JAX, Keras' trainer puts the next batch on an
    accelerator itself, one step ahead. `waited_seconds` adds up the time
    the consumer waited for a batch. `close()` (also called when the
    generator is closed) stops the thread: batches it took ahead are lost,
    so a stream's state must not be read from the stream after that.

    Args:
        take: a function that returns the next batch.
        depth: how many batches to hold ready.
        on_wait: optional function of the seconds each wait took.
    """

    def __init__(self, take, depth=2, on_wait=None):
        self.take = take
        self.ready = queue.Queue(maxsize=depth)
        self.on_wait = on_wait
        self.stopping = threading.Event()
        self.thread = None
        self.place = None
        if keras.backend.backend() == "torch":

            def place(batch):
                return keras.tree.map_structure(keras.ops.convert_to_tensor, batch)

            self.place = place

    def produce(self):
        while not self.stopping.is_set():
            try:
                item = self.take()
                if self.place is not None:
                    item = self.place(item)
            except BaseException as error:  # handed to the consumer
                item = _Failure(error)
            # Blocks without polling: a thread that wakes to poll takes the
            # GIL from the training step (PyTorch's eager step is Python).
            # `close` makes room for this put.
            self.ready.put(item)
            if isinstance(item, _Failure):
                return

    def __iter__(self):
        self.thread = threading.Thread(
            target=self.produce, name="batch-prefetch", daemon=True
        )
        self.thread.start()
        try:
            while True:
                started = time.perf_counter()
                item = self.ready.get()
                if self.on_wait is not None:
                    self.on_wait(time.perf_counter() - started)
                if isinstance(item, _Failure):
                    raise item.error
                yield item
        finally:
            self.close()

    def close(self):
        """Stops the background thread and waits for it."""
        self.stopping.set()
        if self.thread is None or self.thread is threading.current_thread():
            return
        while self.thread.is_alive():
            # Room for the put the thread may be waiting in.
            while True:
                try:
                    self.ready.get_nowait()
                except queue.Empty:
                    break
            self.thread.join(timeout=0.1)
