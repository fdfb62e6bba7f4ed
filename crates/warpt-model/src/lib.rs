//! The warpt data contract.
//!
//! Every other warpt crate speaks these types; exports, the history store and
//! the REST API are their JSON form. They follow the seed design (component,
//! kind, id, spec, metric, run result, suite run, list output) and extend it
//! with what an honest harness needs: statistics with raw samples, a run
//! status, validation, resources, a watchdog and a reproducibility manifest.
//!
//! Compatibility rule: fields added later are optional or defaulted, so an
//! export written by an older warpt always loads.

/// What a benchmark exercises and what sort of workload it is.
mod component;
/// Declaring a benchmark: one `Param` per parameter, the spec builder.
mod declaration;
/// Escaping text for the formats runs are written in: CSV, Markdown, XML/HTML.
pub mod escape;
/// The events of a run as it happens (`--events`, the server's WebSocket).
mod events;
/// A run's labels and description: their rules and their text.
pub mod labels;
/// Metrics and their summary statistics.
mod metric;
/// A machine's noise profile entry.
mod noise;
/// Benchmark parameter values and their errors.
mod params;
/// Secrets kept out of what warpt records and prints.
mod redact;
/// Host regimes: the probes' readings and how far they can move a metric.
mod regime;
/// The result of running one benchmark.
mod result;
/// Rows read back from the result history for analyses across runs and machines.
mod rows;
/// A measured series and how its samples convert to the metric.
mod series;
/// Which benchmark, and how it is meant to run.
mod spec;
/// The result of `warpt stress`.
mod stress;
/// A suite run: the unit of export, storage and comparison.
mod suite_run;
/// `MetricStats::summarize`: the statistics every metric carries.
mod summary;
pub use summary::Percentiles;
/// A snapshot of the machine, stored once per suite run.
mod system;
/// Resource telemetry sampled while benchmarks run, and its summary.
mod telemetry;
/// Repetitions of a plan (trials) and the interference each saw.
mod trial;

pub use component::{BenchmarkComponent, BenchmarkKind, UnknownComponent};
pub use declaration::{Param, ParamCheck, SpecBuilder};
pub use events::RunEvent;
pub use metric::{BenchmarkMetric, COUNTED_UNITS, MetricStats, StopReason, tag_label};
pub use noise::NoiseEntry;
pub use params::{ParamError, ParamValue, Params};
pub use redact::{MASK, redact_command_line, redact_secrets, redact_url};
pub use regime::{
    BANDWIDTH_APART, BANDWIDTH_SWING, CANARY_FACTOR, CLOCK_APART, CLOCK_SWING, CanaryReadings,
    ClockProbe, REGIME_PREFIX, RegimeProbes, RegimeShift, SCALING_FLOOR, ScalingCheck,
};
pub use result::{
    BenchmarkRunResult, CrashInfo, DEBUG_BUILD_REASON, Quality, Resources, RunStatus, StageError,
    StageRecord, StageStatus, UNRELIABLE_REL_CI, Validation, Watchdog,
};
pub use rows::{CrossRow, MatrixRow, RunSummary, TrendRow};
pub use series::{Convert, SeriesDef};
pub use spec::{BenchmarkId, BenchmarkSpec, ParamKind, ParamRange, StageLimits};
pub use stress::{StressConfig, StressOutcome, StressRun, ThroughputPoint};
pub use suite_run::{
    BenchmarkSuiteRun, GitState, LoadError, Manifest, RunConfig, load_suite_run, run_id,
};
pub use system::{
    CacheInfo, ComputeAdapter, CpuInfo, DimmInfo, GpuInfo, ListOutput, MemoryInfo, ModelSupport,
    MountInfo, NetworkInterface, OsInfo, StorageDevice, ToolInfo,
};
pub use telemetry::{
    ENERGY_SOURCES, GpuSample, MemoryPoint, SourceEnergy, TelemetrySample, TelemetrySummary,
    TemperatureReading,
};
pub use trial::{Interference, STEAL_PREFIX, Trial, results_at};

/// The JSON Schema of a suite run, the shape of every export (`warpt schema`).
pub fn suite_run_schema() -> schemars::Schema {
    schemars::schema_for!(BenchmarkSuiteRun)
}

/// The JSON Schema of `warpt list --json` (`warpt schema --type list`).
pub fn list_output_schema() -> schemars::Schema {
    schemars::schema_for!(ListOutput)
}
