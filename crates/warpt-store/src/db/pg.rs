//! The PostgreSQL side of [`super::Db`]: a synchronous client with its
//! prepared statements cached by SQL text.

use std::cell::{RefCell, RefMut};
use std::collections::HashMap;
use std::time::Duration;

use postgres::types::ToSql;
use postgres::{Client, Statement};

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
    /// `connect_timeout`; over TLS as `sslmode` and `sslrootcert` say
    /// ([`super::tls`]).
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let (url, tls) = super::tls::split(url)?;
        let mut config: postgres::Config = url.parse()?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("warpt");
        }
        let client = config.connect(super::tls::connector(&tls)?)?;
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

    pub(super) fn insert_samples(&self, metrics: &[(i64, &[f64])]) -> Result<(), StoreError> {
        // One round trip for every sample of the run, as three arrays.
        let total: usize = metrics.iter().map(|(_, v)| v.len()).sum();
        if total == 0 {
            return Ok(());
        }
        let mut ids = Vec::with_capacity(total);
        let mut idx = Vec::with_capacity(total);
        let mut values = Vec::with_capacity(total);
        for (id, vs) in metrics {
            for (i, v) in vs.iter().enumerate() {
                ids.push(*id);
                idx.push(i as i64);
                values.push(*v);
            }
        }
        let mut inner = self.inner.borrow_mut();
        let stmt = Self::statement(
            &mut inner,
            "INSERT INTO samples (metric_id, idx, value) \
             SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::float8[])",
        )?;
        inner.client.execute(&stmt, &[&ids, &idx, &values])?;
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
