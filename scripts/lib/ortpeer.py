"""ONNX Runtime as a peer of warpt's encoders and CNNs (bert_infer,
resnet50_infer, embed), shared by scripts/bench-mlperf and
scripts/bench-pepbench.

The model is the one the PyTorch peer runs, same weights and shapes,
exported once with torch.onnx (the torch.export-based exporter, PyTorch's
default), then served as an ONNX Runtime user serves it on a CPU: the CPU
execution provider (MLAS kernels), every graph optimisation on
(ORT_ENABLE_ALL: constant folding, NCHWc convolutions, GEMM and activation
fusions), one intra-op thread per CPU, sequential execution. Transformers
also go through ORT's transformer optimizer first (model_type "bert":
Gelu, LayerNorm and SkipLayerNorm fusions, and its Attention fusion where
it recognises the graph) when that is the faster of the two graphs on
this host: `session` times both and keeps the faster, so the peer is ORT
at its best here, not at a configuration chosen for it.

ORT's CPU execution provider has no bf16 or fp16 matrix products on x86,
so it is a peer in f32; warpt's bf16 and f16 are held against PyTorch.
Every session's output is checked against PyTorch's before it is timed.
"""
import contextlib
import io
import os
import statistics
import time
from pathlib import Path


def version():
    import onnxruntime
    return onnxruntime.__version__


def export(module, args, input_names, path):
    """Writes `module` called on `args` (a tuple of tensors, fixed shapes)
    to the ONNX file `path` with torch.onnx, its progress lines and the
    graph optimizer's notes kept out of the script's output."""
    import torch
    module.eval()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
            torch.no_grad():
        torch.onnx.export(module, args, str(path), input_names=list(input_names), dynamo=True,
                          external_data=False)
    return Path(path)


def _session(path):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.intra_op_num_threads = os.cpu_count()
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.log_severity_level = 3
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def _fused(path, heads, hidden):
    """The graph through ORT's transformer optimizer (BERT fusions)."""
    from onnxruntime.transformers import optimizer
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        model = optimizer.optimize_model(str(path), model_type="bert", num_heads=heads,
                                         hidden_size=hidden)
    out = Path(path).with_suffix(".fused.onnx")
    model.save_model_to_file(str(out))
    fused = {k: v for k, v in model.get_fused_operator_statistics().items() if v}
    return out, fused


def _seconds_per_run(sess, feeds, runs=3):
    sess.run(None, feeds)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def session(path, feeds, reference, tolerance, transformer=None):
    """An InferenceSession on the ONNX file `path`, checked: its first
    output on `feeds` (numpy arrays by input name) must be within
    `tolerance` of `reference` (PyTorch's output, numpy; the largest
    absolute difference over the reference's largest magnitude, or over 1
    when that is smaller), else this raises. `transformer` = (heads, hidden) also
    tries ORT's transformer optimizer and keeps the faster graph. Returns
    (session, a line saying which graph runs)."""
    import numpy as np
    candidates = [(_session(path), "ORT_ENABLE_ALL")]
    if transformer:
        fused_path, fused = _fused(path, *transformer)
        ops = ", ".join(f"{k} {v}" for k, v in sorted(fused.items())) or "nothing fused"
        candidates.append((_session(fused_path), f"transformer optimizer ({ops}) + ORT_ENABLE_ALL"))
    for sess, what in candidates:
        got = sess.run(None, feeds)[0]
        err = float(np.max(np.abs(got - reference)) / max(1.0, float(np.max(np.abs(reference)))))
        if not err <= tolerance:
            raise RuntimeError(f"ONNX Runtime ({what}) differs from PyTorch by {err:g} "
                               f"(tolerance {tolerance:g}) on {path}")
    if len(candidates) == 1:
        return candidates[0]
    timed = sorted(((_seconds_per_run(s, feeds), s, w) for s, w in candidates), key=lambda t: t[0])
    best, other = timed[0], timed[1]
    return best[1], f"{best[2]}; {best[0] * 1e3:.1f} ms a run against {other[0] * 1e3:.1f} for {other[2]}"


def describe():
    """The peer in a line, for a script's notes."""
    return (f"ONNX Runtime {version()}, CPU execution provider, ORT_ENABLE_ALL, "
            f"{os.cpu_count()} intra-op threads")
