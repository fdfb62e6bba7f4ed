//! The PostgreSQL side of [`super::Db`]: a synchronous client with its
//! prepared statements cached by SQL text.

use std::cell::{RefCell, RefMut};
use std::collections::HashMap;
use std::time::Duration;

use postgres::types::ToSql;
use postgres::{Client, NoTls, Statement};

use super::{Cell, Row, Value};
use crate::StoreError;

/// Prepared statements kept per connection before the cache starts over.
const STATEMENT_CACHE: usize = 256;

/// A connection and the statements prepared on it.
pub struct PgInner {
    /// The client.
    pub client: Client,
    statements: HashMap<String, Statement>,
}

/// An open PostgreSQL connection.
///
/// The client needs `&mut` for every call; the store's reads take `&self`,
/// so it sits in a `RefCell` (a connection is used by one thread at a
/// time, and no call re-enters another).
pub struct PgConn {
    inner: RefCell<PgInner>,
}

impl From<postgres::Error> for StoreError {
    fn from(e: postgres::Error) -> Self {
        let code = e.code().map(|c| c.code().to_string());
        let message = match e.as_db_error() {
            Some(db) => {
                let mut m = format!("{}: {}", db.severity(), db.message());
                if let Some(d) = db.detail() {
                    m.push_str(&format!(" ({d})"));
                }
                if let Some(h) = db.hint() {
                    m.push_str(&format!("; hint: {h}"));
                }
                m
            }
            None => {
                let mut m = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(s) = source {
                    m.push_str(&format!(": {s}"));
                    source = s.source();
                }
                m
            }
        };
        StoreError::Postgres { message, code }
    }
}

impl PgConn {
    /// Connects to `url` (`postgres://user:password@host:port/database`,
    /// or any form libpq accepts), waiting at most 10 s unless the URL sets
    /// `connect_timeout`.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let mut config: postgres::Config = url.parse()?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("warpt");
        }
        let client = config.connect(NoTls)?;
        Ok(PgConn {
            inner: RefCell::new(PgInner {
                client,
                statements: HashMap::new(),
            }),
        })
    }

    /// The client, for what only PostgreSQL has (read-only transactions,
    /// roles).
    pub fn inner(&self) -> RefMut<'_, PgInner> {
        self.inner.borrow_mut()
    }

    fn statement(inner: &mut PgInner, sql: &str) -> Result<Statement, StoreError> {
        if let Some(s) = inner.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = inner.client.prepare(sql)?;
        if inner.statements.len() >= STATEMENT_CACHE {
            inner.statements.clear();
        }
        inner.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    pub(super) fn execute(&self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        let mut inner = self.inner.borrow_mut();
        let stmt = Self::statement(&mut inner, sql)?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        Ok(inner.client.execute(&stmt, &refs)?)
    }

    pub(super) fn rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        let mut inner = self.inner.borrow_mut();
        let stmt = Self::statement(&mut inner, sql)?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        inner.client.query(&stmt, &refs)?.iter().map(row).collect()
    }

    pub(super) fn insert_samples(&self, metric_id: i64, values: &[f64]) -> Result<(), StoreError> {
        if values.is_empty() {
            return Ok(());
        }
        // One round trip for all of a metric's samples.
        let mut inner = self.inner.borrow_mut();
        let stmt = Self::statement(
            &mut inner,
            "INSERT INTO samples (metric_id, idx, value) \
             SELECT $1::bigint, t.i - 1, t.v FROM unnest($2::float8[]) WITH ORDINALITY AS t(v, i)",
        )?;
        let values = values.to_vec();
        inner.client.execute(&stmt, &[&metric_id, &values])?;
        Ok(())
    }

    pub(super) fn batch(&self, sql: &str) -> Result<(), StoreError> {
        Ok(self.inner.borrow_mut().client.batch_execute(sql)?)
    }
}

/// A result row as [`Value`]s.
pub fn row(r: &postgres::Row) -> Result<Row, StoreError> {
    Ok(Row((0..r.len())
        .map(|i| r.try_get::<_, Cell>(i).map(|c| c.0))
        .collect::<Result<_, _>>()?))
}
