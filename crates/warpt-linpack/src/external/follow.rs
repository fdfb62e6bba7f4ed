//! Running HPL while reading its output as it appears, so each part of the
//! run is held to a limit reckoned from its own work.
//!
//! An HPL invocation is several parts of very different lengths: hpcc first
//! runs its other tests (RandomAccess, PTRANS, DGEMM, STREAM, FFT), whose
//! sizes follow N; then HPL solves N once as warm-up and `runs` more times.
//! A fixed limit is wrong for all of them at once. Here each part announces
//! its limit to the supervisor as it begins: hpcc's tests and the warm-up
//! solve from N³ at a deliberately low floor rate (a 30th of this machine's
//! own fp64 GEMM rate, measured in a fraction of a second before HPL starts),
//! the measured solves from the rate HPL's warm-up solve reached. A timeout
//! then names the part that was slow and the arithmetic behind its limit.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use faer::{Accum, Mat, Par};
use warpt_harness::{BenchmarkError, Measure, Stage};

use crate::hpl;
use crate::hpl_io::{HplInput, Tool, completed};

/// How much slower than faer's GEMM a BLAS may be before HPL's time
/// limits stop it (the reference BLAS is 10-20x slower).
const SLOWEST_BLAS: f64 = 30.0;

/// Time allowed on top of every reckoned part: process and MPI start,
/// matrix generation, residual checks, hpcc's summary.
const MARGIN_S: f64 = 30.0;

/// How much longer than the warm-up solve a measured solve may take.
const SOLVE_SPREAD: f64 = 3.0;

/// hpcc's tests before HPL, seconds per byte of HPL's matrix, beyond the
/// DGEMM counted in flops: they are sized by the matrix's memory and take
/// 15 s at N = 3000 and 59 s at N = 6000 on a 2-core VM with OpenBLAS
/// (2.0e-7 s per byte); five times that.
const HPCC_S_PER_MATRIX_BYTE: f64 = 1e-6;

/// How often the output is read.
const POLL: Duration = Duration::from_millis(100);

/// What HPL's run may take, reckoned before it starts.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// The floor rate, GFLOP/s: this machine's GEMM rate / `SLOWEST_BLAS`.
    pub floor_gflops: f64,
    /// One solve of N at the floor rate, seconds.
    pub solve_s: f64,
    /// hpcc's tests before HPL, seconds (0 for xhpl).
    pub pre_s: f64,
}

impl Budget {
    /// The budget of `input` run by `tool` on a machine whose fp64 GEMM
    /// runs at `gemm_gflops`.
    pub fn new(input: &HplInput, tool: Tool, gemm_gflops: f64) -> Budget {
        let floor_gflops = (gemm_gflops / SLOWEST_BLAS).max(0.05);
        let solve_s = hpl::flops(input.n) / 1e9 / floor_gflops;
        let pre_s = match tool {
            Tool::Xhpl => 0.0,
            // Star and Single DGEMM each multiply matrices of order N/sqrt(3):
            // 2 (N/sqrt3)^3 flops, about 0.58 of a solve, twice.
            Tool::Hpcc => 1.2 * solve_s + (input.n * input.n) as f64 * 8.0 * HPCC_S_PER_MATRIX_BYTE,
        };
        Budget {
            floor_gflops,
            solve_s,
            pre_s,
        }
    }
}

/// This machine's fp64 GEMM rate through faer on every core, GFLOP/s: the
/// best of a few products of order 512 (a fraction of a second).
pub fn gemm_gflops() -> f64 {
    let n = 512;
    let a = Mat::<f64>::from_fn(n, n, |i, j| ((i * 7 + j * 3) % 11) as f64 - 5.0);
    let b = Mat::<f64>::from_fn(n, n, |i, j| ((i * 5 + j) % 13) as f64 - 6.0);
    let mut c = Mat::<f64>::zeros(n, n);
    let mut best = f64::INFINITY;
    for _ in 0..4 {
        let t = Instant::now();
        faer::linalg::matmul::matmul(
            c.as_mut(),
            Accum::Replace,
            a.as_ref(),
            b.as_ref(),
            1.0,
            Par::rayon(0),
        );
        best = best.min(t.elapsed().as_secs_f64());
    }
    std::hint::black_box(&c);
    2.0 * (n * n * n) as f64 / best.max(1e-9) / 1e9
}

/// A finished HPL invocation.
pub struct Finished {
    /// How it exited.
    pub status: ExitStatus,
    /// HPL's report: stdout for xhpl, `hpccoutf.txt` for hpcc.
    pub output: String,
    /// Its standard error.
    pub stderr: String,
    /// Its wall time.
    pub elapsed: Duration,
}

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// hpcc's other tests.
    Before,
    /// HPL's warm-up solve.
    Warmup,
    /// The measured solves (and, for hpcc, its summary).
    Measured,
}

/// Runs `cmd` (HPL in `dir`, solving `input`), announcing each part's limit
/// through `measure` as it begins, and returns what HPL wrote.
pub fn follow(
    mut cmd: Command,
    tool: Tool,
    dir: &Path,
    input: &HplInput,
    budget: &Budget,
    measure: &mut Measure<'_>,
) -> Result<Finished, BenchmarkError> {
    let n = input.n;
    let solve_part = |already: Duration| {
        (
            already + secs(MARGIN_S + budget.solve_s),
            format!(
                "HPL's warm-up solve of N = {n}: allowed {:.0} s, N³ at {:.2} GFLOP/s (a {SLOWEST_BLAS:.0}th of \
                 this machine's fp64 GEMM rate)",
                MARGIN_S + budget.solve_s,
                budget.floor_gflops
            ),
        )
    };
    let (limit, part) = match tool {
        Tool::Xhpl => solve_part(Duration::ZERO),
        Tool::Hpcc => (
            secs(MARGIN_S + budget.pre_s + budget.solve_s),
            format!(
                "hpcc's tests before HPL (RandomAccess, PTRANS, DGEMM, STREAM, FFT, sized by N = {n}) and HPL's \
                 warm-up solve: allowed {:.0} s at {:.2} GFLOP/s",
                MARGIN_S + budget.pre_s + budget.solve_s,
                budget.floor_gflops
            ),
        ),
    };
    measure.limit_stage(Stage::Warmup, limit, &part);

    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| BenchmarkError::Failed(format!("cannot run {:?}: {e}", cmd.get_program())))?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let report = |stdout: &Arc<Mutex<String>>| match tool {
        Tool::Xhpl => stdout.lock().map(|s| s.clone()).unwrap_or_default(),
        Tool::Hpcc => std::fs::read_to_string(dir.join("hpccoutf.txt")).unwrap_or_default(),
    };

    let mut part = match tool {
        Tool::Xhpl => Part::Warmup,
        Tool::Hpcc => Part::Before,
    };
    let status = loop {
        let done = poll(&mut child)?;
        let text = report(&stdout.0);
        if part == Part::Before && text.contains("Begin of HPL section") {
            part = Part::Warmup;
            let (limit, what) = solve_part(started.elapsed());
            measure.limit_stage(Stage::Warmup, limit, &what);
        }
        let results = completed(&text);
        if part != Part::Measured
            && let Some(first) = results.first()
        {
            part = Part::Measured;
            measure.begin_measurement();
            // HPL's own time for the warm-up (from its Gflops column, which
            // has more digits than its Time column).
            let first_s = (hpl::flops(n) / 1e9 / first.gflops).max(0.01);
            let left = input.solves.saturating_sub(1);
            let allowed = MARGIN_S + left as f64 * first_s * SOLVE_SPREAD;
            measure.limit_stage(
                Stage::Measure,
                secs(allowed),
                &format!(
                    "HPL's {left} measured solve(s) of N = {n}: allowed {allowed:.0} s, {SOLVE_SPREAD:.0}x the \
                     warm-up's {first_s:.2} s ({:.2} GFLOP/s) each",
                    first.gflops
                ),
            );
        }
        if part == Part::Measured {
            let measured = results.len().saturating_sub(1);
            let of = input.solves.saturating_sub(1).max(1);
            measure.report_progress(&format!("HPL N={n}"), measured as f64 / of as f64, measured);
        }
        if let Some(status) = done {
            break status;
        }
        std::thread::sleep(POLL);
    };
    let elapsed = started.elapsed();
    let printed = stdout.wait();
    let output = match tool {
        Tool::Xhpl => printed,
        Tool::Hpcc => std::fs::read_to_string(dir.join("hpccoutf.txt")).unwrap_or_default(),
    };
    Ok(Finished {
        status,
        output,
        stderr: stderr.wait(),
        elapsed,
    })
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(0.0))
}

fn poll(child: &mut Child) -> Result<Option<ExitStatus>, BenchmarkError> {
    child
        .try_wait()
        .map_err(|e| BenchmarkError::Failed(format!("cannot wait for HPL: {e}")))
}

/// A pipe read to its end by a thread, its text growing as it arrives.
struct Drained(Arc<Mutex<String>>, Option<JoinHandle<()>>);

impl Drained {
    /// The whole text once the pipe closed.
    fn wait(mut self) -> String {
        if let Some(t) = self.1.take() {
            let _ = t.join();
        }
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> Drained {
    let text = Arc::new(Mutex::new(String::new()));
    let thread = pipe.map(|mut pipe| {
        let text = Arc::clone(&text);
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(read) = pipe.read(&mut buf) {
                if read == 0 {
                    break;
                }
                if let Ok(mut t) = text.lock() {
                    t.push_str(&String::from_utf8_lossy(&buf[..read]));
                }
            }
        })
    });
    Drained(text, thread)
}
