"""Membership tests against a list: a linear scan each."""


class Membership:
    def get_config(self):
        return {"iterations": 1}

    def setup(self):
        self.haystack = list(range(0, 20_000, 2))
        self.needles = list(range(0, 2_000))

    def benchmark_fn(self):
        return sum(1 for n in self.needles if n in self.haystack)

    def teardown(self):
        self.haystack = None
