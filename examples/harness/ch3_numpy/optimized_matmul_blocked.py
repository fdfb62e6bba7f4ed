"""The same product in 32 x 32 blocks, each multiplied by NumPy."""

import numpy as np

from _shapes import matrices


class Matmul:
    def setup(self):
        self.a, self.b = matrices()

    def benchmark_fn(self):
        a, b, s = self.a, self.b, 32
        n = a.shape[0]
        c = np.zeros((n, n))
        for i in range(0, n, s):
            for j in range(0, n, s):
                for k in range(0, n, s):
                    c[i:i + s, j:j + s] += a[i:i + s, k:k + s] @ b[k:k + s, j:j + s]
        return c

    def teardown(self):
        pass
