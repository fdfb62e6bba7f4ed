"""warpt's adapter for Python benchmarks: loads the user's file and answers
the driver's requests, one JSON object per line on stdin, one reply per
line on stdout (docs/protocol.md). The channel is a private duplicate of
the descriptors the driver gave: before any user code runs, fd 1 points at
stderr and fd 0 at /dev/null, so nothing the user's code writes (print,
os.system, a C extension's printf) or reads can reach the channel.

A benchmark is a get_benchmark() factory's result, else the one class in the
file that defines benchmark_fn, with setup(), benchmark_fn(), teardown() and
optionally get_config() and validate_result(). A file with only a
run_benchmark(problem_size=..., iterations=...) function is a kernel: each
call of benchmark_fn is one run_benchmark() call.
"""
import importlib.util
import inspect
import itertools
import json
import math
import os
import random
import resource
import sys
import time
import traceback


def accepted(fn, kwargs):
    """The keyword arguments of kwargs that fn takes by name (all of them
    when it has **kwargs)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return dict(kwargs)
    names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return {k: v for k, v in kwargs.items() if k in names}


class Kernel:
    """A run_benchmark() function as a benchmark."""

    def __init__(self, fn, kwargs):
        self.fn = fn
        self.kwargs = accepted(fn, dict(kwargs, iterations=1))

    def setup(self):
        pass

    def benchmark_fn(self):
        return self.fn(**self.kwargs)

    def teardown(self):
        pass


def load(path, kwargs):
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
        return factory(**accepted(factory, kwargs))
    classes = [
        v for v in vars(module).values()
        if isinstance(v, type) and v.__module__ == module.__name__
        and callable(getattr(v, "benchmark_fn", None))
    ]
    if len(classes) == 1:
        return classes[0](**accepted(classes[0], kwargs))
    kernel = getattr(module, "run_benchmark", None)
    if not classes and callable(kernel):
        return Kernel(kernel, kwargs)
    raise LookupError(
        f"{path}: no get_benchmark() and {len(classes)} classes defining benchmark_fn "
        "(exactly one is needed)")


def reproducible(seed):
    """Seeds every generator the user's file imported; deterministic torch."""
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % 2**32)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)
        torch.use_deterministic_algorithms(True, warn_only=True)
        if hasattr(torch.backends, "cudnn"):
            torch.backends.cudnn.benchmark = False
            torch.backends.cudnn.deterministic = True


def cuda():
    """torch.cuda when the benchmark uses it, else None."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.cuda
    return None


def flatten(value, out):
    """Appends the numbers in value (a number, a sequence, an array or a
    tensor, nested) to out; False when value holds something else."""
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().double().reshape(-1).tolist()
    elif hasattr(value, "tolist"):  # a NumPy array or scalar
        value = value.tolist()
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        out.append(float(value))
        return True
    if isinstance(value, complex):
        out.extend((value.real, value.imag))
        return True
    if isinstance(value, (list, tuple)):
        return all(flatten(v, out) for v in value)
    return False


def output(last, latencies, path):
    """The reply to 'output': what the benchmark returned and what it used."""
    reply = {"ok": True, "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
             # The timer behind elapsed_ns: the host's perf_counter_ns
             # around each batch (after a CUDA synchronize when CUDA is in
             # use), and its resolution.
             "timing": "host",
             "timer_resolution_ns": max(1, round(time.get_clock_info("perf_counter").resolution * 1e9))}
    for key, values in latencies.items():
        reply[key] = values
    values = []
    if last is not None and not isinstance(last, dict) and flatten(last, values):
        if path:
            with open(path, "w") as f:
                json.dump([v if math.isfinite(v) else None for v in values], f)
        reply["output_count"] = len(values)
    elif last is not None and not isinstance(last, dict):
        reply["output_note"] = f"benchmark_fn returned a {type(last).__name__}, not numbers"
    gpu = cuda()
    if gpu is not None:
        reply["cuda_peak_allocated_bytes"] = gpu.max_memory_allocated()
        reply["cuda_allocated_bytes"] = gpu.memory_allocated()
        reply["cuda_reserved_bytes"] = gpu.memory_reserved()
    return reply


LATENCY_KEYS = ("ttft_times_ms", "tpot_times_ms")


def private_channel():
    """The protocol's (requests, replies) files on duplicates of fds 0 and
    1 (not inherited by the user's subprocesses); fd 1 then points at
    stderr and fd 0 at /dev/null."""
    sys.stdout.flush()
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull, encoding="utf-8")
    return requests, replies


def main():
    requests, channel = private_channel()

    def reply(obj):
        channel.write(json.dumps(obj) + "\n")
        channel.flush()

    bench = None
    last = None
    latencies = {}
    for line in requests:
        request = json.loads(line)
        op = request.get("op")
        try:
            if op == "load":
                bench = load(request["path"], request.get("kwargs") or {})
                if request.get("reproducible"):
                    reproducible(int(request.get("seed", 0)))
                config = bench.get_config() if callable(getattr(bench, "get_config", None)) else {}
                if config is not None and not isinstance(config, dict):
                    config = vars(config) if hasattr(config, "__dict__") else {}
                reply({"ok": True, "config": config or {}})
            elif op == "setup":
                bench.setup()
                reply({"ok": True})
            elif op == "run":
                calls = int(request["calls"])
                fn = bench.benchmark_fn
                gpu = cuda()
                if gpu is not None:
                    gpu.synchronize()
                result = None
                trace = os.environ.get("WARPT_TORCH_PROFILE")
                torch = sys.modules.get("torch") if trace else None
                start = time.perf_counter_ns()
                # itertools.repeat, as timeit's loop: range() would allocate
                # an int per call past 256.
                if torch is None:
                    for _ in itertools.repeat(None, calls):
                        result = fn()
                else:  # --profile torch: never a timed run
                    with torch.profiler.profile() as prof:
                        for _ in itertools.repeat(None, calls):
                            result = fn()
                    prof.export_chrome_trace(trace)
                if gpu is not None:
                    gpu.synchronize()
                elapsed = time.perf_counter_ns() - start
                last = result
                if isinstance(result, dict) and request.get("record", True):
                    for key in LATENCY_KEYS:
                        if key in result:
                            latencies.setdefault(key, []).extend(float(v) for v in result[key])
                reply({"ok": True, "elapsed_ns": elapsed})
            elif op == "output":
                reply(output(last, latencies, request.get("path")))
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
