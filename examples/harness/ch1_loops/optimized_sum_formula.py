"""Sum of squares of 0..n-1 in closed form: n(n-1)(2n-1)/6."""


class SumOfSquares:
    def setup(self):
        self.n = 100_000

    def benchmark_fn(self):
        n = self.n
        return n * (n - 1) * (2 * n - 1) // 6

    def teardown(self):
        pass


def get_benchmark():
    return SumOfSquares()
