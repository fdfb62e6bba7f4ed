//! `linpack_external`: HPL itself — `xhpl`, or the HPL inside `hpcc` — run
//! with a generated input file, its result lines parsed into warpt's metrics.
//!
//! - [`blas`]: which BLAS HPL will run on (the reference BLAS is refused);
//! - [`follow`]: the run, its output read as it appears and each part held
//!   to a limit reckoned from its own work.
//!
//! One invocation solves N `runs + 1` times (HPL's input takes a list of
//! sizes); the first solve is discarded as warm-up and each other result line
//! is one sample. HPL times itself, so the samples are HPL's: GFLOP/s from
//! its `Gflops` column (four significant digits, where `Time` has two
//! decimals), with `time_s` derived from it and HPL's flop count.

pub mod blas;
pub mod follow;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use warpt_harness::{
    Benchmark, BenchmarkError, Convert, Measure, MeasureResult, Measured, RunContext, SeriesDef,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkMetric, BenchmarkSpec, Param, ParamValue, Validation,
};

use crate::hpl::{self, RESIDUAL_THRESHOLD};
use crate::hpl_io::{HplInput, HplResult, MAX_SIZES, Tool, input_file, parse, tail, versions};
use crate::solve::{self, DEFAULT_NB};
use blas::{Blas, BlasKind};
use follow::Budget;

/// The benchmark's name.
pub const NAME: &str = "linpack_external";

/// How to install HPL when it is not found.
const INSTALL_HINT: &str = "install HPL (Debian/Ubuntu: apt-get install hpcc, which brings HPL, MPI and a BLAS; \
     or build xhpl from https://www.netlib.org/benchmark/hpl/) or pass --param binary=PATH";

/// The spec.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .component(BenchmarkComponent::Cpu)
        .description(format!(
            "HPL itself: xhpl or hpcc (PATH, or --param binary=) with a generated input for N, NB, P x Q \
             (P x Q > 1 through mpirun). N is solved runs + 1 times in one invocation, the first discarded as \
             warm-up; HPL's Gflops and residual check per solve. The BLAS HPL loads is named in details; the \
             reference BLAS is skipped unless allow_reference_blas=true. Skipped when no HPL is installed: \
             {INSTALL_HINT}."
        ))
        .external_tool("xhpl or hpcc")
        .param(Param::int("n", 3000, 1..).help("matrix order N"))
        .param(Param::int("nb", DEFAULT_NB as i64, 1..).help("HPL's block size NB"))
        .param(Param::int("p", 1, 1..).help("process rows P"))
        .param(Param::int("q", 1, 1..).help("process columns Q (P x Q MPI ranks)"))
        .param(
            Param::int("runs", 3, 1..=MAX_SIZES as i64 - 1).help(format!(
                "solves measured, after one warm-up solve (HPL reads at most {MAX_SIZES} sizes)"
            )),
        )
        .param(solve::mem_fraction(
            "size N so the fp64 matrix uses this share of available memory (0 = use n; at most 0.9)",
        ))
        .param(Param::command("binary", "").help("path of xhpl or hpcc (empty = xhpl, then hpcc, from PATH)"))
        .param(Param::flag("allow_reference_blas", false).help(
            "run HPL even on Netlib's unoptimized reference BLAS (otherwise skipped with the fix)",
        ))
        .check(|params| {
            solve::check_mem_fraction(params)?;
            match params.get("binary").and_then(ParamValue::as_str) {
                Some(binary) if !binary.is_empty() => {
                    find_binary(binary).map(|_| ()).map_err(|e| e.to_string())
                }
                _ => Ok(()),
            }
        })
        // HPL's run time grows as N^3 and with its BLAS: each part's limit is
        // reckoned as the run goes (see `follow`); setup measures this
        // machine's GEMM rate and probes the BLAS.
        .metric("gflops")
        .metric("time_s")
        .metric("scaled_residual")
        .build()
}

/// The binary a `binary` parameter names, or xhpl then hpcc from PATH.
pub fn find_binary(param: &str) -> Result<PathBuf, BenchmarkError> {
    if param.is_empty() {
        return warpt_system::which("xhpl")
            .or_else(|| warpt_system::which("hpcc"))
            .ok_or_else(|| {
                BenchmarkError::Skipped(format!("neither xhpl nor hpcc is on PATH; {INSTALL_HINT}"))
            });
    }
    let path = PathBuf::from(param);
    let path = if path.components().count() == 1 {
        warpt_system::which(param).unwrap_or(path)
    } else {
        path
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(BenchmarkError::InvalidParam {
            key: "binary".into(),
            reason: format!("{} is not a file", path.display()),
        })
    }
}

/// The running benchmark.
pub struct External {
    binary: PathBuf,
    input: HplInput,
    blas: Option<Blas>,
    budget: Option<Budget>,
    results: Vec<HplResult>,
}

impl External {
    /// A fresh instance.
    pub fn new() -> Self {
        External {
            binary: PathBuf::new(),
            input: HplInput {
                n: 0,
                nb: 0,
                p: 1,
                q: 1,
                solves: 0,
            },
            blas: None,
            budget: None,
            results: Vec::new(),
        }
    }

    fn command(&self, dir: &Path) -> Result<Command, BenchmarkError> {
        let ranks = self.input.p * self.input.q;
        let mut cmd = if ranks > 1 {
            let mpirun = warpt_system::which("mpirun").ok_or_else(|| {
                BenchmarkError::Skipped(format!(
                    "P x Q = {ranks} ranks needs mpirun on PATH (Debian/Ubuntu: apt-get install openmpi-bin)"
                ))
            })?;
            let mut c = Command::new(mpirun);
            c.arg("-np").arg(ranks.to_string()).arg(&self.binary);
            // Open MPI refuses root unless told; a container often runs as root.
            // SAFETY: geteuid has no preconditions and cannot fail.
            if unsafe { libc::geteuid() } == 0
                && std::env::var_os("OMPI_ALLOW_RUN_AS_ROOT").is_none()
            {
                c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
            }
            c
        } else {
            Command::new(&self.binary)
        };
        cmd.current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Ok(cmd)
    }
}

impl Default for External {
    fn default() -> Self {
        External::new()
    }
}

/// The `blas*` and `openblas_coretype` details.
fn blas_details(blas: &Blas) -> Vec<(String, ParamValue)> {
    let mut d = vec![
        ("blas".to_string(), ParamValue::from(blas.kind.name())),
        (
            "blas_found_by".to_string(),
            ParamValue::from(blas.how.clone()),
        ),
    ];
    if let Some(p) = &blas.path {
        d.push((
            "blas_path".into(),
            ParamValue::from(p.display().to_string()),
        ));
    }
    if let Some(v) = &blas.version {
        d.push(("blas_version".into(), ParamValue::from(v.clone())));
    }
    if let Some(c) = &blas.coretype {
        d.push(("openblas_coretype".into(), ParamValue::from(c.clone())));
    }
    if let Some(f) = &blas.forced_coretype {
        d.push((
            "openblas_coretype_forced".into(),
            ParamValue::from(f.clone()),
        ));
    }
    d
}

impl Benchmark for External {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        self.binary = find_binary(ctx.str_param("binary")?)?;
        let blas = blas::find(&self.binary);
        if let Some(why) = blas.refusal(&self.binary)
            && !ctx.bool_param("allow_reference_blas")?
        {
            return Err(BenchmarkError::Skipped(why));
        }
        self.blas = Some(blas);
        let runs = ctx.int_param("runs", 1)? as usize;
        if runs >= MAX_SIZES {
            return Err(BenchmarkError::InvalidParam {
                key: "runs".into(),
                reason: format!(
                    "{runs} is above {}: HPL reads at most {MAX_SIZES} sizes",
                    MAX_SIZES - 1
                ),
            });
        }
        self.input = HplInput {
            n: solve::matrix_order(ctx, 8.0)?,
            nb: ctx.int_param("nb", 1)? as usize,
            p: ctx.int_param("p", 1)? as usize,
            q: ctx.int_param("q", 1)? as usize,
            solves: runs + 1,
        };
        let need = (self.input.n * self.input.n) as f64 * 8.0;
        let available = warpt_system::memory_quick().available_bytes as f64;
        if need > 0.9 * available {
            return Err(BenchmarkError::Skipped(format!(
                "N = {} needs {:.0} MiB for the matrix but {:.0} MiB is available",
                self.input.n,
                need / 1048576.0,
                available / 1048576.0
            )));
        }
        self.budget = Some(Budget::new(
            &self.input,
            Tool::of(&self.binary),
            follow::gemm_gflops(),
        ));
        Ok(())
    }

    fn measure(&mut self, _: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let tool = Tool::of(&self.binary);
        let dir = tempfile::Builder::new()
            .prefix("warpt-hpl-")
            .tempdir()
            .map_err(|e| {
                BenchmarkError::Failed(format!("cannot create a directory for HPL's input: {e}"))
            })?;
        let input_path = dir.path().join(tool.input_file());
        std::fs::write(&input_path, input_file(&self.input, tool)).map_err(|e| {
            BenchmarkError::Failed(format!("cannot write {}: {e}", input_path.display()))
        })?;
        let cmd = self.command(dir.path())?;
        let budget = self
            .budget
            .ok_or_else(|| BenchmarkError::Failed("measure ran before prepare".into()))?;
        let run = follow::follow(cmd, tool, dir.path(), &self.input, &budget, measure)?;
        let (output, elapsed) = (run.output, run.elapsed);
        if !run.status.success() {
            return Err(BenchmarkError::Failed(format!(
                "{} exited with {}; last output:\n{}\n{}",
                self.binary.display(),
                run.status,
                tail(&output, 10),
                tail(&run.stderr, 10)
            )));
        }
        let results = parse(&output, self.input.solves)
            .map_err(|e| BenchmarkError::Failed(format!("{} output: {e}", tool.name())))?;
        if let Some(r) = results.iter().find(|r| r.n != self.input.n) {
            return Err(BenchmarkError::Failed(format!(
                "HPL solved N = {} where N = {} was asked for",
                r.n, self.input.n
            )));
        }
        let flops = hpl::flops(self.input.n);
        let defs = [
            SeriesDef::rate("gflops", "GFLOP/s", flops / 1e9),
            SeriesDef::new("time_s", "s", false, &[], Convert::Time(1.0)),
        ];
        let rows: Vec<Vec<f64>> = results
            .iter()
            .map(|r| {
                let seconds = flops / 1e9 / r.gflops;
                vec![seconds, seconds]
            })
            .collect();
        let m = measure.record(&defs, &rows, 1, elapsed);
        let worst = results[1..].iter().map(|r| r.residual).fold(0.0, f64::max);
        let mut metrics = m.metrics;
        metrics.push(BenchmarkMetric {
            name: "scaled_residual".into(),
            value: worst,
            unit: "".into(),
            higher_is_better: false,
            tags: Default::default(),
            stats: None,
        });
        let mut details = vec![
            ("tool".to_string(), ParamValue::from(tool.name())),
            (
                "binary".to_string(),
                ParamValue::from(self.binary.display().to_string()),
            ),
            ("n".to_string(), ParamValue::Int(self.input.n as i64)),
            ("nb".to_string(), ParamValue::Int(self.input.nb as i64)),
            ("p".to_string(), ParamValue::Int(self.input.p as i64)),
            ("q".to_string(), ParamValue::Int(self.input.q as i64)),
            ("warmup_runs".to_string(), ParamValue::Int(1)),
            (
                "variant".to_string(),
                ParamValue::from(results[0].variant.clone()),
            ),
            (
                "time_split".to_string(),
                ParamValue::from("HPL's output gives the total time only: no factor_s / solve_s"),
            ),
            (
                "invocation_s".to_string(),
                ParamValue::Float(elapsed.as_secs_f64()),
            ),
        ];
        let mut warnings = Vec::new();
        if let Some(blas) = &self.blas {
            details.extend(blas_details(blas));
            warnings.extend(blas.coretype_warning());
            if blas.kind == BlasKind::Reference {
                warnings.push(format!(
                    "HPL ran on the reference BLAS (allow_reference_blas=true): its rate is that of unoptimized \
                     code, not of this machine; to measure the machine, {}",
                    blas.fix()
                ));
            }
        }
        for (i, v) in versions(&output).into_iter().enumerate() {
            details.push((
                format!("version{}", if i == 0 { "" } else { "_suite" }),
                ParamValue::from(v),
            ));
        }
        self.results = results;
        Ok(Measured {
            metrics,
            details,
            warnings,
        })
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let measured = self.results.get(1..).unwrap_or_default();
        match measured
            .iter()
            .find(|r| !r.passed || r.residual >= RESIDUAL_THRESHOLD)
        {
            _ if measured.is_empty() => Validation::fail("HPL reported no measured solve"),
            Some(r) => Validation::fail(format!(
                "HPL's residual check failed: scaled residual {:.3e} (threshold {RESIDUAL_THRESHOLD})",
                r.residual
            )),
            None => Validation::pass(format!(
                "HPL's residual check PASSED for all {} solves (worst {:.3e} < {RESIDUAL_THRESHOLD})",
                measured.len(),
                measured.iter().map(|r| r.residual).fold(0.0, f64::max)
            )),
        }
    }
}
