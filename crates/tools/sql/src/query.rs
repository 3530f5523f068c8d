//! `query_database`: one read-only statement, its rows mapped to JSON.

use agent_core::ToolError;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rusqlite::types::ValueRef;
use serde::Serialize;
use serde_json::Value;

use crate::guard::{Guarded, MAX_FUNCTION_ARGS, MAX_PATTERN_BYTES, MAX_VALUE_BYTES};
use crate::watch::Interruption;

/// The most bytes of one BLOB sent to the model (base64-encoded); longer
/// BLOBs are cut, and a note says so.
pub const MAX_BLOB_BYTES: usize = 4096;

/// The most bytes of one TEXT value sent to the model. Longer text is cut
/// at the last character boundary within this many bytes and ends with
/// `… [text cut: N of M bytes shown]`; a note names the columns.
pub const MAX_TEXT_BYTES: usize = 4096;

/// What `query_database` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryResult {
    /// Column names, in order.
    pub columns: Vec<String>,
    /// One array per row, values in column order: integers and reals as
    /// numbers, text as strings, NULL as null, BLOBs as base64 strings.
    pub rows: Vec<Vec<Value>>,
    /// How many rows are in `rows`.
    pub count: usize,
    /// Whether the query matched more rows than were returned.
    pub truncated: bool,
    /// Anything the model should know about the result (row limit, BLOBs,
    /// cut text).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Runs `sql`, which must be exactly one read-only statement, returning at
/// most `limit` rows.
pub(crate) fn run_query(guarded: &Guarded, sql: &str, limit: usize, timeout_ms: u64) -> Result<QueryResult, ToolError> {
    let failed = |error: rusqlite::Error| explain(guarded, &error, timeout_ms);
    match guarded.count_statements(sql).map_err(failed)? {
        0 => {
            return Err(ToolError::failed(
                "the query is empty; send one SELECT statement, e.g. SELECT * FROM orders LIMIT 10",
            ));
        }
        1 => {}
        _ => {
            return Err(ToolError::failed(
                "refused: the query contains more than one SQL statement; send exactly one SELECT statement \
                 per call (a single trailing \";\" is fine)",
            ));
        }
    }

    guarded.take_refusal();
    let mut statement = guarded.connection.prepare(sql).map_err(failed)?;
    if !statement.readonly() {
        return Err(refused("modify the database or another file"));
    }
    let columns: Vec<String> = statement.column_names().map(str::to_owned).collect();
    let width = columns.len();

    let mut rows_out = Vec::new();
    let mut truncated = false;
    let mut blob_columns: Vec<usize> = Vec::new();
    let mut clipped_blobs = false;
    let mut cut_text_columns: Vec<usize> = Vec::new();
    let mut rows = statement.query([]).map_err(failed)?;
    while let Some(row) = rows.next().map_err(failed)? {
        if rows_out.len() == limit {
            truncated = true;
            break;
        }
        let mut values = Vec::with_capacity(width);
        for index in 0..width {
            let value = row.get_ref(index).map_err(failed)?;
            if let ValueRef::Blob(bytes) = value {
                if !blob_columns.contains(&index) {
                    blob_columns.push(index);
                }
                clipped_blobs |= bytes.len() > MAX_BLOB_BYTES;
            }
            let long_text = matches!(value, ValueRef::Text(text) if text.len() > MAX_TEXT_BYTES);
            if long_text && !cut_text_columns.contains(&index) {
                cut_text_columns.push(index);
            }
            values.push(to_json(value));
        }
        rows_out.push(values);
    }

    let names = |indexes: &[usize]| -> String {
        let names: Vec<String> = indexes.iter().map(|&index| format!("\"{}\"", columns[index])).collect();
        names.join(", ")
    };
    let mut notes = Vec::new();
    if truncated {
        notes.push(format!(
            "only the first {limit} rows are shown; narrow the query with WHERE, aggregate it, or use \
             ORDER BY ... LIMIT to get the rows that matter"
        ));
    }
    if !blob_columns.is_empty() {
        let clipped = if clipped_blobs {
            format!(" (values longer than {MAX_BLOB_BYTES} bytes are cut to their first {MAX_BLOB_BYTES} bytes)")
        } else {
            String::new()
        };
        notes.push(format!(
            "column {} holds binary data (BLOB), shown base64-encoded{clipped}",
            names(&blob_columns)
        ));
    }
    if !cut_text_columns.is_empty() {
        notes.push(format!(
            "column {} holds text longer than {MAX_TEXT_BYTES} bytes; such values are cut to their first \
             {MAX_TEXT_BYTES} bytes (at a character boundary) and end with \"… [text cut: N of M bytes shown]\"; \
             use substr() to read the rest",
            names(&cut_text_columns)
        ));
    }
    Ok(QueryResult {
        columns,
        count: rows_out.len(),
        rows: rows_out,
        truncated,
        notes,
    })
}

/// One SQLite value as JSON.
pub(crate) fn to_json(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(integer) => Value::from(integer),
        ValueRef::Real(real) => serde_json::Number::from_f64(real).map_or_else(
            || Value::String(if real > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()),
            Value::Number,
        ),
        ValueRef::Text(text) => Value::String(cut_text(text)),
        ValueRef::Blob(bytes) => Value::String(BASE64.encode(&bytes[..bytes.len().min(MAX_BLOB_BYTES)])),
    }
}

/// `text` as a string (invalid UTF-8 replaced), cut to at most
/// [`MAX_TEXT_BYTES`] at a character boundary and marked when longer.
fn cut_text(text: &[u8]) -> String {
    let string = String::from_utf8_lossy(text);
    if text.len() <= MAX_TEXT_BYTES || string.len() <= MAX_TEXT_BYTES {
        return string.into_owned();
    }
    let mut end = MAX_TEXT_BYTES;
    while !string.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [text cut: {end} of {} bytes shown]", &string[..end], text.len())
}

/// A refusal, worded for the model.
pub(crate) fn refused(what: &str) -> ToolError {
    ToolError::failed(format!(
        "refused: the database is read-only and only SELECT queries (including WITH ... SELECT) may run, \
         but this query tries to {what}; rewrite it as a single SELECT"
    ))
}

/// Turns a SQLite error into a message the model can act on: a refusal by
/// the authorizer, the time limit, cancellation, or SQLite's own message.
pub(crate) fn explain(guarded: &Guarded, error: &rusqlite::Error, timeout_ms: u64) -> ToolError {
    if let Some(what) = guarded.take_refusal() {
        return refused(&what);
    }
    match guarded.interruption() {
        Some(Interruption::Cancelled) => return ToolError::Cancelled,
        Some(Interruption::TimedOut) => {
            return ToolError::failed(format!(
                "the query was stopped after {timeout_ms} ms, the time limit; make it cheaper: filter with WHERE, \
                 add LIMIT, avoid large cross joins, and give recursive CTEs a condition that ends them"
            ));
        }
        None => {}
    }
    let message = match error {
        rusqlite::Error::SqliteFailure(_, Some(message)) => message.clone(),
        other => other.to_string(),
    };
    let hint = if message.contains("no such table") || message.contains("no such column") {
        "; call describe_database to see the tables and their columns".to_owned()
    } else if message.contains("attempt to write a readonly database") || message.contains("query_only") {
        "; the database is read-only, only SELECT queries may run".to_owned()
    } else if message.contains("string or blob too big") {
        format!(
            "; values are limited to {MAX_VALUE_BYTES} bytes (1 MiB) here, both those read from the database and \
             those the query builds; leave out the columns that hold larger values, or build smaller ones"
        )
    } else if message.contains("LIKE or GLOB pattern too complex") {
        format!(
            "; LIKE and GLOB patterns are limited to {MAX_PATTERN_BYTES} bytes here; use a shorter pattern, or \
             instr() to look for a long piece of text"
        )
    } else if message.contains("too many arguments on function") {
        format!("; a function call takes at most {MAX_FUNCTION_ARGS} arguments here")
    } else {
        String::new()
    };
    ToolError::failed(format!("SQL error: {message}{hint}"))
}
