"""For scripts/bench-harness's overhead study: with PER_TEST_FILE set,
each test's wall time (its whole run protocol: setup, call, teardown and
reports, so whatever a benchmark plugin does around the call) and the time
spent inside test_overhead's function during it, written as JSON rows at
the session's end. Without PER_TEST_FILE it does nothing."""

import json
import os
import sys
import time

import pytest

ROWS = []


def _counted():
    module = sys.modules.get("test_overhead")
    return (module.SPENT[0], module.CALLS[0]) if module else (0, 0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if "PER_TEST_FILE" not in os.environ:
        yield
        return
    spent, calls = _counted()
    start = time.perf_counter_ns()
    yield
    wall = time.perf_counter_ns() - start
    spent_after, calls_after = _counted()
    ROWS.append({"wall_ns": wall, "spent_ns": spent_after - spent, "calls": calls_after - calls})


def pytest_sessionfinish(session):
    path = os.environ.get("PER_TEST_FILE")
    if path:
        with open(path, "w") as f:
            json.dump(ROWS, f)
