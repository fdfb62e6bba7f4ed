//! The typed run request: what every front end asks for, however it was
//! spelt (flags, configuration layers, the server's JSON, a stored run).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

use warpt_model::BenchmarkComponent;

use crate::config::Flags;
use crate::history::StoreChoice;

/// One run to make.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    /// What to run: a selection, or a stored run again.
    pub plan: PlanSource,
    /// The settings given as flags (the top configuration layer); the
    /// file, the environment and the defaults fill the rest. Its `store` is
    /// not read: [`RunRequest::store`] says where the run goes.
    pub settings: Flags,
    /// `--config`: the configuration file (else the one found).
    pub config: Option<PathBuf>,
    /// `--repeat`: whole plan passes (1 = once).
    pub repeat: u32,
    /// Where the run is recorded.
    pub store: StoreChoice,
    /// Where its export goes.
    pub export: ExportChoice,
    /// Background telemetry, if wanted.
    pub monitor: Option<MonitorRequest>,
    /// `--events`: progress as typed JSON lines on stdout (for `warpt serve`).
    pub events: bool,
    /// `--run-id`: the id to use instead of a new one.
    pub run_id: Option<String>,
}

/// Where the plan comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanSource {
    /// A selection of suites, benchmarks or components.
    Select(Select),
    /// `--replay FILE`: the plan and settings of a previous export.
    Replay(PathBuf),
}

/// `--suite`, `--benchmark`, `--component`, `--param`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Select {
    /// `--suite`.
    pub suite: Option<String>,
    /// `--benchmark`, repeated.
    pub benchmarks: Vec<String>,
    /// `--component`, repeated.
    pub components: Vec<BenchmarkComponent>,
    /// `--param`: each name exactly as the plan will look it up.
    pub params: Vec<warpt_harness::ParamArg>,
}

/// Where the export goes.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ExportChoice {
    /// No export file.
    #[default]
    None,
    /// `--export`: a file named after the plan in the working directory.
    Default,
    /// `--export-file PATH`.
    File(PathBuf),
}

/// `--monitor`, `--monitor-interval`, `--monitor-output`.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorRequest {
    /// Seconds between samples.
    pub interval: f64,
    /// Where the timeline goes, if anywhere.
    pub output: Option<PathBuf>,
}

impl Default for RunRequest {
    fn default() -> Self {
        RunRequest {
            plan: PlanSource::Select(Select::default()),
            settings: Flags::default(),
            config: None,
            repeat: 1,
            store: StoreChoice::Configured,
            export: ExportChoice::None,
            monitor: None,
            events: false,
            run_id: None,
        }
    }
}

/// A field of a run request out of its range: which, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct Invalid {
    /// The field, as the server's JSON names it (`repeat`, `duration`, ...).
    pub field: &'static str,
    /// What is wrong with its value.
    pub message: String,
}

/// Most passes `--repeat` makes.
pub const MAX_REPEAT: u32 = 1000;
/// Shortest monitor interval, seconds.
pub const MIN_MONITOR_INTERVAL: f64 = 0.05;
/// Longest duration, burn-in or monitor interval a request may ask for,
/// seconds (a week).
pub const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;
/// Largest `--timeout-multiplier`.
pub const MAX_TIMEOUT_MULTIPLIER: f64 = 1000.0;

impl RunRequest {
    /// Checks every setting against the range the command line enforces, so
    /// a request built elsewhere (the server's JSON) is held to the same
    /// rules: the first field out of range, named.
    pub fn validate(&self) -> Result<(), Invalid> {
        let bad = |field: &'static str, message: String| Err(Invalid { field, message });
        let f = &self.settings;
        let at_least_0 = [
            ("duration", f.duration),
            ("burnin_seconds", f.burnin_seconds),
            ("suite_timeout", f.suite_timeout),
        ];
        for (field, v) in at_least_0 {
            if let Some(v) = v.filter(|v| !v.is_finite() || *v < 0.0) {
                return bad(
                    field,
                    format!("{v} is negative or not finite; give seconds >= 0"),
                );
            }
            // Checked before any becomes a `Duration` (which panics on
            // huge values).
            if let Some(v) = v.filter(|v| *v > MAX_SECONDS) {
                return bad(
                    field,
                    format!("{v} s is more than a week ({MAX_SECONDS} s)"),
                );
            }
        }
        if let Some(v) = f
            .precision
            .filter(|v| !v.is_finite() || *v <= 0.0 || *v > 100.0)
        {
            return bad("precision", format!("{v} is outside (0, 100] percent"));
        }
        if let Some(v) = f
            .timeout_multiplier
            .filter(|v| !v.is_finite() || *v <= 0.0 || *v > MAX_TIMEOUT_MULTIPLIER)
        {
            return bad(
                "timeout_multiplier",
                format!("{v} must be a positive number up to {MAX_TIMEOUT_MULTIPLIER}"),
            );
        }
        if !(1..=MAX_REPEAT).contains(&self.repeat) {
            return bad(
                "repeat",
                format!("{} is outside 1..={MAX_REPEAT}", self.repeat),
            );
        }
        if let Some(m) = self.monitor.as_ref().filter(|m| {
            !m.interval.is_finite() || !(MIN_MONITOR_INTERVAL..=MAX_SECONDS).contains(&m.interval)
        }) {
            return bad(
                "monitor_interval",
                format!(
                    "{} is outside {MIN_MONITOR_INTERVAL}..={MAX_SECONDS} s",
                    m.interval
                ),
            );
        }
        let labels: BTreeMap<String, String> = f.labels.iter().cloned().collect();
        if let Some(why) = warpt_model::labels::labels_problem(&labels) {
            return bad("labels", why);
        }
        if let Some(why) = f
            .description
            .as_deref()
            .and_then(warpt_model::labels::description_problem)
        {
            return bad("description", why);
        }
        if let PlanSource::Select(s) = &self.plan {
            for p in &s.params {
                if let Some(why) = warpt_harness::param_name_problem(&p.name) {
                    return bad("params", format!("parameter name {:?} {why}", p.name));
                }
            }
        }
        Ok(())
    }

    /// The `benchmark run` arguments that ask for this run (after
    /// `benchmark run`), for a child process. The store is left out when
    /// it is a `--store` location: a caller passes that in the environment
    /// (`WARPT_STORE`), since a URL may carry a password `ps` would show.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let mut flag = |name: &str, value: OsString| {
            a.push(format!("--{name}").into());
            a.push(value);
        };
        match &self.plan {
            PlanSource::Select(s) => {
                if let Some(v) = &s.suite {
                    flag("suite", v.into());
                }
                for b in &s.benchmarks {
                    flag("benchmark", b.into());
                }
                for c in &s.components {
                    flag("component", c.as_str().into());
                }
                for p in &s.params {
                    flag("param", format!("{}={}", p.name, p.value).into());
                }
            }
            PlanSource::Replay(path) => flag("replay", path.into()),
        }
        let f = &self.settings;
        if let Some(v) = f.duration {
            flag("duration", v.to_string().into());
        }
        if let Some(v) = f.burnin_seconds {
            flag("burnin-seconds", v.to_string().into());
        }
        if let Some(v) = f.seed {
            flag("seed", v.to_string().into());
        }
        if let Some(v) = f.precision {
            flag("precision", v.to_string().into());
        }
        if let Some(v) = f.timeout_multiplier {
            flag("timeout-multiplier", v.to_string().into());
        }
        if let Some(v) = f.suite_timeout {
            flag("suite-timeout", v.to_string().into());
        }
        for (k, v) in &f.labels {
            flag("label", format!("{k}={v}").into());
        }
        if let Some(d) = &f.description {
            flag("description", d.into());
        }
        if let Some(ps) = f.percentiles.as_ref().filter(|p| !p.is_empty()) {
            let list: Vec<String> = ps.values().iter().map(f64::to_string).collect();
            flag("percentiles", list.join(",").into());
        }
        if let Some(c) = &self.config {
            flag("config", c.into());
        }
        if self.repeat != 1 {
            flag("repeat", self.repeat.to_string().into());
        }
        match &self.export {
            ExportChoice::None => {}
            ExportChoice::Default => a.push("--export".into()),
            ExportChoice::File(p) => {
                a.push("--export-file".into());
                a.push(p.into());
            }
        }
        if let Some(m) = &self.monitor {
            a.push("--monitor".into());
            a.push("--monitor-interval".into());
            a.push(m.interval.to_string().into());
            if let Some(p) = &m.output {
                a.push("--monitor-output".into());
                a.push(p.into());
            }
        }
        if let Some(id) = &self.run_id {
            a.push("--run-id".into());
            a.push(id.into());
        }
        if f.in_process {
            a.push("--in-process".into());
        }
        if self.store == StoreChoice::Off {
            a.push("--no-store".into());
        }
        if self.events {
            a.push("--events".into());
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_setting_out_of_range_is_named_and_the_defaults_pass() {
        assert_eq!(RunRequest::default().validate(), Ok(()));
        let field = |r: RunRequest| r.validate().unwrap_err().field;
        let with = |f: Flags| RunRequest {
            settings: f,
            ..RunRequest::default()
        };
        assert_eq!(
            field(with(Flags {
                duration: Some(-1.0),
                ..Flags::default()
            })),
            "duration"
        );
        assert_eq!(
            field(with(Flags {
                burnin_seconds: Some(f64::NAN),
                ..Flags::default()
            })),
            "burnin_seconds"
        );
        assert_eq!(
            field(with(Flags {
                precision: Some(0.0),
                ..Flags::default()
            })),
            "precision"
        );
        assert_eq!(
            field(with(Flags {
                timeout_multiplier: Some(-2.0),
                ..Flags::default()
            })),
            "timeout_multiplier"
        );
        assert_eq!(
            field(RunRequest {
                repeat: 0,
                ..RunRequest::default()
            }),
            "repeat"
        );
        assert_eq!(
            field(RunRequest {
                repeat: 1001,
                ..RunRequest::default()
            }),
            "repeat"
        );
        let monitor = Some(MonitorRequest {
            interval: 0.01,
            output: None,
        });
        assert_eq!(
            field(RunRequest {
                monitor,
                ..RunRequest::default()
            }),
            "monitor_interval"
        );
    }
}
