//! One connection to either backend, with the small surface the store uses.
//!
//! The store's SQL is written once, in the subset SQLite and PostgreSQL
//! share, with numbered placeholders (`?1`, `?2`, ...). [`Db`] runs it on
//! SQLite as it is and on PostgreSQL after [`translate`] (`$1`, `$2`, ...;
//! SQLite's `INDEXED BY` planner hints dropped). Values cross as [`Value`]
//! (NULL, integer, real, text: the four types the schema uses), rows come
//! back whole as [`Row`]s, so no statement stays open while another runs.

mod pg;
mod pg_types;
mod sqlite;
pub mod tls;

pub use pg::{PgConn, PgInner, row as pg_row};
pub use pg_types::Cell;
pub use sqlite::{SqliteConn, value as sqlite_value};

use crate::StoreError;

/// Which SQL dialect a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite 3 (bundled).
    Sqlite,
    /// PostgreSQL 12 or newer.
    Postgres,
}

/// A value bound to a statement or read from a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A 64-bit integer (booleans are stored as 0 and 1).
    Int(i64),
    /// A 64-bit float.
    Real(f64),
    /// UTF-8 text (times are RFC 3339 text, documents JSON text).
    Text(String),
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<usize> for Value {
    fn from(v: usize) -> Self {
        Value::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::Int(i64::from(v))
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Int(i64::from(v))
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Real(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_string())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Self {
        Value::Text(v.clone())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

impl From<&Option<String>> for Value {
    fn from(v: &Option<String>) -> Self {
        v.as_ref().map_or(Value::Null, Into::into)
    }
}

/// Builds a `[Value; N]` from expressions of any type [`Value`] comes from.
#[macro_export]
#[doc(hidden)]
macro_rules! vals {
    ($($v:expr),* $(,)?) => {
        [$($crate::db::Value::from($v)),*]
    };
}

/// A type a [`Value`] converts to.
pub trait FromValue: Sized {
    /// The conversion; `None` when the value is of another type.
    fn from_value(v: &Value) -> Option<Self>;
}

impl FromValue for i64 {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
}

impl FromValue for u32 {
    fn from_value(v: &Value) -> Option<Self> {
        i64::from_value(v).and_then(|i| u32::try_from(i).ok())
    }
}

impl FromValue for bool {
    fn from_value(v: &Value) -> Option<Self> {
        i64::from_value(v).map(|i| i != 0)
    }
}

impl FromValue for f64 {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Real(f) => Some(*f),
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
}

impl FromValue for String {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Text(s) => Some(s.clone()),
            _ => None,
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Null => Some(None),
            other => T::from_value(other).map(Some),
        }
    }
}

/// One result row, read whole.
#[derive(Debug, Clone, PartialEq)]
pub struct Row(pub Vec<Value>);

impl Row {
    /// Column `i` as a `T`; a missing column or another type is
    /// [`StoreError::Corrupt`] (the store's own queries never ask for one).
    pub fn get<T: FromValue>(&self, i: usize) -> Result<T, StoreError> {
        let v = self
            .0
            .get(i)
            .ok_or_else(|| StoreError::Corrupt(format!("no column {i} in a row")))?;
        T::from_value(v).ok_or_else(|| {
            StoreError::Corrupt(format!(
                "column {i} holds {v:?}, not a {}",
                std::any::type_name::<T>()
            ))
        })
    }
}

/// An open connection to a SQLite file or a PostgreSQL database.
pub enum Db {
    /// SQLite.
    Sqlite(SqliteConn),
    /// PostgreSQL (boxed: the client and its statement cache are large).
    Postgres(Box<PgConn>),
}

impl Db {
    /// The dialect it speaks.
    pub fn dialect(&self) -> Dialect {
        match self {
            Db::Sqlite(_) => Dialect::Sqlite,
            Db::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Runs a statement; returns how many rows it changed.
    pub fn execute(&self, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
        match self {
            Db::Sqlite(c) => c.execute(sql, params),
            Db::Postgres(c) => c.execute(&translate(sql), params),
        }
    }

    /// Every row of a query.
    pub fn rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        match self {
            Db::Sqlite(c) => c.rows(sql, params),
            Db::Postgres(c) => c.rows(&translate(sql), params),
        }
    }

    /// The first row of a query, if any.
    pub fn row(&self, sql: &str, params: &[Value]) -> Result<Option<Row>, StoreError> {
        Ok(self.rows(sql, params)?.into_iter().next())
    }

    /// Inserts `rows` (each a value per column of `columns`) into `table`
    /// in as few statements as the parameter limits allow, and returns the
    /// `returning` columns of every inserted row, in no promised order (a
    /// caller matches them by a key it returned). One round trip per
    /// statement, where a row at a time costs one per row: what makes a
    /// database across a network usable.
    pub fn insert_rows(
        &self,
        table: &str,
        columns: &[&str],
        rows: Vec<Vec<Value>>,
        returning: &str,
    ) -> Result<Vec<Row>, StoreError> {
        // Below SQLite's 32 766 and PostgreSQL's 65 535 bound parameters.
        const MAX_PARAMS: usize = 30_000;
        let per = (MAX_PARAMS / columns.len().max(1)).max(1);
        let mut out = Vec::with_capacity(rows.len());
        let mut rows = rows.into_iter().peekable();
        while rows.peek().is_some() {
            let chunk: Vec<Vec<Value>> = rows.by_ref().take(per).collect();
            let mut sql = format!("INSERT INTO {table} ({}) VALUES ", columns.join(", "));
            let mut params = Vec::with_capacity(chunk.len() * columns.len());
            for (i, row) in chunk.into_iter().enumerate() {
                if row.len() != columns.len() {
                    return Err(StoreError::Corrupt(format!(
                        "{} values for the {} columns of {table}",
                        row.len(),
                        columns.len()
                    )));
                }
                sql.push_str(if i == 0 { "(" } else { ", (" });
                for j in 0..columns.len() {
                    if j > 0 {
                        sql.push_str(", ");
                    }
                    sql.push_str(&format!("?{}", params.len() + j + 1));
                }
                sql.push(')');
                params.extend(row);
            }
            sql.push_str(&format!(" RETURNING {returning}"));
            out.extend(self.rows(&sql, &params)?);
        }
        Ok(out)
    }

    /// Stores each metric's samples, in order: `(metric_id, values)`.
    pub fn insert_samples(&self, metrics: &[(i64, &[f64])]) -> Result<(), StoreError> {
        match self {
            Db::Sqlite(c) => c.insert_samples(metrics),
            Db::Postgres(c) => c.insert_samples(metrics),
        }
    }

    /// Runs `f` in one transaction: committed when it returns `Ok`, rolled
    /// back otherwise. On SQLite the write lock is taken at the start
    /// (`BEGIN IMMEDIATE`), so concurrent writers queue instead of failing
    /// when a read turns into a write.
    pub fn transaction<T>(
        &self,
        f: impl FnOnce(&Db) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let begin = match self {
            Db::Sqlite(_) => "BEGIN IMMEDIATE",
            Db::Postgres(_) => "BEGIN",
        };
        self.batch(begin)?;
        match f(self) {
            Ok(v) => match self.batch("COMMIT") {
                Ok(()) => Ok(v),
                Err(e) => {
                    let _ = self.batch("ROLLBACK");
                    Err(e)
                }
            },
            Err(e) => {
                // A failed rollback leaves nothing to add to the first error.
                let _ = self.batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Runs statements without parameters (schema changes, transaction
    /// control), several separated by `;`.
    pub fn batch(&self, sql: &str) -> Result<(), StoreError> {
        match self {
            Db::Sqlite(c) => c.batch(sql),
            Db::Postgres(c) => c.batch(sql),
        }
    }
}

/// The store's SQL for PostgreSQL: `?N` placeholders become `$N` and
/// SQLite's `INDEXED BY name` hints are dropped. Text inside single quotes
/// is left alone.
pub fn translate(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut chars = sql.char_indices().peekable();
    let mut quoted = false;
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            quoted = !quoted;
            out.push(c);
            continue;
        }
        if quoted {
            out.push(c);
            continue;
        }
        if c == '?' && chars.peek().is_some_and(|(_, d)| d.is_ascii_digit()) {
            out.push('$');
            continue;
        }
        if (c == 'I' || c == 'i')
            && sql[i..].len() >= 10
            && sql[i..i + 10].eq_ignore_ascii_case("INDEXED BY")
        {
            let boundary = out.is_empty() || out.ends_with(|p: char| p.is_whitespace());
            if boundary {
                // Skip "INDEXED BY", the blanks after it and the index name.
                let rest = &sql[i + 10..];
                let blanks = rest.len() - rest.trim_start().len();
                let name = rest[blanks..]
                    .find(|p: char| !(p.is_alphanumeric() || p == '_'))
                    .unwrap_or(rest.len() - blanks);
                let skip_to = i + 10 + blanks + name;
                while chars.peek().is_some_and(|(j, _)| *j < skip_to) {
                    chars.next();
                }
                continue;
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn translation_renumbers_placeholders_and_drops_index_hints() {
        assert_eq!(
            translate("SELECT x FROM t INDEXED BY t_idx WHERE a = ?1 AND b = '?2' AND c = ?12"),
            "SELECT x FROM t  WHERE a = $1 AND b = '?2' AND c = $12"
        );
        assert_eq!(
            translate("SELECT 'INDEXED BY x', ?"),
            "SELECT 'INDEXED BY x', ?"
        );
        assert_eq!(
            translate("JOIN s INDEXED BY runs_cover ON s.id = r.run_id"),
            "JOIN s  ON s.id = r.run_id"
        );
    }

    #[test]
    fn rows_convert_to_the_types_asked_for() {
        let row = Row(vec![
            Value::Int(3),
            Value::Null,
            Value::Real(1.5),
            Value::Text("x".into()),
        ]);
        assert_eq!(row.get::<i64>(0).unwrap(), 3);
        assert!(row.get::<bool>(0).unwrap());
        assert_eq!(row.get::<f64>(0).unwrap(), 3.0);
        assert_eq!(row.get::<Option<String>>(1).unwrap(), None);
        assert_eq!(row.get::<f64>(2).unwrap(), 1.5);
        assert_eq!(row.get::<String>(3).unwrap(), "x");
        assert!(row.get::<i64>(3).is_err());
        assert!(row.get::<i64>(9).is_err());
    }
}
