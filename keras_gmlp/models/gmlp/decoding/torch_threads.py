"""How many PyTorch intra-op threads the raw decoding steps run on.

Neither one count is right. Idle, the caller's threads split a step's
large products (the 6-block aMLP of benchmarks/generation.py decoded
about 1.5x faster on 2 threads than on 1). With other processes busy on
the cores, every split op waits a scheduler slice for them: the same
steps took 4-5 ms on 1 thread and 12-640 ms on 2. The load can change
while a model generates, so the choice is measured again and again.

A try times one of the step's large products at each count, not a whole
step: under load a product costs one stall, a step one per split op.
"""

import contextlib
import time

# A step this many times slower than the last one means the load changed:
# try the counts again before the next step.
SLOWDOWN = 3.0
# Steps between tries; doubled while the choice stays the same (a try
# under load costs a few steps), back to the first when it changes.
FIRST_WAIT, LONGEST_WAIT = 8, 512
# Runs of the product per count in a try (after one untimed run): the
# sum is compared, so one lucky run under load does not win.
TIMED_RUNS = 2


class ThreadChoice:
    """Runs decoding steps on one thread or on the caller's count,
    whichever the latest try found faster for one of their products.

    One process-wide instance (`CHOICE`) keeps what it learnt across
    `generate` calls: the load is the machine's, not a model's.
    """

    def __init__(self):
        self.chosen = 1
        # Set by `decoding` for the generation under way.
        self.counts, self.product = (1,), None
        self.wait = FIRST_WAIT
        self.until_try = 0
        self.last_step = None

    @contextlib.contextmanager
    def decoding(self, threads, product):
        """Within it, PyTorch runs on the count chosen so far (a prefill,
        say) and `step` runs steps; after it, the caller's thread count is
        back, after an error too.

        Args:
            threads: the most threads a step may use (the caller's count).
            product: a function without arguments that computes one of the
                steps' large products, what a try times.
        """
        import torch

        callers = torch.get_num_threads()
        self.counts = (1, threads) if threads > 1 else (1,)
        self.product = product
        if self.chosen not in self.counts:
            self.chosen = 1
        self.last_step = None
        torch.set_num_threads(self.chosen)
        try:
            yield self
        finally:
            torch.set_num_threads(callers)

    def step(self, function, *args):
        """`function(*args)` on the count chosen, trying the counts first
        when a try is due."""
        import torch

        if len(self.counts) > 1:
            self.until_try -= 1
            if self.until_try <= 0:
                self._try_counts()
            torch.set_num_threads(self.chosen)
        start = time.perf_counter()
        result = function(*args)
        seconds = time.perf_counter() - start
        if self.last_step is not None and seconds > SLOWDOWN * self.last_step:
            self.until_try = 0
        self.last_step = seconds
        return result

    def _try_counts(self):
        seconds = {count: self._time_product(count) for count in self.counts}
        fastest = min(self.counts, key=seconds.get)
        if fastest == self.chosen:
            self.wait = min(2 * self.wait, LONGEST_WAIT)
        else:
            self.chosen, self.wait = fastest, FIRST_WAIT
        self.until_try = self.wait
        self.last_step = None

    def _time_product(self, count):
        import torch

        torch.set_num_threads(count)
        self.product()
        start = time.perf_counter()
        for _ in range(TIMED_RUNS):
            self.product()
        return time.perf_counter() - start


CHOICE = ThreadChoice()
