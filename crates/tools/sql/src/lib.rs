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
//! says why. A progress handler stops a query after the time limit
//! (default 5 s), so even an endless recursive CTE ends with a clear
//! error. Each call runs on a blocking thread with its own connection.
//!
//! ```
//! use std::sync::Arc;
//!
//! use agent_core::{ToolContext, ToolRegistry};
//! use agent_tools::Registry;
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
//! let registry = Registry::new();
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
mod guard;
mod query;
mod tools;

pub use config::SqlConfig;
pub use describe::{ColumnDescription, DatabaseDescription, ForeignKey, TableDescription};
pub use query::QueryResult;
pub use tools::{DescribeArgs, PROVIDER_NAME, QueryArgs, SqlError, SqlTools};
