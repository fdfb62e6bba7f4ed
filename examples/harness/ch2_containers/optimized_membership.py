"""Membership tests against a set: one hash lookup each."""


class Membership:
    def get_config(self):
        return {"iterations": 1}

    def setup(self):
        self.haystack = set(range(0, 20_000, 2))
        self.needles = list(range(0, 2_000))

    def benchmark_fn(self):
        return sum(1 for n in self.needles if n in self.haystack)

    def teardown(self):
        self.haystack = None
