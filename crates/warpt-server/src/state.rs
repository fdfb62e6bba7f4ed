//! What every handler shares: the state, its store connections, and
//! whether a request carries the token.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode, header};
use warpt_model::BenchmarkSpec;
use warpt_store::{Location, Store};

use crate::access::Access;
use crate::auth::Token;
use crate::cache::Cache;
use crate::error::ApiError;
use crate::queue::Queue;

/// Idle connections kept for reuse.
const POOL: usize = 16;

/// The server's shared state.
pub struct AppState {
    /// The store (requests borrow pooled connections: SQLite in WAL mode
    /// lets readers run beside a writer, PostgreSQL serves each its own).
    pub store: Location,
    /// The registry's benchmarks.
    pub specs: Vec<BenchmarkSpec>,
    /// The bearer token.
    pub token: Token,
    /// Requests served, by route and status, for `/metrics`.
    pub requests: Mutex<BTreeMap<(String, u16), u64>>,
    /// What submitted runs are planned against: the server's configuration
    /// and suites, read once at start.
    pub base: Arc<warpt_run::PlanBase>,
    /// Submitted runs.
    pub queue: Arc<Queue>,
    /// Answers to reads, until the store changes.
    pub cache: Cache,
    /// What remote callers may name, and the host names answered.
    pub access: Access,
    /// `POST query` statements allowed to run at once.
    pub query_slots: tokio::sync::Semaphore,
    /// Idle store connections.
    pool: Mutex<Vec<Store>>,
}

/// A store connection lent by the pool; it goes back when dropped.
pub struct Pooled<'a> {
    store: Option<Store>,
    pool: &'a Mutex<Vec<Store>>,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Store;
    fn deref(&self) -> &Store {
        // Some until drop: set in `checkout`, taken only in `drop`.
        self.store
            .as_ref()
            .unwrap_or_else(|| unreachable!("a pooled store is present until dropped"))
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(store) = self.store.take() {
            let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
            if pool.len() < POOL {
                pool.push(store);
            }
        }
    }
}

impl AppState {
    /// The state of a server over `store`.
    pub fn new(
        store: Location,
        specs: Vec<BenchmarkSpec>,
        token: Token,
        base: Arc<warpt_run::PlanBase>,
        queue: Arc<Queue>,
        cache_entries: usize,
        access: Access,
    ) -> Self {
        AppState {
            cache: Cache::new(&store, cache_entries),
            access,
            query_slots: tokio::sync::Semaphore::new(QUERY_MAX_CONCURRENT),
            store,
            specs,
            token,
            requests: Mutex::new(BTreeMap::new()),
            base,
            queue,
            pool: Mutex::new(Vec::new()),
        }
    }

    /// A connection to the store: an idle one, else a new one.
    pub fn checkout(&self) -> Result<Pooled<'_>, warpt_store::StoreError> {
        let idle = self.pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let store = match idle {
            Some(s) => s,
            None => Store::open(&self.store)?,
        };
        Ok(Pooled {
            store: Some(store),
            pool: &self.pool,
        })
    }

    /// Counts a request.
    pub fn count(&self, route: &str, status: u16) {
        let mut map = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        *map.entry((route.to_string(), status)).or_default() += 1;
    }
}

/// `POST query` statements running at once at most; more get 429.
pub const QUERY_MAX_CONCURRENT: usize = 2;

/// Runs `f` with a store connection on the blocking pool.
pub(crate) async fn with_store<T: Send + 'static>(
    state: &Arc<AppState>,
    f: impl FnOnce(&warpt_store::Store) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let state = state.clone();
    tokio::task::spawn_blocking(move || f(&*state.checkout()?))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
}

/// 401 unless the request carries the server's token.
pub(crate) fn authorize(state: &AppState, headers: &HeaderMap) -> Result<(), ApiError> {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if state.token.admits(given) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "this endpoint needs 'Authorization: Bearer <token>' (the token file named when warpt serve started)",
        ))
    }
}
