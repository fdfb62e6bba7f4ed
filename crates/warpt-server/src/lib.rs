//! `warpt serve`: the result history over HTTP, from the one binary.
//!
//! - [`auth`]: the bearer token (created on first start, mode 0600) and
//!   the rule that only loopback may be served without one;
//! - [`access`]: what the operator lets remote callers name (commands,
//!   paths) and which host names are answered;
//! - [`guard`]: the checks every request passes (host, origin, token for
//!   reads) and the security headers of every answer;
//! - [`listen`]: connections accepted within bounds (how many at once, a
//!   header read and a request answered in time);
//! - [`state`]: what every handler shares (the store, the registry's
//!   specs, the token, request counters);
//! - [`cache`]: read answers kept until the store changes;
//! - [`error`]: API errors as JSON with their status and the field at fault;
//! - [`api`]: the `/api/v1` read routes;
//! - [`overview`]: one line per machine for the dashboard's first view;
//! - [`queue`]: submitted runs, planned and run in process one at a time
//!   (their benchmarks in worker processes);
//! - [`runs_api`]: starting, following (WebSocket) and cancelling runs;
//! - [`openapi`]: the OpenAPI 3 document of those routes;
//! - [`dashboard`]: the web dashboard at `/`, its assets embedded.

pub mod access;
pub mod api;
pub mod auth;
pub mod cache;
pub mod dashboard;
pub mod error;
/// `warpt monitor --prometheus`: telemetry in the Prometheus text format.
pub mod exporter;
pub mod guard;
pub mod listen;
pub mod openapi;
pub mod overview;
pub mod queue;
pub mod runs_api;
pub mod state;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use warpt_run::PlanBase;
use warpt_run::run::Suites;

pub use access::Access;
pub use auth::Token;
pub use state::AppState;

/// What can stop the server from starting or serving.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A bad flag: the caller exits with status 2.
    #[error("{0}")]
    Usage(String),
    /// The address cannot be bound, or the runtime cannot start.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The store cannot be opened.
    #[error(transparent)]
    Store(#[from] warpt_store::StoreError),
}

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to listen on (port 0: any free port).
    pub bind: SocketAddr,
    /// The store (a SQLite file or a PostgreSQL URL).
    pub store: warpt_store::Location,
    /// The token file: given (`--token-file`), or the default one,
    /// created when missing.
    pub token_file: PathBuf,
    /// Whether `token_file` was given explicitly.
    pub token_given: bool,
    /// Read answers kept until the store changes (0: none).
    pub cache_entries: usize,
    /// What remote callers may name, and the host names answered.
    pub access: Access,
    /// The bounds on connections and requests ([`listen::LIMITS`] unless
    /// the operator set others).
    pub limits: listen::Limits,
}

/// Serves until interrupted (Ctrl-C or SIGTERM). Prints the address it
/// listens on to stderr once bound. Submitted runs are planned against
/// `base` (the configuration and declared benchmarks, read once by the
/// caller at start) and run with `suites`.
pub fn serve(
    options: &ServeOptions,
    base: PlanBase,
    suites: Arc<dyn Suites + Send + Sync>,
) -> Result<(), ServeError> {
    auth::check_bind(&options.bind, options.token_given)?;
    let token = auth::load_or_create(&options.token_file, options.token_given)?;
    if !options.bind.ip().is_loopback() {
        auth::check_network_token(&options.token_file, &token)?;
    }
    // Creates the store and brings its schema up to date before the first
    // request.
    warpt_store::Store::open(&options.store)?;
    let specs = base.registry.all_specs();
    let base = Arc::new(base);
    let queue = queue::Queue::start(Arc::clone(&base), suites, options.store.clone())?;
    let state = Arc::new(AppState::new(
        options.store.clone(),
        specs,
        token,
        base,
        Arc::clone(&queue),
        options.cache_entries,
        options.access.clone(),
    ));
    // The state (and its pooled store connections) is dropped after the
    // runtime returns: a PostgreSQL connection closes by blocking on a
    // runtime of its own, which tokio refuses inside another.
    let keep = Arc::clone(&state);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|source| ServeError::Io {
            what: "starting the runtime".into(),
            source,
        })?;
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(options.bind)
            .await
            .map_err(|source| ServeError::Io {
                what: format!("binding {}", options.bind),
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| ServeError::Io {
            what: "reading the bound address".into(),
            source,
        })?;
        eprintln!(
            "warpt serve: listening on http://{addr} (store {}, token in {})",
            options.store,
            options.token_file.display()
        );
        eprintln!("warpt serve: {}", grants(&options.access));
        listen::serve(listener, api::router(state), options.limits, shutdown()).await;
        Ok(())
    });
    // A run still executing stops as on Ctrl-C: what finished is recorded.
    queue.stop(std::time::Duration::from_secs(30));
    drop(runtime);
    drop(keep);
    served
}

/// What a token holder may do here, said once at start.
fn grants(access: &Access) -> String {
    let commands = if access.allow_commands {
        "run commands as this user (--allow-commands)"
    } else {
        "run benchmarks, but no command of their own"
    };
    let paths = if access.allow_paths.is_empty() {
        "no path of their own".to_string()
    } else {
        let dirs: Vec<String> = access
            .allow_paths
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        format!("paths under {}", dirs.join(", "))
    };
    let reads = if access.token_for_reads {
        "every read needs the token too"
    } else {
        "reads need no token"
    };
    format!("token holders may {commands} and name {paths}; {reads}")
}

async fn shutdown() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
