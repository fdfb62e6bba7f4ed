//! The SQLite side of [`super::Db`]: a rusqlite connection with cached
//! statements.

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ToSql, params_from_iter};

use super::{Row, Value};
use crate::StoreError;

impl ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            Value::Real(f) => ToSqlOutput::Borrowed(ValueRef::Real(*f)),
            Value::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
        })
    }
}

/// A value SQLite returned, as a [`Value`] (a BLOB, which the store never
/// writes, reads as a placeholder naming its size).
pub fn value(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Text(format!("<blob {} bytes>", b.len())),
    }
}

/// An open SQLite database.
pub struct SqliteConn {
    conn: Connection,
}

impl SqliteConn {
    /// Wraps an open connection.
    pub fn new(conn: Connection) -> Self {
        conn.set_prepared_statement_cache_capacity(64);
        SqliteConn { conn }
    }

    /// The connection itself, for what only SQLite has (pragmas).
    pub fn raw(&self) -> &Connection {
        &self.conn
    }

    pub(super) fn execute(&self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        Ok(stmt.execute(params_from_iter(params))? as u64)
    }

    pub(super) fn rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let width = stmt.column_count();
        let mut cursor = stmt.query(params_from_iter(params))?;
        let mut out = Vec::new();
        while let Some(r) = cursor.next()? {
            out.push(Row((0..width)
                .map(|i| r.get_ref(i).map(value))
                .collect::<Result<_, _>>()?));
        }
        Ok(out)
    }

    pub(super) fn insert_samples(&self, metrics: &[(i64, &[f64])]) -> Result<(), StoreError> {
        // In process, a prepared statement per row is as fast as it gets.
        let mut stmt = self
            .conn
            .prepare_cached("INSERT INTO samples (metric_id, idx, value) VALUES (?1, ?2, ?3)")?;
        for (metric_id, values) in metrics {
            for (i, v) in values.iter().enumerate() {
                stmt.execute(rusqlite::params![metric_id, i as i64, v])?;
            }
        }
        Ok(())
    }

    pub(super) fn batch(&self, sql: &str) -> Result<(), StoreError> {
        Ok(self.conn.execute_batch(sql)?)
    }
}
