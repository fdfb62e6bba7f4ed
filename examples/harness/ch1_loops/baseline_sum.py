"""Sum of squares with an explicit Python loop: the baseline."""


class SumOfSquares:
    def setup(self):
        self.values = list(range(100_000))

    def benchmark_fn(self):
        total = 0
        for v in self.values:
            total += v * v
        return total

    def teardown(self):
        self.values = None


def get_benchmark():
    return SumOfSquares()
