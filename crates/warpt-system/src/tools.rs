//! Programs on PATH that benchmarks may use, with their versions.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use warpt_model::ToolInfo;

/// Tools worth knowing about, and the argument that prints a version
/// without doing any work (`None`: running it would start a benchmark).
const TOOLS: &[(&str, Option<&str>)] = &[
    ("nvcc", Some("--version")),
    ("nvidia-smi", Some("--version")),
    ("rocm-smi", Some("--version")),
    ("docker", Some("--version")),
    ("mpirun", Some("--version")),
    ("xhpl", None),
    ("hpcc", None),
    ("fio", Some("--version")),
    ("iperf3", Some("--version")),
];

/// How long a version command may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(2);

/// The first executable called `name` on PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Runs `program args`, returning its stdout (or stderr, if stdout is
/// empty) when it exits 0 within two seconds; kills it otherwise.
pub fn run_with_timeout(program: &str, args: &[&str]) -> Option<String> {
    run_within(program, args, VERSION_TIMEOUT)
}

/// [`run_with_timeout`] with the time it may take: `limit`.
pub fn run_within(program: &str, args: &[&str], limit: Duration) -> Option<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let mut out = String::new();
    child.stdout.take()?.read_to_string(&mut out).ok()?;
    if out.trim().is_empty() {
        child.stderr.take()?.read_to_string(&mut out).ok()?;
    }
    status.success().then_some(out)
}

/// The tools found on PATH, with the first line of their version output.
pub fn tools() -> Vec<ToolInfo> {
    TOOLS
        .iter()
        .filter_map(|(name, version_arg)| {
            let path = which(name)?;
            let version = version_arg
                .and_then(|arg| run_with_timeout(&path.to_string_lossy(), &[arg]))
                .and_then(|v| {
                    v.lines()
                        .map(str::trim)
                        .find(|l| !l.is_empty())
                        .map(str::to_string)
                });
            Some(ToolInfo {
                name: name.to_string(),
                path: path.display().to_string(),
                version,
            })
        })
        .collect()
}
