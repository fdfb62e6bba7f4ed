//! `warpt results query`: SQL that can read the store and nothing else.
//!
//! SQLite: three locks: the file is opened read-only, `PRAGMA query_only`
//! is set, and an authorizer allows only reads (SELECT, reading columns,
//! functions, recursive CTEs, schema-describing pragmas and reading the
//! version), so `DELETE`, `UPDATE`, `ATTACH` or `PRAGMA writable_schema`
//! are refused before they run.
//!
//! PostgreSQL: two locks: the statement runs in a `READ ONLY` transaction
//! (rolled back after), as the role `warpt_reader`, which may `SELECT` the
//! store's tables and nothing else; and the extended protocol takes one
//! statement, so `SELECT 1; DELETE ...` is refused whole.

use std::path::Path;

use postgres::fallible_iterator::FallibleIterator;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde::Serialize;

use crate::db::{PgConn, Value};
use crate::schema::READER_ROLE;
use crate::{Location, StoreError};

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
    /// Which cap cut the answer short, if one did (left out of the JSON
    /// when none, so uncapped output is as before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Cap>,
}

/// A cap of [`Limits`] that cut an answer short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cap {
    /// More rows matched than `max_rows`.
    Rows,
    /// The rows so far filled `max_bytes`.
    Bytes,
}

/// Rows gathered under the caps of [`Limits`].
struct Gather {
    rows: Vec<Vec<serde_json::Value>>,
    bytes: usize,
    max_rows: usize,
    max_bytes: usize,
    truncated: Option<Cap>,
}

impl Gather {
    fn new(limits: Option<Limits>) -> Self {
        Gather {
            rows: Vec::new(),
            bytes: 0,
            max_rows: limits.map_or(usize::MAX, |l| l.max_rows),
            max_bytes: limits.map_or(usize::MAX, |l| l.max_bytes),
            truncated: None,
        }
    }

    /// Whether another row may be read.
    fn open(&mut self) -> bool {
        if self.rows.len() >= self.max_rows {
            self.truncated = Some(Cap::Rows);
        }
        self.truncated.is_none()
    }

    /// Keeps `row`, unless it would take the answer past the byte cap.
    fn push(&mut self, row: Vec<serde_json::Value>) {
        let size: usize = row.iter().map(json_size).sum::<usize>() + 2;
        if self.bytes.saturating_add(size) > self.max_bytes {
            self.truncated = Some(Cap::Bytes);
            return;
        }
        self.bytes += size;
        self.rows.push(row);
    }
}

/// About the bytes `v` takes in the JSON answer (a bound from above for
/// strings without escapes; what matters is the order of magnitude).
fn json_size(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::String(s) => s.len() + 3,
        serde_json::Value::Null => 5,
        _ => 25,
    }
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

fn json(v: Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Int(i) => i.into(),
        Value::Real(f) => {
            serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, Into::into)
        }
        Value::Text(t) => t.into(),
    }
}

fn sqlite_json(v: ValueRef<'_>) -> serde_json::Value {
    json(crate::db::sqlite_value(v))
}

/// Caps on a query run for someone else (the server's SQL console).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Rows returned at most; the output says when more were left out.
    pub max_rows: usize,
    /// Wall time after which the statement is interrupted.
    pub max_time: std::time::Duration,
    /// Bytes of values the answer holds at most; also the largest string
    /// or blob SQLite may build while computing it.
    pub max_bytes: usize,
}

/// Runs one read-only statement against the store at `location`.
pub fn query(location: &Location, sql: &str) -> Result<QueryOutput, StoreError> {
    query_limited(location, sql, None)
}

/// [`query`] with caps: at most `limits.max_rows` rows and
/// `limits.max_bytes` of values (`truncated` names the cap that cut it),
/// and a statement still running after `limits.max_time` is interrupted
/// ([`StoreError::TimedOut`]), by a timer rather than by counting the
/// statement's steps (one step can take seconds).
pub fn query_limited(
    location: &Location,
    sql: &str,
    limits: Option<Limits>,
) -> Result<QueryOutput, StoreError> {
    match location {
        Location::Sqlite(path) => query_sqlite(path, sql, limits),
        Location::Postgres(url) => query_postgres(url, sql, limits),
    }
}

fn query_sqlite(path: &Path, sql: &str, limits: Option<Limits>) -> Result<QueryOutput, StoreError> {
    if !path.exists() {
        return Err(StoreError::NotFound(format!("store {}", path.display())));
    }
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.pragma_update(None, "query_only", true)?;
    conn.authorizer(Some(authorize))?;
    // Ends the timer thread (dropped when the query returns).
    let mut _timer = None;
    if let Some(l) = limits {
        let length = i32::try_from(l.max_bytes).unwrap_or(i32::MAX).max(1);
        conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH, length)?;
        let handle = conn.get_interrupt_handle();
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let max_time = l.max_time;
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(max_time)
            {
                handle.interrupt();
            }
        });
        _timer = Some(stop);
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
    let mut gather = Gather::new(limits);
    let mut cursor = stmt.query([]).map_err(refused)?;
    while let Some(row) = cursor.next().map_err(refused)? {
        if !gather.open() {
            break;
        }
        gather.push(
            (0..width)
                .map(|i| row.get_ref(i).map(sqlite_json))
                .collect::<Result<_, _>>()?,
        );
    }
    Ok(QueryOutput {
        columns,
        rows: gather.rows,
        truncated: gather.truncated,
    })
}

fn query_postgres(url: &str, sql: &str, limits: Option<Limits>) -> Result<QueryOutput, StoreError> {
    let conn = PgConn::connect(url)?;
    let mut inner = conn.inner();
    let mut tx = inner.client.build_transaction().read_only(true).start()?;
    if let Err(e) = tx.batch_execute(&format!("SET LOCAL ROLE {READER_ROLE}")) {
        return Err(StoreError::ReadOnly(format!(
            "results query on PostgreSQL runs as the role {READER_ROLE}, which this user cannot take ({}); \
             a user who may create roles sets it up by opening the store once, or by hand: \
             CREATE ROLE {READER_ROLE} NOLOGIN; GRANT SELECT ON ALL TABLES IN SCHEMA public TO {READER_ROLE}; \
             GRANT {READER_ROLE} TO <user>",
            StoreError::from(e)
        )));
    }
    if let Some(l) = limits {
        tx.batch_execute(&format!(
            "SET LOCAL statement_timeout = {}",
            l.max_time.as_millis().max(1)
        ))?;
    }
    let classify = |e: postgres::Error| match e.code().map(|c| c.code()) {
        // read_only_sql_transaction, insufficient_privilege
        Some("25006") | Some("42501") => StoreError::ReadOnly(StoreError::from(e).to_string()),
        // query_canceled: the statement timeout
        Some("57014") => StoreError::TimedOut(limits.map(|l| l.max_time).unwrap_or_default()),
        _ => StoreError::from(e),
    };
    let stmt = tx.prepare(sql).map_err(classify)?;
    let columns: Vec<String> = stmt
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    let mut gather = Gather::new(limits);
    {
        let mut cursor = tx
            .query_raw(&stmt, std::iter::empty::<Value>())
            .map_err(classify)?;
        while let Some(row) = cursor.next().map_err(classify)? {
            if !gather.open() {
                break;
            }
            gather.push(crate::db::pg_row(&row)?.0.into_iter().map(json).collect());
        }
    }
    // Nothing to keep: the transaction only read.
    tx.rollback()?;
    Ok(QueryOutput {
        columns,
        rows: gather.rows,
        truncated: gather.truncated,
    })
}
