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

Timing modes (docs/harness.md): host (perf_counter_ns around a batch of
calls, after a CUDA synchronize), device (CUDA events, the host timer when
the benchmark does not use CUDA), pytorch (torch.utils.benchmark.Timer's
blocked_autorange, each block a sample) and triton (triton.testing.do_bench,
each timed call a sample).
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
import ctypes
import gc
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


def import_file(path, name):
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} cannot be imported as Python")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load(path, kwargs, function_name=None):
    module = import_file(path, "warpt_user_benchmark")
    if function_name:  # bench.yaml names the kernel's function
        fn = getattr(module, function_name, None)
        if not callable(fn):
            raise LookupError(f"{path}: bench.yaml's function_name is {function_name!r}, "
                              "which the file does not define")
        return Kernel(fn, kwargs)
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


def reference(request, kernel_path):
    """Calls bench.yaml's reference function with the kernel's arguments and
    writes the numbers it returns (as `output` does) to request["path"]."""
    path = request.get("file") or kernel_path
    module = import_file(path, "warpt_reference")
    fn = getattr(module, request["function"], None)
    if not callable(fn):
        raise LookupError(f"{path}: the reference {request['function']!r} is not defined there")
    kwargs = dict(request.get("kwargs") or {}, iterations=1)
    expected = fn(**accepted(fn, kwargs))
    settle(expected)
    values = []
    if not flatten(expected, values):
        raise TypeError(f"the reference {request['function']!r} returned a "
                        f"{type(expected).__name__}, not numbers")
    write_numbers(request["path"], values)
    return len(values)


def settle(value):
    """Waits until JAX has computed value, when JAX is loaded: its dispatch
    is asynchronous (a call returns before its work is done), and it runs a
    device's work in order, so the last call's result being ready means
    every call before it is done too."""
    jax = sys.modules.get("jax")
    if jax is not None and value is not None:
        jax.block_until_ready(value)
        return True
    return False


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


TIMINGS = ("host", "device", "pytorch", "triton")

# CUDA events: "a resolution of around 0.5 microseconds" (CUDA runtime API,
# cudaEventElapsedTime).
CUDA_EVENT_RESOLUTION_NS = 500


class Skip(Exception):
    """The benchmark cannot run here as configured: a skip, not a failure."""


def host_resolution_ns():
    return max(1, round(time.get_clock_info("perf_counter").resolution * 1e9))


def setting(key, flags, config, defaults, fallback):
    """A run setting and where it came from: a flag beats get_config(),
    which beats bench.yaml, which beats the default."""
    for source, layer in (("flag", flags), ("get_config()", config), ("bench.yaml", defaults)):
        if layer.get(key) is not None:
            return layer[key], source
    return fallback, "default"


def llc_bytes():
    """The largest CPU cache's size (sysfs), 64 MiB when unknown."""
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        names = os.listdir(base)
    except OSError:
        names = []
    for name in names:
        try:
            with open(os.path.join(base, name, "size")) as f:
                text = f.read().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best or 64 << 20


class Flusher:
    """Evicts the cache between calls (cold_cache): zeroes a buffer of the
    GPU's L2 size when the benchmark uses CUDA, else writes one of the
    CPU's last-level cache size."""

    def __init__(self, gpu):
        self.gpu = gpu
        if gpu is not None:
            torch = sys.modules["torch"]
            props = gpu.get_device_properties(gpu.current_device())
            self.size = int(getattr(props, "L2_cache_size", 0)) or 256 << 20
            self.buffer = torch.empty(self.size, dtype=torch.int8, device="cuda")
            self.what = f"GPU L2: {self.size} bytes zeroed before every call"
        else:
            self.size = llc_bytes()
            self.buffer = (ctypes.c_char * self.size)()
            self.what = f"CPU last-level cache: {self.size} bytes written before every call"
        self.value = 0

    def __call__(self):
        if self.gpu is not None:
            self.buffer.zero_()
        else:
            self.value = (self.value + 1) % 251
            ctypes.memset(self.buffer, self.value, self.size)


class Timing:
    """How a batch of calls is timed, as the load request and get_config()
    settle it; what was used is reported by output."""

    def __init__(self, config, request):
        flags = request.get("settings") or {}
        defaults = request.get("defaults") or {}
        self.requested, self.source = setting("timing", flags, config, defaults, "host")
        if self.requested not in TIMINGS:
            raise ValueError(f"timing {self.requested!r} ({self.source}) is not one of "
                             f"{', '.join(TIMINGS)}")
        self.cold_cache = bool(setting("cold_cache", flags, config, defaults, False)[0])
        self.hygiene = bool(setting("device_hygiene", flags, config, defaults, True)[0])
        self.min_run_time = float(setting("min_run_time", flags, config, defaults, 0.05)[0])
        self.triton_warmup = float(setting("triton_warmup_ms", flags, config, defaults, 25)[0])
        self.triton_rep = float(setting("triton_rep_ms", flags, config, defaults, 100)[0])
        self.block = None  # pytorch timing: the calls per block torch chose
        self.synced = None  # how asynchronous work was waited for, if it was
        self.used = None
        self.note = None
        self.flusher = None
        self.hygiene_done = None
        self.resolution_ns = host_resolution_ns()
        if self.requested in ("pytorch", "triton"):
            try:
                import torch  # noqa: F401  (the mode is torch's)
            except ImportError:
                raise Skip(f"timing {self.requested} needs torch, which {sys.executable} "
                           "cannot import")
        if self.requested == "triton":
            torch = sys.modules["torch"]
            if not torch.cuda.is_available():
                raise Skip("timing triton needs a CUDA device (torch.cuda.is_available() is "
                           "False here): triton.testing.do_bench times GPU kernels only")
            try:
                import triton.testing  # noqa: F401
            except ImportError:
                raise Skip(f"timing triton needs triton, which {sys.executable} cannot import")

    def clean(self):
        """Device hygiene before the first timed call: Python's garbage
        collected; with CUDA, synchronize, empty_cache and
        reset_peak_memory_stats, so the peak is the benchmark's own."""
        if self.hygiene_done is not None:
            return
        if not self.hygiene:
            self.hygiene_done = "off"
            return
        gc.collect()
        gpu = cuda()
        if gpu is not None:
            gpu.synchronize()
            gpu.empty_cache()
            gpu.reset_peak_memory_stats()
            self.hygiene_done = "gc.collect(); torch.cuda synchronize, empty_cache, reset_peak_memory_stats"
        else:
            self.hygiene_done = "gc.collect() (no CUDA in use)"

    def flush(self):
        if self.cold_cache:
            if self.flusher is None:
                self.flusher = Flusher(cuda())
            self.flusher()

    def run(self, fn, calls):
        """Times `calls` calls of fn: (list of nanoseconds, calls each, the
        last call's return). The loops call fn itself: a wrapper keeping
        its return would add a Python call to every timed call."""
        self.clean()
        gpu = cuda()
        mode = self.requested
        if mode == "device" and gpu is None:
            self.note = ("device timing asked for, but the benchmark does not use CUDA: "
                         "timed with the host timer")
            mode = "host"
        if mode == "pytorch":
            return self.pytorch(fn, calls)
        if mode == "triton":
            return self.triton(fn)
        self.used = mode
        if mode == "device":
            self.resolution_ns = CUDA_EVENT_RESOLUTION_NS
            return self.events(fn, calls, gpu)
        return self.host(fn, calls, gpu)

    def host(self, fn, calls, gpu):
        last = None
        if gpu is not None:
            gpu.synchronize()
        if self.cold_cache:
            samples = []
            for _ in itertools.repeat(None, calls):
                self.flush()
                start = time.perf_counter_ns()
                last = fn()
                if gpu is not None:
                    gpu.synchronize()
                synced = settle(last)
                samples.append(time.perf_counter_ns() - start)
                self.note_sync(synced)
            return samples, 1, last
        start = time.perf_counter_ns()
        # itertools.repeat, as timeit's loop: range() would allocate an int
        # per call past 256.
        for _ in itertools.repeat(None, calls):
            last = fn()
        if gpu is not None:
            gpu.synchronize()
        synced = settle(last)
        elapsed = time.perf_counter_ns() - start
        self.note_sync(synced)
        return [elapsed], calls, last

    def note_sync(self, synced):
        if synced:
            self.synced = "jax.block_until_ready on each batch's last result"

    def events(self, fn, calls, gpu):
        torch = sys.modules["torch"]
        last = None
        gpu.synchronize()
        if self.cold_cache:
            pairs = []
            for _ in itertools.repeat(None, calls):
                self.flush()
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                last = fn()
                b.record()
                pairs.append((a, b))
            gpu.synchronize()
            return [round(a.elapsed_time(b) * 1e6) for a, b in pairs], 1, last
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in itertools.repeat(None, calls):
            last = fn()
        b.record()
        b.synchronize()
        return [round(a.elapsed_time(b) * 1e6)], calls, last

    def pytorch(self, fn, calls):
        torch = sys.modules["torch"]
        from torch.utils import benchmark as tb
        self.used = "pytorch"
        threads = torch.get_num_threads()
        # The statement keeps the return in Timer's own loop, no extra call.
        last = [None]
        names = {"fn": fn, "last": last, "flush": self.flush}
        if self.cold_cache:
            timer = tb.Timer(stmt="last[0] = fn()", setup="flush()", num_threads=threads,
                             globals=names)
            samples = [round(timer.timeit(1).times[0] * 1e9) for _ in range(max(1, calls))]
            return samples, 1, last[0]
        timer = tb.Timer(stmt="last[0] = fn()", num_threads=threads, globals=names)
        if self.block is None:
            # The first request (a warm-up one) lets torch pick the block:
            # blocked_autorange's own estimate, then its blocks.
            m = timer.blocked_autorange(min_run_time=self.min_run_time)
            self.block = int(m.number_per_run)
            times = m.times
        else:
            # blocked_autorange without estimating the block again (its
            # estimate alone runs ~1.1 blocks): blocks of the size it
            # chose until min_run_time has passed.
            times, spent = [], 0.0
            while not times or spent < self.min_run_time:
                t = timer.timeit(self.block).times[0]
                times.append(t)
                spent += t * self.block
        # The times are per call; each block of `block` calls is a sample.
        n = self.block
        return [round(t * n * 1e9) for t in times], n, last[0]

    def triton(self, fn):
        import triton.testing
        self.used = "triton"
        self.resolution_ns = CUDA_EVENT_RESOLUTION_NS
        last = [None]

        def call():  # do_bench takes a callable; its events time the GPU work
            last[0] = fn()
        try:
            times = triton.testing.do_bench(call, warmup=self.triton_warmup, rep=self.triton_rep,
                                            return_mode="all")
        except TypeError:  # a triton without return_mode="all": its quantiles
            q = [i / 20 for i in range(1, 20)]
            times = triton.testing.do_bench(call, warmup=self.triton_warmup, rep=self.triton_rep,
                                            quantiles=q)
        return [max(1, round(float(t) * 1e6)) for t in times], 1, last[0]

    def report(self, reply):
        reply["timing"] = self.used or self.requested
        reply["timer_resolution_ns"] = self.resolution_ns
        if self.requested != reply["timing"] or self.source != "default":
            reply["timing_requested"] = f"{self.requested} ({self.source})"
        if self.note:
            reply["timing_note"] = self.note
        if self.hygiene_done:
            reply["device_hygiene"] = self.hygiene_done
        if self.flusher is not None:
            reply["cold_cache"] = self.flusher.what
        if self.synced:
            reply["sync"] = self.synced


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


def write_numbers(path, values):
    """The numbers an answer holds, as the JSON array warpt compares
    (null for a non-finite one)."""
    with open(path, "w") as f:
        json.dump([v if math.isfinite(v) else None for v in values], f)


def output(last, latencies, path, timing):
    """The reply to 'output': what the benchmark returned and what it used."""
    reply = {"ok": True, "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    if timing is not None:
        timing.report(reply)
    for key, values in latencies.items():
        reply[key] = values
    values = []
    if last is not None and not isinstance(last, dict) and flatten(last, values):
        if path:
            write_numbers(path, values)
        reply["output_count"] = len(values)
    elif last is not None and not isinstance(last, dict):
        reply["output_note"] = f"benchmark_fn returned a {type(last).__name__}, not numbers"
    gpu = cuda()
    if gpu is not None:
        reply["cuda_peak_allocated_bytes"] = gpu.max_memory_allocated()
        reply["cuda_allocated_bytes"] = gpu.memory_allocated()
        reply["cuda_reserved_bytes"] = gpu.memory_reserved()
        reply["peak_device_memory_bytes"] = gpu.max_memory_allocated()
    return reply


LATENCY_KEYS = ("ttft_times_ms", "tpot_times_ms")


def keep_latencies(last, latencies):
    """Adds the per-request latencies a batch's last call returned."""
    if isinstance(last, dict):
        for key in LATENCY_KEYS:
            if key in last:
                latencies.setdefault(key, []).extend(float(v) for v in last[key])


def user_traceback(e):
    """The traceback from the user's first frame on: the adapter's own
    frames (compiled from the "<string>" given to python -c) left out."""
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(e), e, tb))


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
    path = None
    timing = None
    last = None
    latencies = {}
    for line in requests:
        request = json.loads(line)
        op = request.get("op")
        try:
            if op == "load":
                path = request["path"]
                bench = load(path, request.get("kwargs") or {},
                             (request.get("defaults") or {}).get("function_name"))
                if request.get("reproducible"):
                    reproducible(int(request.get("seed", 0)))
                config = bench.get_config() if callable(getattr(bench, "get_config", None)) else {}
                if config is not None and not isinstance(config, dict):
                    config = vars(config) if hasattr(config, "__dict__") else {}
                timing = Timing(config or {}, request)
                reply({"ok": True, "config": config or {}, "timing": timing.requested,
                       "cold_cache": timing.cold_cache})
            elif op == "setup":
                if request.get("again"):
                    # The next trial in this interpreter: nothing of the
                    # last one's answer or requests carries over.
                    last = None
                    latencies = {}
                    if request.get("seed") is not None:
                        reproducible(int(request["seed"]))
                bench.setup()
                reply({"ok": True})
            elif op == "run":
                calls = int(request["calls"])
                fn = bench.benchmark_fn
                trace = os.environ.get("WARPT_TORCH_PROFILE")
                torch = sys.modules.get("torch") if trace else None
                record = request.get("record", True)
                if torch is None:
                    # `samples`: that many batches, back to back (a timer
                    # that picks its own batches gives its samples at once).
                    samples = []
                    for _ in range(max(1, int(request.get("samples", 1)))):
                        more, per, last = timing.run(fn, calls)
                        samples += more
                        if record:
                            keep_latencies(last, latencies)
                        if per != calls:
                            break
                else:  # --profile torch: never a timed run
                    with torch.profiler.profile() as prof:
                        samples, per, last = timing.run(fn, calls)
                    prof.export_chrome_trace(trace)
                    if record:
                        keep_latencies(last, latencies)
                reply({"ok": True, "samples_ns": samples, "calls": per,
                       "elapsed_ns": sum(samples)})
            elif op == "output":
                reply(output(last, latencies, request.get("path"), timing))
            elif op == "reference":
                reply({"ok": True, "count": reference(request, path)})
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
        except Skip as e:
            reply({"ok": False, "error": str(e), "skipped": str(e)})
        except BaseException as e:  # the driver decides what a failure means
            reply({"ok": False, "error": f"{type(e).__name__}: {e}",
                   "traceback": user_traceback(e)})


main()
