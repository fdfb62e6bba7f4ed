"""Twenty identical tests for scripts/bench-harness's overhead study: each
benchmarks a ~50 us function that adds its own running time to SPENT, so
a pytest session's wall time less the time inside the function (and less
pytest's own start-up, measured with --benchmark-disable) is what the
plugin costs."""

import json
import os
import time

import pytest

SPENT = [0]


def work():
    start = time.perf_counter_ns()
    x = sum(range(2500))
    SPENT[0] += time.perf_counter_ns() - start
    return x


@pytest.fixture(scope="session", autouse=True)
def report_spent():
    yield
    with open(os.environ["SPENT_FILE"], "w") as f:
        json.dump({"spent_ns": SPENT[0]}, f)


@pytest.mark.parametrize("i", range(20))
def test_work(benchmark, i):
    assert benchmark(work) == sum(range(2500))
