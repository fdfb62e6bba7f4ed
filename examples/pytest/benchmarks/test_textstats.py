"""Benchmarks of textstats, written for pytest-benchmark: the same file runs
under `pytest` (pytest-benchmark) and `pytest --warpt` (measured and
stored by warpt)."""

import random
import string
import zlib

import pytest

from textstats import counts_counter, counts_loop, top, words

random.seed(7)
# Words of letters only (textstats.words splits on anything else).
VOCABULARY = ["".join(random.choices(string.ascii_lowercase, k=6)) for _ in range(500)]
TEXT = " ".join(random.choice(VOCABULARY) for _ in range(20_000))


def test_words(benchmark):
    assert len(benchmark(words, TEXT)) == 20_000


@pytest.mark.benchmark(group="counting")
def test_counts_loop(benchmark):
    counts = benchmark(counts_loop, TEXT)
    assert sum(counts.values()) == 20_000


@pytest.mark.benchmark(group="counting")
def test_counts_counter(benchmark):
    assert benchmark(counts_counter, TEXT) == counts_loop(TEXT)


def test_top_fresh_counts(benchmark):
    # pedantic: new counts before every round, untimed.
    def setup():
        return (counts_counter(TEXT), 10), {}

    best = benchmark.pedantic(top, setup=setup, rounds=50, warmup_rounds=2)
    assert len(best) == 10


def test_compress(benchmark):
    data = TEXT.encode()
    benchmark.extra_info["bytes"] = len(data)
    assert zlib.decompress(benchmark(zlib.compress, data, 6)) == data
