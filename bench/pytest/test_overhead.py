"""Identical tests for scripts/bench-harness's overhead study
(OVERHEAD_TESTS of them, 20 unless set): each benchmarks a ~1 ms function
that adds its own running time to SPENT (and counts its calls), so a test's
wall time (conftest.py records it) less the time inside the function (and
less pytest's own, measured with --benchmark-disable) is what the plugin
costs.

A millisecond, not less: each call also costs a little outside its timed
region (the loop's step, the call itself: 0.2-0.4 us, measured apart and
taken off per call), and with a 50 us function a tool's 4,000-12,000 calls
a test made that correction, wandering with the host, larger than the
overhead it was to reveal."""

import json
import os
import time

import pytest

#: The sum work() computes: about 1 ms of CPython.
WORK = 50_000

#: Nanoseconds inside the function's timed region, and calls made.
SPENT = [0]
CALLS = [0]


def work():
    CALLS[0] += 1
    start = time.perf_counter_ns()
    x = sum(range(WORK))
    SPENT[0] += time.perf_counter_ns() - start
    return x


def outside_ns_per_call(calls=2000):
    """What a call costs beyond its timed region (the call itself, the
    bookkeeping, a plain loop's step), in this interpreter: the study
    takes it off each tool's figure per call made, so what remains is the
    fixed cost beyond the measured calls."""
    SPENT[0] = 0
    start = time.perf_counter_ns()
    for _ in range(calls):
        work()
    return (time.perf_counter_ns() - start - SPENT[0]) / calls


@pytest.fixture(scope="session", autouse=True)
def report_spent():
    yield
    with open(os.environ["SPENT_FILE"], "w") as f:
        json.dump({"spent_ns": SPENT[0], "calls": CALLS[0]}, f)


@pytest.mark.parametrize("i", range(int(os.environ.get("OVERHEAD_TESTS", "20"))))
def test_work(benchmark, i):
    assert benchmark(work) == sum(range(WORK))
