//! What every handler shares.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use warpt_model::BenchmarkSpec;
use warpt_store::Store;

use crate::auth::Token;
use crate::queue::Queue;

/// The server's shared state.
pub struct AppState {
    /// The store file (each request opens its own connection: SQLite in
    /// WAL mode lets readers run beside a writer).
    pub store: PathBuf,
    /// The registry's benchmarks.
    pub specs: Vec<BenchmarkSpec>,
    /// The bearer token.
    pub token: Token,
    /// Requests served, by route and status, for `/metrics`.
    pub requests: Mutex<BTreeMap<(String, u16), u64>>,
    /// The warpt binary submitted runs are executed with.
    pub exe: PathBuf,
    /// Submitted runs.
    pub queue: Arc<Queue>,
}

impl AppState {
    /// The state of a server over `store`.
    pub fn new(
        store: PathBuf,
        specs: Vec<BenchmarkSpec>,
        token: Token,
        exe: PathBuf,
        queue: Arc<Queue>,
    ) -> Self {
        AppState {
            store,
            specs,
            token,
            requests: Mutex::new(BTreeMap::new()),
            exe,
            queue,
        }
    }

    /// A connection to the store.
    pub fn open(&self) -> Result<Store, warpt_store::StoreError> {
        Store::open(&self.store)
    }

    /// Counts a request.
    pub fn count(&self, route: &str, status: u16) {
        let mut map = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        *map.entry((route.to_string(), status)).or_default() += 1;
    }
}
