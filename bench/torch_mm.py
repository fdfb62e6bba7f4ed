"""torch.matmul, the PyTorch peer of warpt's micro/gemm (MKL for fp64 and
fp32, oneDNN for bf16, AMX where the CPU has it).

usage: python torch_mm.py fp64|fp32|bf16 N REPS SAMPLES THREADS
prints: precision=.. n=.. median_gflops=.. best_gflops=.. peer=torch.matmul
(2 n^3 flops per product, as warpt counts; square row-major operands
uniform in [-0.5, 0.5).)
"""
import sys, time, torch, statistics
prec, n, reps, samples, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
torch.set_num_threads(threads)
dt = {"fp64": torch.float64, "fp32": torch.float32, "bf16": torch.bfloat16}[prec]
g = torch.Generator().manual_seed(7)
a = (torch.rand(n, n, generator=g, dtype=torch.float32) - 0.5).to(dt)
b = (torch.rand(n, n, generator=g, dtype=torch.float32) - 0.5).to(dt)
c = torch.empty(n, n, dtype=dt)
torch.matmul(a, b, out=c)
secs = []
for s in range(samples):
    t = time.perf_counter()
    for _ in range(reps):
        torch.matmul(a, b, out=c)
    secs.append(time.perf_counter() - t)
secs.sort()
print(f"precision={prec} n={n} median_gflops={2*n**3*reps/statistics.median(secs)/1e9:.3f} best_gflops={2*n**3*reps/secs[0]/1e9:.3f} peer=torch.matmul-{torch.__version__}")
