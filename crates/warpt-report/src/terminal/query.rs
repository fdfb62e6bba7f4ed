//! `warpt results query`: rows of a read-only query as a table or CSV.

use comfy_table::Cell;
use serde_json::Value;

use super::table;

/// A query value as text (NULL as nothing).
fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The rows under their column names, in warpt's table style.
pub fn query_table(columns: &[String], rows: &[Vec<Value>]) -> String {
    let names: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut t = table(&names);
    for r in rows {
        t.add_row(r.iter().map(|v| Cell::new(text(v))).collect::<Vec<_>>());
    }
    t.to_string()
}

/// The rows as CSV with a header line (RFC 4180 quoting), each line ended.
pub fn query_csv(columns: &[String], rows: &[Vec<Value>]) -> String {
    let line = |cells: Vec<String>| cells.join(",") + "\n";
    let mut out = line(
        columns
            .iter()
            .map(|c| warpt_model::escape::csv(c))
            .collect(),
    );
    for r in rows {
        out += &line(
            r.iter()
                .map(|v| warpt_model::escape::csv(&text(v)))
                .collect(),
        );
    }
    out
}
