"""warpt's adapter for Python benchmarks: loads the user's file and answers
the driver's requests, one JSON object per line on stdin, one reply per
line on stdout (docs/protocol.md). The user's own prints go to stderr, so
they cannot corrupt the channel.

A benchmark is a get_benchmark() factory's result, else the one class in the
file that defines benchmark_fn, with setup(), benchmark_fn(), teardown() and
optionally get_config() and validate_result().
"""
import importlib.util
import json
import os
import sys
import time
import traceback


def load(path):
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)
    spec = importlib.util.spec_from_file_location("warpt_user_benchmark", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} cannot be imported as Python")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    factory = getattr(module, "get_benchmark", None)
    if callable(factory):
        return factory()
    classes = [
        v for v in vars(module).values()
        if isinstance(v, type) and v.__module__ == module.__name__
        and callable(getattr(v, "benchmark_fn", None))
    ]
    if len(classes) != 1:
        raise LookupError(
            f"{path}: no get_benchmark() and {len(classes)} classes defining benchmark_fn "
            "(exactly one is needed)")
    return classes[0]()


def main():
    channel = sys.stdout
    sys.stdout = sys.stderr

    def reply(obj):
        channel.write(json.dumps(obj) + "\n")
        channel.flush()

    bench = None
    for line in sys.stdin:
        request = json.loads(line)
        op = request.get("op")
        try:
            if op == "load":
                bench = load(request["path"])
                config = bench.get_config() if callable(getattr(bench, "get_config", None)) else {}
                reply({"ok": True, "config": config or {}})
            elif op == "setup":
                bench.setup()
                reply({"ok": True})
            elif op == "run":
                calls = int(request["calls"])
                fn = bench.benchmark_fn
                start = time.perf_counter_ns()
                for _ in range(calls):
                    fn()
                elapsed = time.perf_counter_ns() - start
                reply({"ok": True, "elapsed_ns": elapsed})
            elif op == "validate":
                check = getattr(bench, "validate_result", None)
                problem = check() if callable(check) else None
                reply({"ok": True, "problem": None if problem is None else str(problem)})
            elif op == "teardown":
                bench.teardown()
                reply({"ok": True})
            elif op == "exit":
                reply({"ok": True})
                return
            else:
                reply({"ok": False, "error": f"unknown request {op!r}"})
        except BaseException as e:  # the driver decides what a failure means
            reply({"ok": False, "error": f"{type(e).__name__}: {e}",
                   "traceback": traceback.format_exc()})


main()
