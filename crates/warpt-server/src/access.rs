//! What the operator lets a remote caller do beyond reading: which
//! parameters of a submitted run may name a command or a path, and which
//! host names the server answers to.
//!
//! A benchmark's spec says which of its parameters are commands, input
//! paths or output paths ([`ParamKind`]). The CLI runs them as given; a run
//! submitted over HTTP may set a command parameter only when the server was
//! started with `--allow-commands`, and a path parameter only inside a
//! directory given by `--allow-paths DIR` (resolved, symlinks followed,
//! `..` refused).

use std::path::{Component, Path, PathBuf};

use warpt_model::{BenchmarkSpec, ParamKind};

use crate::ServeError;

/// The operator's grants to remote callers.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// Token holders may set command parameters (`--allow-commands`).
    pub allow_commands: bool,
    /// Directories path parameters may name (`--allow-paths`), resolved.
    pub allow_paths: Vec<PathBuf>,
    /// Host names the server answers to besides IP addresses and
    /// `localhost` (`--allow-host`), lower case.
    pub allow_hosts: Vec<String>,
    /// Every route, reads too, needs the token (`--token-for-reads`).
    pub token_for_reads: bool,
}

/// A parameter a remote caller may not set: which, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The parameter's name.
    pub parameter: String,
    /// What was refused and the flag that would allow it.
    pub message: String,
}

impl Access {
    /// The grants, with each `--allow-paths` directory resolved (it must
    /// exist and be a directory).
    pub fn new(
        allow_commands: bool,
        allow_paths: &[PathBuf],
        allow_hosts: &[String],
        token_for_reads: bool,
    ) -> Result<Self, ServeError> {
        let mut resolved = Vec::new();
        for dir in allow_paths {
            let real = dir
                .canonicalize()
                .map_err(|e| ServeError::Usage(format!("--allow-paths {}: {e}", dir.display())))?;
            if !real.is_dir() {
                return Err(ServeError::Usage(format!(
                    "--allow-paths {}: not a directory",
                    dir.display()
                )));
            }
            resolved.push(real);
        }
        let mut hosts = Vec::new();
        for h in allow_hosts {
            let h = h.trim().to_ascii_lowercase();
            if h.is_empty() || h.contains(['/', ' ', '@']) {
                return Err(ServeError::Usage(format!(
                    "--allow-host '{h}': give a host name such as bench.example.org"
                )));
            }
            hosts.push(h);
        }
        Ok(Access {
            allow_commands,
            allow_paths: resolved,
            allow_hosts: hosts,
            token_for_reads,
        })
    }

    /// Whether a remote caller may set parameter `name` of `spec` to
    /// `value` (the name exact: the plan asks only of declared ones). A
    /// parameter of no particular kind, or an empty value ("not set"),
    /// passes.
    pub fn allows(&self, spec: &BenchmarkSpec, name: &str, value: &str) -> Result<(), Refusal> {
        match spec.param_kinds.get(name) {
            Some(kind) if !value.is_empty() => self.check(&spec.id.to_string(), name, *kind, value),
            _ => Ok(()),
        }
    }

    /// A caller's network address (`name`, of kind address, set to
    /// `value`) for a benchmark whose secret the operator's configuration
    /// sets (`configured` gives the configuration's value of a parameter):
    /// refused unless it is the operator's own address for it, so the
    /// operator's API key never travels to an address a caller chose.
    pub fn keeps_secrets(
        spec: &BenchmarkSpec,
        name: &str,
        value: &str,
        configured: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), Refusal> {
        if spec.param_kinds.get(name) != Some(&ParamKind::Address) {
            return Ok(());
        }
        let secrets = spec
            .param_kinds
            .iter()
            .filter(|(_, k)| **k == ParamKind::Secret)
            .filter_map(|(s, _)| configured(s).filter(|v| !v.is_empty()).map(|v| (s, v)));
        for (secret, variable) in secrets {
            let theirs = configured(name).unwrap_or_default();
            if value != theirs {
                return Err(Refusal {
                    parameter: name.to_string(),
                    message: format!(
                        "parameter '{name}' of {}: the operator's '{secret}' ({variable}) sends its key only to the \
                         operator's own {name} ({}); a caller's '{value}' would receive it. Name no {name}, or ask \
                         the operator",
                        spec.id,
                        if theirs.is_empty() {
                            "none is configured"
                        } else {
                            theirs.as_str()
                        }
                    ),
                });
            }
        }
        Ok(())
    }

    fn check(&self, bench: &str, key: &str, kind: ParamKind, value: &str) -> Result<(), Refusal> {
        let refuse = |message: String| Refusal {
            parameter: key.to_string(),
            message,
        };
        match kind {
            ParamKind::Command if self.allow_commands => Ok(()),
            ParamKind::Command => Err(refuse(format!(
                "parameter '{key}' of {bench} is a command, and this server runs no command a remote caller \
                 names; the operator allows that by starting warpt serve with --allow-commands"
            ))),
            // The variable's value would leave with the request (an API key
            // sent to an endpoint the caller may also name): the operator's
            // configuration alone sets it.
            ParamKind::Secret => Err(refuse(format!(
                "parameter '{key}' of {bench} names an environment variable whose secret warpt sends; only \
                 the operator sets it (in the server's configuration), never a remote caller"
            ))),
            // Any address a token holder names is theirs to measure; what
            // the operator's secret may reach is `keeps_secrets`' to say.
            ParamKind::Address => Ok(()),
            ParamKind::InputPath | ParamKind::OutputPath => {
                let what = kind.as_str();
                let path = resolve(Path::new(value)).map_err(|why| {
                    refuse(format!(
                        "parameter '{key}' of {bench} ({what}) '{value}': {why}; remote callers name \
                         paths only inside the operator's --allow-paths directories"
                    ))
                })?;
                if self.allow_paths.iter().any(|dir| path.starts_with(dir)) {
                    return Ok(());
                }
                let allowed = if self.allow_paths.is_empty() {
                    "none was given".to_string()
                } else {
                    self.allow_paths
                        .iter()
                        .map(|d| d.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                Err(refuse(format!(
                    "parameter '{key}' of {bench} ({what}) '{value}' is outside the directories this server \
                     lets remote callers name ({allowed}); the operator adds one with --allow-paths DIR"
                )))
            }
        }
    }
}

/// `path` made absolute (relative to the server's working directory) with
/// every symlink of its existing part followed; the part that does not
/// exist yet (an output about to be written) is appended as written.
/// `..` anywhere is refused: it is how a path steps out of a directory.
fn resolve(path: &Path) -> Result<PathBuf, String> {
    if path.components().any(|c| c == Component::ParentDir) {
        return Err("'..' is not allowed in a path a remote caller gives".into());
    }
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| format!("the server's working directory: {e}"))?
            .join(path)
    };
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(real) => {
                let mut out = real;
                for part in rest.iter().rev() {
                    out.push(part);
                }
                return Ok(out);
            }
            Err(_) => {
                let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
                    return Err("no part of it exists".into());
                };
                rest.push(name.to_os_string());
                existing = parent;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use warpt_model::{BenchmarkComponent, Param};

    fn spec(kinds: &[(&str, ParamKind)]) -> BenchmarkSpec {
        kinds
            .iter()
            .fold(
                BenchmarkSpec::builder("s", "b").component(BenchmarkComponent::Cpu),
                |b, (name, kind)| b.param(Param::names(*kind, name, "")),
            )
            .build()
    }

    #[test]
    fn commands_need_the_operators_flag() {
        let s = spec(&[("command", ParamKind::Command)]);
        let closed = Access::default();
        let e = closed.allows(&s, "command", "id").unwrap_err();
        assert_eq!(e.parameter, "command");
        assert!(e.message.contains("--allow-commands"), "{}", e.message);
        assert!(closed.allows(&s, "command", "").is_ok());
        assert!(closed.allows(&s, "other", "id").is_ok());
        let open = Access {
            allow_commands: true,
            ..Access::default()
        };
        assert!(open.allows(&s, "command", "id").is_ok());
    }

    #[test]
    fn a_secrets_variable_is_never_a_remote_callers_to_name() {
        let s = spec(&[("api_key_env", ParamKind::Secret)]);
        let everything = Access {
            allow_commands: true,
            ..Access::default()
        };
        let e = everything.allows(&s, "api_key_env", "HOME").unwrap_err();
        assert_eq!(e.parameter, "api_key_env");
        assert!(
            e.message.contains("only the operator sets it"),
            "{}",
            e.message
        );
        assert!(everything.allows(&s, "api_key_env", "").is_ok());
    }

    #[test]
    fn paths_stay_inside_the_allowed_directories() {
        let root = tempfile::tempdir().unwrap();
        let allowed = root.path().join("allowed");
        std::fs::create_dir(&allowed).unwrap();
        std::fs::write(allowed.join("in.fa"), ">x\nACGT\n").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("/etc", allowed.join("escape")).unwrap();
        let access = Access::new(false, std::slice::from_ref(&allowed), &[], false).unwrap();
        let s = spec(&[
            ("sam", ParamKind::OutputPath),
            ("reads", ParamKind::InputPath),
        ]);
        let ok = |k: &str, v: &str| access.allows(&s, k, v);
        assert!(ok("reads", allowed.join("in.fa").to_str().unwrap()).is_ok());
        assert!(ok("sam", allowed.join("new/dir/out.sam").to_str().unwrap()).is_ok());
        for bad in [
            "/tmp/x.sam".to_string(),
            format!("{}/../x.sam", allowed.display()),
            format!("{}/escape/passwd", allowed.display()),
        ] {
            let e = ok("sam", &bad).unwrap_err();
            assert_eq!(e.parameter, "sam", "{bad}");
            assert!(e.message.contains("'sam'"), "{}", e.message);
        }
        let e = Access::default()
            .allows(&s, "reads", "/etc/passwd")
            .unwrap_err();
        assert!(e.message.contains("--allow-paths DIR"), "{}", e.message);
        assert!(Access::new(false, &[root.path().join("missing")], &[], false).is_err());
    }
}
