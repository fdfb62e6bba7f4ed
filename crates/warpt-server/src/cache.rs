//! Answers to read requests, kept until the store changes.
//!
//! Stored runs never change once recorded, so a read answer stays right
//! until something is written. "Something was written" is read from the
//! store's files: SQLite in WAL mode appends every commit to the `-wal`
//! file (and a checkpoint rewrites the database file), so the sizes and
//! modification times of the two change with every write. Each lookup
//! compares them with those the cached answers were computed under and
//! drops every answer when they differ; an answer computed while a write
//! landed is not kept.
//!
//! A PostgreSQL store has no files to watch, and other machines write to it
//! at any time: its answers are computed afresh for every request.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use axum::body::Bytes;
use warpt_store::Location;

/// The store files' (length, modified) pairs: equal means unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version([(u64, Option<SystemTime>); 2]);

/// A kept answer: content type and body.
#[derive(Debug, Clone)]
pub struct Answer {
    /// `Content-Type`.
    pub content_type: String,
    /// The body.
    pub body: Bytes,
}

/// Answers by request URI, for one store version.
pub struct Cache {
    db: PathBuf,
    wal: PathBuf,
    capacity: usize,
    inner: Mutex<Kept>,
}

/// The answers of one store version, and the bytes they take.
#[derive(Default)]
struct Kept {
    version: Option<Version>,
    answers: HashMap<String, Answer>,
    bytes: usize,
}

impl Kept {
    fn clear(&mut self) {
        self.answers.clear();
        self.bytes = 0;
    }
}

/// Bodies larger than this are not kept.
const MAX_BODY: usize = 4 << 20;
/// Bytes of keys and bodies kept at most, whatever the number of answers:
/// requests with ever new query strings cannot grow the server past it.
pub const MAX_TOTAL: usize = 64 << 20;

impl Cache {
    /// A cache of at most `capacity` answers (0: none) over `store` (none
    /// for a PostgreSQL store).
    pub fn new(store: &Location, capacity: usize) -> Self {
        let (db, capacity) = match store.sqlite_path() {
            Some(p) => (p.to_path_buf(), capacity),
            None => (PathBuf::new(), 0),
        };
        let mut wal = db.as_os_str().to_owned();
        wal.push("-wal");
        Cache {
            db,
            wal: PathBuf::from(wal),
            capacity,
            inner: Mutex::new(Kept::default()),
        }
    }

    /// Whether answers are kept at all.
    pub fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// The store's version now.
    pub fn version(&self) -> Version {
        let stat =
            |p: &Path| std::fs::metadata(p).map_or((0, None), |m| (m.len(), m.modified().ok()));
        Version([stat(&self.db), stat(&self.wal)])
    }

    /// The answer kept for `key`, if the store has not changed since.
    pub fn get(&self, key: &str) -> Option<Answer> {
        let now = self.version();
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.version != Some(now) {
            inner.version = Some(now);
            inner.clear();
            return None;
        }
        inner.answers.get(key).cloned()
    }

    /// Keeps `answer`, computed under `version`, unless the store changed
    /// meanwhile (or it is too big, or the cache is full in answers or in
    /// bytes: then it starts over, the simplest fair eviction for a
    /// working set that fits).
    pub fn put(&self, key: String, version: Version, answer: Answer) {
        if !self.enabled() || answer.body.len() > MAX_BODY || self.version() != version {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.version != Some(version) {
            return;
        }
        if let Some(old) = inner.answers.remove(&key) {
            inner.bytes -= key.len() + old.body.len();
        }
        let size = key.len() + answer.body.len();
        if inner.answers.len() >= self.capacity || inner.bytes + size > MAX_TOTAL {
            inner.clear();
        }
        inner.bytes += size;
        inner.answers.insert(key, answer);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_write_to_the_store_drops_what_was_kept() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        let store = warpt_store::Store::open(&db).unwrap();
        let cache = Cache::new(&Location::Sqlite(db.clone()), 8);
        let answer = || Answer {
            content_type: "application/json".into(),
            body: Bytes::from_static(b"{}"),
        };
        assert!(cache.get("/a").is_none());
        cache.put("/a".into(), cache.version(), answer());
        assert_eq!(cache.get("/a").unwrap().body, Bytes::from_static(b"{}"));
        // Any commit changes the files.
        store
            .add_job(&warpt_store::Job {
                id: "j".into(),
                state: warpt_store::JobState::Queued,
                request: serde_json::json!({}),
                submitted_at: jiff::Timestamp::now(),
                started_at: None,
                finished_at: None,
                message: None,
            })
            .unwrap();
        assert!(cache.get("/a").is_none());
        // An answer computed before that write is not kept.
        let stale = Version([(0, None), (0, None)]);
        cache.put("/b".into(), stale, answer());
        assert!(cache.get("/b").is_none());
        // Disabled: nothing is kept.
        let off = Cache::new(&Location::Sqlite(db.clone()), 0);
        off.get("/a");
        off.put("/a".into(), off.version(), answer());
        assert!(off.get("/a").is_none());
    }

    #[test]
    fn kept_answers_are_bounded_in_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        warpt_store::Store::open(&db).unwrap();
        let cache = Cache::new(&Location::Sqlite(db), 1024);
        cache.get("/");
        let big = Bytes::from(vec![b'x'; MAX_BODY]);
        for i in 0..40 {
            let answer = Answer {
                content_type: "text/plain".into(),
                body: big.clone(),
            };
            cache.put(format!("/r?{i}"), cache.version(), answer);
            let kept = cache.inner.lock().unwrap();
            let sum: usize = kept
                .answers
                .iter()
                .map(|(k, a)| k.len() + a.body.len())
                .sum();
            assert_eq!(kept.bytes, sum);
            assert!(kept.bytes <= MAX_TOTAL, "{} bytes kept", kept.bytes);
        }
        assert!(cache.get("/r?39").is_some(), "the newest answer is kept");
    }
}
