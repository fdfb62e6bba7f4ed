"""The host a bench script's figures come from: the CPU model, the CPUs
this process may use and the SIMD flags that decide which kernels run, as
lscpu says. Every bench script prints it with its table."""
import os
import subprocess


def host():
    """`Model name, N CPUs, simd flags` of this machine."""
    try:
        info = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        info = ""
    model = next((l.split(":", 1)[1].strip() for l in info.splitlines() if l.startswith("Model name")), "?")
    flags = next((l.split(":", 1)[1].split() for l in info.splitlines() if l.startswith("Flags")), [])
    simd = [f for f in flags if f in ("avx2", "fma", "f16c", "asimd", "asimddp", "i8mm")
            or f.startswith(("avx512", "amx", "avx_vnni"))]
    return f"{model}, {len(os.sched_getaffinity(0))} CPUs, {' '.join(simd) or 'no SIMD flags listed'}"
