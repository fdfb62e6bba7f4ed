//! `warpt results query`: SQL that can read the store and nothing else.
//!
//! Three locks: the file is opened read-only, `PRAGMA query_only` is set,
//! and an authorizer allows only reads (SELECT, reading columns, functions,
//! recursive CTEs, schema-describing pragmas and reading the version), so
//! `DELETE`, `UPDATE`, `ATTACH` or `PRAGMA writable_schema` are refused
//! before they run.

use std::path::Path;

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde::Serialize;

use crate::StoreError;

/// Pragmas that only describe the schema, whatever their argument.
const DESCRIBING_PRAGMAS: &[&str] = &[
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
];

/// Pragmas that read a value without an argument and set it with one.
const VERSION_PRAGMAS: &[&str] = &["user_version", "schema_version"];

/// A query's columns and rows, values as JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryOutput {
    /// Column names, in order.
    pub columns: Vec<String>,
    /// Rows, each with one value per column.
    pub rows: Vec<Vec<serde_json::Value>>,
    /// More rows matched than the row cap let through (left out of the
    /// JSON when false, so uncapped output is as before).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

fn authorize(ctx: AuthContext<'_>) -> Authorization {
    match ctx.action {
        AuthAction::Select
        | AuthAction::Read { .. }
        | AuthAction::Function { .. }
        | AuthAction::Recursive => Authorization::Allow,
        AuthAction::Pragma {
            pragma_name,
            pragma_value,
        } => {
            let name = pragma_name.to_ascii_lowercase();
            if DESCRIBING_PRAGMAS.contains(&name.as_str())
                || (VERSION_PRAGMAS.contains(&name.as_str()) && pragma_value.is_none())
            {
                Authorization::Allow
            } else {
                Authorization::Deny
            }
        }
        _ => Authorization::Deny,
    }
}

fn json(v: ValueRef<'_>) -> serde_json::Value {
    match v {
        ValueRef::Null => serde_json::Value::Null,
        ValueRef::Integer(i) => i.into(),
        ValueRef::Real(f) => {
            serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, Into::into)
        }
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned().into(),
        ValueRef::Blob(b) => format!("<blob {} bytes>", b.len()).into(),
    }
}

/// Caps on a query run for someone else (the server's SQL console).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Rows returned at most; the output says when more were left out.
    pub max_rows: usize,
    /// Wall time after which SQLite is interrupted.
    pub max_time: std::time::Duration,
}

/// Runs one read-only statement against the store at `path`.
pub fn query(path: &Path, sql: &str) -> Result<QueryOutput, StoreError> {
    query_limited(path, sql, None)
}

/// [`query`] with caps: at most `limits.max_rows` rows (`truncated` set
/// when there were more), and a statement still running after
/// `limits.max_time` is interrupted ([`StoreError::TimedOut`]).
pub fn query_limited(
    path: &Path,
    sql: &str,
    limits: Option<Limits>,
) -> Result<QueryOutput, StoreError> {
    if !path.exists() {
        return Err(StoreError::NotFound(format!("store {}", path.display())));
    }
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.pragma_update(None, "query_only", true)?;
    conn.authorizer(Some(authorize))?;
    if let Some(l) = limits {
        // SQLite calls this every 10k virtual-machine steps; a true return
        // interrupts the statement.
        let deadline = std::time::Instant::now() + l.max_time;
        conn.progress_handler(10_000, Some(move || std::time::Instant::now() >= deadline))?;
    }
    let timed_out = |e: &rusqlite::Error| {
        matches!(
            e.sqlite_error_code(),
            Some(rusqlite::ErrorCode::OperationInterrupted)
        )
    };
    let refused = |e: rusqlite::Error| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::AuthorizationForStatementDenied)
        | Some(rusqlite::ErrorCode::ReadOnly) => StoreError::ReadOnly(e.to_string()),
        _ if timed_out(&e) => StoreError::TimedOut(limits.map(|l| l.max_time).unwrap_or_default()),
        _ => StoreError::Sql(e),
    };
    let mut stmt = conn.prepare(sql).map_err(refused)?;
    if !stmt.readonly() {
        return Err(StoreError::ReadOnly("the statement writes".into()));
    }
    let columns: Vec<String> = stmt.column_names().map(str::to_string).collect();
    let width = columns.len();
    let mut rows = Vec::new();
    let mut truncated = false;
    let cap = limits.map_or(usize::MAX, |l| l.max_rows);
    let mut cursor = stmt.query([]).map_err(refused)?;
    while let Some(row) = cursor.next().map_err(refused)? {
        if rows.len() == cap {
            truncated = true;
            break;
        }
        rows.push(
            (0..width)
                .map(|i| row.get_ref(i).map(json))
                .collect::<Result<_, _>>()?,
        );
    }
    Ok(QueryOutput {
        columns,
        rows,
        truncated,
    })
}
