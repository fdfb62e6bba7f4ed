//! The protocol every benchmark and suite implements.

use std::time::Duration;

use warpt_model::{
    BenchmarkMetric, BenchmarkSpec, ClockProbe, ParamValue, Params, StageError, Validation,
};

use crate::Measure;

/// Why a benchmark did not produce a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BenchmarkError {
    /// It cannot run on this machine (no GPU, missing binary, too little
    /// memory). Reported as `skipped`, never as a number.
    #[error("skipped: {0}")]
    Skipped(String),
    /// It tried and failed.
    #[error("{0}")]
    Failed(String),
    /// The user's code raised an error, with its stage and traceback.
    #[error("{}", raised_text(.0))]
    Raised(StageError),
    /// A parameter value is outside what the benchmark accepts.
    #[error("parameter '{key}': {reason}")]
    InvalidParam {
        /// The parameter.
        key: String,
        /// What is wrong and what would be accepted.
        reason: String,
    },
}

/// `stage: message`, then the traceback on the lines after.
fn raised_text(e: &StageError) -> String {
    match &e.traceback {
        Some(tb) => format!("{}: {}\n{tb}", e.stage, e.message),
        None => format!("{}: {}", e.stage, e.message),
    }
}

impl BenchmarkError {
    /// The error as a result's `errors` entry: `stage` unless it names its own.
    pub fn at_stage(&self, stage: &str) -> StageError {
        match self {
            BenchmarkError::Raised(e) => e.clone(),
            BenchmarkError::Skipped(why) => StageError::new(stage, format!("skipped: {why}")),
            other => StageError::new(stage, other.to_string()),
        }
    }

    /// Parameter `key`'s value refused for `reason`: for `map_err` on a
    /// parser's `Result<_, String>`.
    pub fn invalid(key: &str) -> impl FnOnce(String) -> BenchmarkError + '_ {
        move |reason| BenchmarkError::InvalidParam {
            key: key.to_string(),
            reason,
        }
    }

    /// `measure` or `validate` found nothing `prepare` should have left:
    /// the harness called the stages out of order.
    pub fn not_prepared() -> Self {
        BenchmarkError::Failed("not prepared".into())
    }
}

/// Everything a benchmark may read while it runs.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// Effective parameters (defaults with overrides applied).
    pub params: Params,
    /// Seed for every random generator the benchmark uses.
    pub seed: u64,
    /// Total measurement time for this benchmark; a benchmark with several
    /// series divides it between them.
    pub duration: Duration,
    /// Warm-up time before the first counted sample of each series.
    pub burnin: Duration,
    /// Target relative half-width of the median's 95% CI.
    pub target_rel_ci: f64,
    /// How to read the core's speed around each series, if at all (the
    /// harness reads it for benchmarks of the CPU or memory, as their spec
    /// says; see [`warpt_model::RegimeProbes`]).
    pub clock_probe: Option<ClockProbe>,
}

impl RunContext {
    fn param(&self, key: &str) -> Result<&ParamValue, BenchmarkError> {
        self.params
            .get(key)
            .ok_or_else(|| BenchmarkError::InvalidParam {
                key: key.to_string(),
                reason: "no such parameter in this benchmark's spec".into(),
            })
    }

    /// An integer parameter that must be at least `min`.
    pub fn int_param(&self, key: &str, min: i64) -> Result<i64, BenchmarkError> {
        let value = self.param(key)?;
        let v = value.as_i64().ok_or_else(|| BenchmarkError::InvalidParam {
            key: key.to_string(),
            reason: format!("'{value}' is not an integer"),
        })?;
        if v < min {
            return Err(BenchmarkError::InvalidParam {
                key: key.to_string(),
                reason: format!("{v} is below the minimum {min}"),
            });
        }
        Ok(v)
    }

    /// A number parameter (an integer converts).
    pub fn float_param(&self, key: &str) -> Result<f64, BenchmarkError> {
        let value = self.param(key)?;
        value.as_f64().ok_or_else(|| BenchmarkError::InvalidParam {
            key: key.to_string(),
            reason: format!("'{value}' is not a number"),
        })
    }

    /// A boolean parameter.
    pub fn bool_param(&self, key: &str) -> Result<bool, BenchmarkError> {
        let value = self.param(key)?;
        value.as_bool().ok_or_else(|| BenchmarkError::InvalidParam {
            key: key.to_string(),
            reason: format!("'{value}' is not a boolean"),
        })
    }

    /// A string parameter.
    pub fn str_param(&self, key: &str) -> Result<&str, BenchmarkError> {
        let value = self.param(key)?;
        value.as_str().ok_or_else(|| BenchmarkError::InvalidParam {
            key: key.to_string(),
            reason: format!("'{value}' is not a string"),
        })
    }
}

/// What [`Benchmark::measure`] returns.
pub type MeasureResult = Result<Measured, BenchmarkError>;

/// What `prepare` left in `slot`, for `measure` and `validate`; a
/// [`BenchmarkError::not_prepared`] when it left nothing (the stages were
/// called out of order).
pub fn prepared<T>(slot: &Option<T>) -> Result<&T, BenchmarkError> {
    slot.as_ref().ok_or_else(BenchmarkError::not_prepared)
}

/// [`prepared`], to change.
pub fn prepared_mut<T>(slot: &mut Option<T>) -> Result<&mut T, BenchmarkError> {
    slot.as_mut().ok_or_else(BenchmarkError::not_prepared)
}

/// What a benchmark hands back from its measurement stage.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// The metrics, each normally carrying stats.
    pub metrics: Vec<BenchmarkMetric>,
    /// Facts about how it ran (ISA, sizes, peak derivation).
    pub details: Vec<(String, ParamValue)>,
    /// Caveats the user should see.
    pub warnings: Vec<String>,
}

impl Measured {
    /// `metrics` and `details`, with no caveat.
    pub fn new(metrics: Vec<BenchmarkMetric>, details: Vec<(String, ParamValue)>) -> Self {
        Measured {
            metrics,
            details,
            warnings: Vec::new(),
        }
    }
}

/// One runnable benchmark, created by its suite for one run.
///
/// The runner calls `prepare`, then `measure`, then `validate`, each once
/// (and, where [`Benchmark::runs_again`] says so, again for the next trial
/// in the same worker). A benchmark keeps whatever state `validate` needs
/// to check the answer of the work that was timed.
pub trait Benchmark: Send {
    /// Checks prerequisites, generates data from the seed, allocates.
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError>;

    /// Warms up and measures under `measure`, which owns the stopping rule.
    fn measure(&mut self, ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult;

    /// Checks that the measured work computed the right answer.
    fn validate(&mut self, ctx: &RunContext) -> Validation;

    /// Errors met that did not stop the stages (a call that raised after
    /// some samples, which `measure` returned; a teardown that raised),
    /// asked once after `validate`. Any makes the result `failed`, with
    /// what was measured kept.
    fn take_errors(&mut self) -> Vec<StageError> {
        Vec::new()
    }

    /// The setup stage's limit reckoned from the parameters, asked before
    /// `prepare`: for a benchmark whose preparation grows with a parameter
    /// (a file to write, a genome to generate). `None` keeps the default.
    fn setup_limit(&self, ctx: &RunContext) -> Option<crate::WorkLimit> {
        let _ = ctx;
        None
    }

    /// The limits of the later stages reckoned from the work `prepare`
    /// planned (sizes that follow the machine or a parameter), asked after
    /// it. Empty keeps the defaults.
    fn work_limits(&self, ctx: &RunContext) -> Vec<crate::WorkLimit> {
        let _ = ctx;
        Vec::new()
    }

    /// Whose CPU time is the benchmark's when it runs in warpt's process
    /// (interference accounting): this process, unless its code runs in
    /// the process that started warpt (the pytest plugin's tests).
    fn measured_in(&self) -> warpt_system::procstat::Measured {
        warpt_system::procstat::Measured::ThisProcess
    }

    /// Whether this instance, its `validate` done, can run another trial
    /// (`prepare`, `measure`, `validate` again) in the same worker, keeping
    /// what is costly to start (a user file's interpreter, loaded). `false`
    /// (the default): each trial gets a fresh instance.
    fn runs_again(&self) -> bool {
        false
    }

    /// The benchmark's own settings, read before it is planned (a user
    /// file's `get_config()`): loads what it needs and stops short of
    /// `prepare`, keeping it for the `prepare` that follows in the same
    /// worker when [`Benchmark::runs_again`] says so. `None`: it has none.
    fn own_config(
        &mut self,
        ctx: &RunContext,
    ) -> Result<Option<serde_json::Value>, BenchmarkError> {
        let _ = ctx;
        Ok(None)
    }
}

/// A named collection of benchmarks.
pub trait Suite: Send + Sync {
    /// The suite's name, e.g. `micro`.
    fn name(&self) -> &'static str;

    /// One line saying what the suite covers.
    fn description(&self) -> &'static str;

    /// Every benchmark the suite offers, including hidden ones.
    fn specs(&self) -> Vec<BenchmarkSpec>;

    /// The spec of the benchmark called `name`: one of [`Suite::specs`]
    /// by default; a suite whose benchmarks are named by the run (the
    /// pytest plugin's tests) makes one for any name it accepts.
    fn spec_of(&self, name: &str) -> Option<BenchmarkSpec> {
        self.specs().into_iter().find(|s| s.id.name == name)
    }

    /// Creates the benchmark called `name`, or `None` if there is none.
    fn create(&self, name: &str) -> Option<Box<dyn Benchmark>>;

    /// The parameter matrix benchmark `name` sweeps when the user does not
    /// say otherwise: key to a comma list, as `--param key=a,b` would give
    /// it (a declared benchmark's `params = { n = [1, 2] }`). A `--param`
    /// or configured value of the key replaces the list.
    fn matrix(&self, name: &str) -> std::collections::BTreeMap<String, String> {
        let _ = name;
        Default::default()
    }
}

/// One benchmark in a suite's table: its spec, and how to make one.
/// [`Listed::specs`] and [`Listed::create`] are a table-driven suite's
/// [`Suite::specs`] and [`Suite::create`].
pub struct Listed {
    spec: fn() -> BenchmarkSpec,
    create: fn() -> Box<dyn Benchmark>,
}

impl Listed {
    /// The benchmark `spec` declares, made by `create`.
    pub const fn new(spec: fn() -> BenchmarkSpec, create: fn() -> Box<dyn Benchmark>) -> Self {
        Listed { spec, create }
    }

    /// Every spec of `table`, in order.
    pub fn specs(table: &[Listed]) -> Vec<BenchmarkSpec> {
        table.iter().map(|l| (l.spec)()).collect()
    }

    /// The benchmark of `table` whose spec is called `name`.
    pub fn create(table: &[Listed], name: &str) -> Option<Box<dyn Benchmark>> {
        table
            .iter()
            .find(|l| (l.spec)().id.name == name)
            .map(|l| (l.create)())
    }
}

/// A suite that is a name, a line of description and a table of
/// benchmarks: what most suites are. A crate declares one as a constant
/// and registers it as it is.
#[derive(Clone, Copy)]
pub struct ListedSuite {
    /// The suite's name, e.g. `micro`.
    pub name: &'static str,
    /// One line saying what the suite covers.
    pub description: &'static str,
    /// Its benchmarks, in the order `list` shows them.
    pub benchmarks: &'static [Listed],
}

impl Suite for ListedSuite {
    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> &'static str {
        self.description
    }

    fn specs(&self) -> Vec<BenchmarkSpec> {
        Listed::specs(self.benchmarks)
    }

    fn create(&self, name: &str) -> Option<Box<dyn Benchmark>> {
        Listed::create(self.benchmarks, name)
    }
}
