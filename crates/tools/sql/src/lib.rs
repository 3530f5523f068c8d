//! # agent-tools-sql
//!
//! Read-only SQL over a SQLite database, in the provider `sql`:
//!
//! - `query_database(query, limit = 100)`: runs one `SELECT` (or
//!   `WITH ... SELECT`) and returns `{columns, rows, count, truncated}`,
//!   SQLite values mapped to JSON (integer and real as numbers, text as
//!   strings, NULL as null, BLOBs as base64 strings with a note).
//! - `describe_database()`: tables and views, columns with their types,
//!   primary and foreign keys, row counts.
//!
//! Read-only by construction, not by looking at the SQL text: the file is
//! opened with `SQLITE_OPEN_READ_ONLY` (never created), `PRAGMA query_only`
//! is on, and an authorizer consulted by SQLite's own parser allows only
//! reads, `SELECT`, functions, recursive CTEs and schema-reading pragmas.
//! `INSERT`, `UPDATE`, `DELETE`, `CREATE`, `DROP`, `ATTACH`, other pragmas
//! (`PRAGMA writable_schema = ON`), `VACUUM INTO`, and input with more than
//! one statement (`SELECT 1; DROP TABLE t`) are refused with a message that
//! says why. The authorizer is in force at every prepare, including the one
//! that counts statements: SQLite applies `PRAGMA hard_heap_limit`,
//! `soft_heap_limit` and `temp_store_directory` to the whole process while
//! *preparing* them, so they are refused before they take effect.
//!
//! Limits, all on the call's own connection; no process-wide SQLite setting
//! is changed (SQLite's heap limits are process-wide, so none is set):
//!
//! - values read or built: at most [`MAX_VALUE_BYTES`] (1 MiB); a larger
//!   stored value cannot be read, and the error says so;
//! - LIKE and GLOB patterns: at most [`MAX_PATTERN_BYTES`] (128 bytes);
//!   function calls: at most [`MAX_FUNCTION_ARGS`] arguments; SQL text: at
//!   most [`MAX_SQL_BYTES`];
//! - temporary tables and sorts go to temporary files (`temp_store =
//!   FILE`), so SQLite's page cache bounds the memory they take;
//! - `instr(X, Y)`, `replace(X, Y, Z)`, `trim`/`ltrim`/`rtrim(X, Y)` and
//!   `unhex(X, Y)` are replaced: SQLite's own take time proportional to the
//!   *product* of their arguments' lengths, all inside one function call,
//!   where no time limit reaches (one `ltrim` over 512 KiB runs for
//!   minutes). The replacements give the same results in linear time;
//!   `unhex(X, Y)` runs SQLite's own when that is cheap and is refused
//!   otherwise;
//! - time: the call stops after the time limit (default 5 s) with a clear
//!   error, even an endless recursive CTE. A progress handler checks the
//!   clock, and a watcher task interrupts the connection
//!   (`sqlite3_interrupt`) at the deadline or when the call's cancellation
//!   token fires. A cancelled call returns at once, and its blocking thread
//!   is freed moments later;
//! - results: text longer than [`MAX_TEXT_BYTES`] (4 KiB) is cut at a
//!   character boundary and ends with `… [text cut: N of M bytes shown]`;
//!   BLOBs are cut to [`MAX_BLOB_BYTES`]; a note names the columns.
//!
//! Each call runs on a blocking thread with its own connection.
//!
//! ```
//! use std::sync::Arc;
//!
//! use agent_core::{ToolContext, ToolRegistry};
//! use agent_tools::ToolBox;
//! use agent_tools_sql::{SqlConfig, SqlTools};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let directory = tempfile::tempdir()?;
//! # let path = directory.path().join("shop.sqlite");
//! # rusqlite::Connection::open(&path)?.execute_batch(
//! #     "CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL);
//! #      INSERT INTO products (name, price) VALUES ('tea', 4.5), ('coffee', 7.25);",
//! # )?;
//! // `path` is an existing SQLite file.
//! let tools = SqlTools::open(SqlConfig::new(&path))?;
//! let registry = ToolBox::new();
//! registry.register(Arc::new(tools.tool_set()), true)?;
//!
//! let context = ToolContext::new();
//! let query = json!({"query": "SELECT name, price FROM products ORDER BY price DESC"});
//! let run = registry.execute("query_database", &query, &context).await;
//! assert_eq!(
//!     run.outcome?.to_content(),
//!     r#"{"columns":["name","price"],"rows":[["coffee",7.25],["tea",4.5]],"count":2,"truncated":false}"#
//! );
//!
//! let run = registry.execute("query_database", &json!({"query": "DELETE FROM products"}), &context).await;
//! assert!(run.outcome.unwrap_err().to_string().starts_with("refused: the database is read-only"));
//! # Ok(())
//! # }
//! ```

mod config;
mod describe;
mod functions;
mod guard;
mod query;
mod tools;
mod watch;

pub use config::SqlConfig;
pub use describe::{ColumnDescription, DatabaseDescription, ForeignKey, TableDescription};
pub use guard::{MAX_FUNCTION_ARGS, MAX_PATTERN_BYTES, MAX_SQL_BYTES, MAX_VALUE_BYTES};
pub use query::{MAX_BLOB_BYTES, MAX_TEXT_BYTES, QueryResult};
pub use tools::{DescribeArgs, PROVIDER_NAME, QueryArgs, SqlError, SqlTools};
