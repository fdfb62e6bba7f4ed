"""Sum of squares with a generator in the built-in sum()."""


class SumOfSquares:
    def setup(self):
        self.values = list(range(100_000))

    def benchmark_fn(self):
        return sum(v * v for v in self.values)

    def teardown(self):
        self.values = None


def get_benchmark():
    return SumOfSquares()
