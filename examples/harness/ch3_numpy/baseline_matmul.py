"""A 96 x 96 matrix product in plain Python loops over NumPy arrays."""

import numpy as np

from _shapes import matrices


class Matmul:
    def setup(self):
        self.a, self.b = matrices()

    def benchmark_fn(self):
        a, b = self.a.tolist(), self.b.tolist()
        n = len(a)
        c = [[0.0] * n for _ in range(n)]
        for i in range(n):
            row = c[i]
            for k in range(n):
                aik = a[i][k]
                bk = b[k]
                for j in range(n):
                    row[j] += aik * bk[j]
        return np.array(c)

    def teardown(self):
        pass
