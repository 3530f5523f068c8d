//! [`SqlTools`]: the `sql` provider and its tools.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{ToolContext, ToolError};
use agent_tools::{Json, ToolSet, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::config::SqlConfig;
use crate::describe::{DatabaseDescription, describe, list_tables};
use crate::guard::{Guarded, MAX_VALUE_BYTES};
use crate::query::{MAX_TEXT_BYTES, QueryResult, run_query};
use crate::watch::{Stop, watch};

/// The provider's name, used to enable or disable it.
pub const PROVIDER_NAME: &str = "sql";

/// How many table names the tool description lists.
const DESCRIPTION_TABLES: usize = 30;

/// Why the database could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SqlError {
    /// The configured file does not exist (it is never created).
    #[error("the SQLite database {} does not exist; set [tools.sql] path to an existing file", path.display())]
    NotFound {
        /// The configured path.
        path: PathBuf,
    },
    /// The file exists but is not a readable SQLite database.
    #[error("cannot open {} as a SQLite database: {message}", path.display())]
    Open {
        /// The configured path.
        path: PathBuf,
        /// SQLite's explanation.
        message: String,
    },
    /// A number of the configuration is out of range.
    #[error("`{key} = {value}` in [tools.sql] is out of range: use 1 or more")]
    OutOfRange {
        /// The key, as `agentry.toml` spells it.
        key: &'static str,
        /// The value given.
        value: u64,
    },
}

/// Arguments of `query_database`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryArgs {
    /// One read-only SQL statement in SQLite syntax: SELECT or WITH ... SELECT, e.g.
    /// "SELECT name, price FROM products WHERE price > 10 ORDER BY price DESC".
    pub query: String,
    /// The most rows to return (default 100). If more rows match, the result has truncated = true.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1))]
    pub limit: usize,
}

fn default_limit() -> usize {
    100
}

/// Arguments of `describe_database`: none. Unlike `agent_tools::NoArgs`,
/// an argument the model invents is refused (the schema says
/// `"additionalProperties": false`) rather than silently ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DescribeArgs {}

/// Read-only SQL over one SQLite database: `query_database` and
/// `describe_database`. Each call opens its own read-only connection on a
/// blocking thread, so calls run in parallel and share no state.
#[derive(Debug, Clone)]
pub struct SqlTools {
    config: Arc<SqlConfig>,
    tables: Vec<String>,
}

impl SqlTools {
    /// Checks that the configured database exists and can be read, and
    /// notes its tables for the tool description.
    pub fn open(config: SqlConfig) -> Result<Self, SqlError> {
        if config.timeout_ms == 0 {
            return Err(SqlError::OutOfRange {
                key: "timeout_ms",
                value: 0,
            });
        }
        if config.max_rows == 0 {
            return Err(SqlError::OutOfRange {
                key: "max_rows",
                value: 0,
            });
        }
        if !config.path.is_file() {
            return Err(SqlError::NotFound { path: config.path });
        }
        let open_error = |error: rusqlite::Error| SqlError::Open {
            path: config.path.clone(),
            message: error.to_string(),
        };
        let stop = Stop::new(Duration::from_millis(config.timeout_ms), None);
        let guarded = Guarded::open(&config.path, stop).map_err(open_error)?;
        let tables = list_tables(&guarded)
            .map_err(open_error)?
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        Ok(Self {
            config: Arc::new(config),
            tables,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &SqlConfig {
        &self.config
    }

    /// The tables and views found when the database was opened.
    pub fn tables(&self) -> &[String] {
        &self.tables
    }

    /// Runs one read-only statement, returning at most `limit` rows (and
    /// never more than the configured `max_rows`).
    pub async fn query(&self, sql: &str, limit: usize, context: &ToolContext) -> Result<QueryResult, ToolError> {
        let max_rows = self.config.max_rows.max(1);
        let limit = limit.clamp(1, max_rows);
        let sql = sql.to_owned();
        let capped = limit == max_rows;
        let mut result = self
            .blocking(context, move |guarded, timeout_ms| {
                run_query(guarded, &sql, limit, timeout_ms)
            })
            .await?;
        if capped && result.truncated {
            result
                .notes
                .push(format!("{max_rows} rows is the most this database returns per query"));
        }
        Ok(result)
    }

    /// Describes every table and view.
    pub async fn describe(&self, context: &ToolContext) -> Result<DatabaseDescription, ToolError> {
        self.blocking(context, describe).await
    }

    /// Runs `work` on a fresh guarded connection on a blocking thread.
    ///
    /// A watcher task interrupts the connection at the time limit or when
    /// `context` is cancelled, and keeps at it until the thread is done, so
    /// the thread is freed even when nobody waits for it any more. On
    /// cancellation this returns [`ToolError::Cancelled`] at once.
    async fn blocking<T, F>(&self, context: &ToolContext, work: F) -> Result<T, ToolError>
    where
        T: Send + 'static,
        F: FnOnce(&Guarded, u64) -> Result<T, ToolError> + Send + 'static,
    {
        let config = Arc::clone(&self.config);
        let timeout = Duration::from_millis(config.timeout_ms);
        let stop = Stop::new(timeout, Some(context.cancel.clone()));
        let (done, finished) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(watch(Arc::clone(&stop), timeout, finished));
        let task = tokio::task::spawn_blocking(move || {
            // Dropped when the call ends, however it ends: ends the watcher.
            let _done = done;
            let guarded = Guarded::open(&config.path, stop)
                .map_err(|error| ToolError::failed(format!("the database cannot be opened: {error}")))?;
            work(&guarded, config.timeout_ms)
        });
        tokio::select! {
            joined = task => joined
                .map_err(|error| ToolError::failed(format!("the database task failed: {error}")))?,
            () = context.cancel.cancelled() => Err(ToolError::Cancelled),
        }
    }

    /// The `sql` provider.
    pub fn tool_set(&self) -> ToolSet {
        let mut listed: Vec<&str> = self
            .tables
            .iter()
            .take(DESCRIPTION_TABLES)
            .map(String::as_str)
            .collect();
        if self.tables.len() > DESCRIPTION_TABLES {
            listed.push("...");
        }
        let tables = if listed.is_empty() {
            "The database has no tables.".to_owned()
        } else {
            format!("Tables: {}.", listed.join(", "))
        };
        let query_tools = self.clone();
        let describe_tools = self.clone();
        ToolSet::new(PROVIDER_NAME, "Read-only SQL queries over a SQLite database.")
            .tool(TypedTool::new(
                "query_database",
                format!(
                    "Runs one read-only SQL query (SQLite syntax) on the database and returns \
                     {{columns, rows, count, truncated}}; each row is an array of values in column order. \
                     {tables} Call describe_database first to learn the columns. Only a single SELECT \
                     (or WITH ... SELECT) statement may run; anything that writes is refused. At most \
                     `limit` rows come back (default 100, at most {max}); truncated = true means more rows \
                     matched, so filter, aggregate or sort with LIMIT. Queries are stopped after {ms} ms. \
                     Text values longer than {text} bytes come back cut (use substr() for the rest); values \
                     over {value} bytes cannot be read or built. Example: {{\"query\": \"SELECT category, \
                     count(*) AS n FROM products GROUP BY category ORDER BY n DESC\", \"limit\": 10}}.",
                    max = self.config.max_rows,
                    ms = self.config.timeout_ms,
                    text = MAX_TEXT_BYTES,
                    value = MAX_VALUE_BYTES,
                ),
                move |args: QueryArgs, context: ToolContext| {
                    let tools = query_tools.clone();
                    async move { tools.query(&args.query, args.limit, &context).await.map(Json) }
                },
            ))
            .tool(TypedTool::new(
                "describe_database",
                "Describes the database: every table and view with its columns (name, type, nullable, \
                 default), primary key, foreign keys and row count. Call it before writing a query. \
                 Takes no arguments: {}.",
                move |_: DescribeArgs, context: ToolContext| {
                    let tools = describe_tools.clone();
                    async move { tools.describe(&context).await.map(Json) }
                },
            ))
    }
}
