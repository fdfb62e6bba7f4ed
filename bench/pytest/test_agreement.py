"""Ten pytest-benchmark tests for scripts/bench-harness's agreement study
(PARTS=pytest): the same file measured by pytest-benchmark and by warpt's
plugin. Pure Python, NumPy, C extensions, a pedantic test with a setup,
and a pair that is 2x by construction (test_sort_twice sorts the same list
twice per call). SLOWER=1.5 makes test_hash 1.5x slower by construction
(three digests per call instead of two)."""

import hashlib
import os
import random
import zlib

import pytest

random.seed(11)
NUMBERS = [random.random() for _ in range(2000)]
SMALL = list(range(100))
TEXT = " ".join(f"w{random.randrange(1000)}" for _ in range(5000))
BLOB = TEXT.encode() * 4
DIGESTS = int(2 * float(os.environ.get("SLOWER", "1")))


def test_sum_small(benchmark):
    assert benchmark(sum, SMALL) == 4950


def test_sort(benchmark):
    assert benchmark(sorted, NUMBERS)[0] == min(NUMBERS)


def test_sort_twice(benchmark):
    def twice():
        sorted(NUMBERS)
        return sorted(NUMBERS)

    assert benchmark(twice)[0] == min(NUMBERS)


def test_dict_build(benchmark):
    assert len(benchmark(lambda: {i: str(i) for i in range(1000)})) == 1000


def test_split_join(benchmark):
    assert benchmark(lambda: " ".join(TEXT.split())) == TEXT


def test_numpy_dot(benchmark):
    np = pytest.importorskip("numpy")
    a = np.arange(100_000, dtype=np.float64)
    assert benchmark(np.dot, a, a) > 0


def test_numpy_sort(benchmark):
    np = pytest.importorskip("numpy")
    a = np.random.default_rng(3).random(50_000)
    assert benchmark(np.sort, a)[0] == a.min()


def test_zlib(benchmark):
    assert zlib.decompress(benchmark(zlib.compress, BLOB, 6)) == BLOB


def test_hash(benchmark):
    def digests():
        for _ in range(DIGESTS):
            h = hashlib.sha256(BLOB).digest()
        return h

    assert len(benchmark(digests)) == 32


def test_pedantic_shuffle_sort(benchmark):
    def setup():
        data = NUMBERS[:]
        random.shuffle(data)
        return (data,), {}

    assert benchmark.pedantic(sorted, setup=setup, rounds=300, warmup_rounds=5)[0] == min(NUMBERS)
