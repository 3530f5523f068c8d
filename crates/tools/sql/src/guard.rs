//! The read-only connection. Writes are impossible by construction, not
//! by inspecting the SQL text:
//!
//! 1. the file is opened with `SQLITE_OPEN_READ_ONLY` and without
//!    `SQLITE_OPEN_CREATE` (a missing file is an error, never created), as
//!    a `file:` URI with `mode=ro`;
//! 2. `PRAGMA query_only = ON`;
//! 3. an authorizer, consulted by SQLite's own parser for every action of
//!    every statement it prepares, allows only reads, `SELECT`, recursive
//!    CTEs, scalar and aggregate functions and a few schema-reading
//!    pragmas. It is never switched off, not even to count the statements
//!    of a query: SQLite applies some pragmas (`hard_heap_limit`,
//!    `soft_heap_limit`, `temp_store_directory`) while it *prepares* them,
//!    to the whole process, so preparing one unguarded would change every
//!    connection of the process for good;
//! 4. a statement SQLite does not report as read-only
//!    (`sqlite3_stmt_readonly`, which catches `VACUUM INTO`) is refused;
//! 5. limits, all on this connection only: no attached databases, at most
//!    [`MAX_SQL_BYTES`] of SQL, values (read or built) of at most
//!    [`MAX_VALUE_BYTES`], LIKE and GLOB patterns of at most
//!    [`MAX_PATTERN_BYTES`], at most [`MAX_FUNCTION_ARGS`] arguments per
//!    function call, and temporary tables and sorts kept in temporary
//!    files rather than memory (`temp_store = FILE`), so the page cache
//!    bounds the memory they use. SQLite has no per-connection heap limit;
//!    its heap limits (`sqlite3_hard_heap_limit64`) apply to the whole
//!    process, so none is set;
//! 6. the string functions whose built-in cost grows with the product of
//!    their arguments' lengths are replaced (see `functions.rs`), so no
//!    single function call runs long;
//! 7. a progress handler, and an interrupt from the async side (see
//!    `watch.rs`), stop any statement after the time limit or when the
//!    call is cancelled.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::{Connection, OpenFlags};

use crate::functions;
use crate::watch::{Interruption, Stop};

/// The longest SQL text accepted, in bytes.
pub const MAX_SQL_BYTES: usize = 100_000;
/// The longest string or BLOB a query may read or build, in bytes (1 MiB).
/// A longer value stored in the database cannot be read at all, not even
/// by `length()`; the error says so.
pub const MAX_VALUE_BYTES: usize = 1 << 20;
/// The longest LIKE or GLOB pattern, in bytes. Matching costs up to the
/// value's length times the pattern's, all in one function call.
pub const MAX_PATTERN_BYTES: usize = 128;
/// The most arguments of one function call: `json_extract(X, path, ...)`
/// and its kin walk `X` once per path, all in one call.
pub const MAX_FUNCTION_ARGS: usize = 127;

/// Pragmas that only read the schema; every other pragma is refused.
const READ_PRAGMAS: &[&str] = &[
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
];

/// Functions refused even in a `SELECT`.
const DENIED_FUNCTIONS: &[&str] = &["load_extension", "fts3_tokenizer", "readfile", "writefile", "edit"];

/// How many virtual-machine steps between two time checks.
const PROGRESS_STEPS: i32 = 1_000;

/// A read-only connection with its authorizer state.
pub(crate) struct Guarded {
    pub(crate) connection: Connection,
    /// The first action the authorizer refused, described for the model.
    refused: Arc<Mutex<Option<String>>>,
    stop: Arc<Stop>,
}

impl Guarded {
    /// Opens `path` read-only; `stop` says when a statement must stop, and
    /// gets the connection's interrupt handle.
    pub(crate) fn open(path: &Path, stop: Arc<Stop>) -> Result<Self, rusqlite::Error> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut connection = match read_only_uri(path) {
            Some(uri) => Connection::open_with_flags(uri, flags)?,
            None => Connection::open_with_flags(path, flags & !OpenFlags::SQLITE_OPEN_URI)?,
        };
        stop.attach(connection.get_interrupt_handle());
        // Settings first: once the authorizer is in place, pragmas are refused.
        connection.pragma_update(None, "query_only", true)?;
        connection.pragma_update(None, "temp_store", "FILE")?;
        for (limit, value) in [
            (Limit::SQLITE_LIMIT_ATTACHED, 0),
            (Limit::SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_BYTES),
            (Limit::SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES),
            (Limit::SQLITE_LIMIT_LIKE_PATTERN_LENGTH, MAX_PATTERN_BYTES),
            (Limit::SQLITE_LIMIT_FUNCTION_ARG, MAX_FUNCTION_ARGS),
        ] {
            connection.set_limit(limit, i32::try_from(value).unwrap_or(i32::MAX))?;
        }
        functions::install(&connection, MAX_VALUE_BYTES)?;

        let refused = Arc::new(Mutex::new(None));
        let first_refusal = Arc::clone(&refused);
        connection.authorizer(Some(move |context: AuthContext<'_>| match decide(&context.action) {
            Ok(()) => Authorization::Allow,
            Err(refusal) => {
                first_refusal
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_or_insert(refusal);
                Authorization::Deny
            }
        }))?;

        let progress = Arc::clone(&stop);
        connection.progress_handler(PROGRESS_STEPS, Some(move || progress.check().is_some()))?;
        Ok(Self {
            connection,
            refused,
            stop,
        })
    }

    /// Counts the statements in `sql`, with SQLite's own parser: 0, 1, or
    /// 2 for "more than one". Statements are prepared (never run) with the
    /// authorizer in force, and only until the second one: if there is
    /// anything after the first statement, whether it prepares, fails to
    /// parse or is refused, the query has more than one.
    pub(crate) fn count_statements(&self, sql: &str) -> Result<usize, rusqlite::Error> {
        use rusqlite::fallible_iterator::FallibleIterator;

        let mut batch = rusqlite::Batch::new(&self.connection, sql);
        if batch.next()?.is_none() {
            return Ok(0);
        }
        Ok(match batch.next() {
            Ok(None) => 1,
            Ok(Some(_)) | Err(_) => 2,
        })
    }

    /// The first action the authorizer refused since the last call, if any.
    pub(crate) fn take_refusal(&self) -> Option<String> {
        self.refused.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// Why a statement was stopped, if it was.
    pub(crate) fn interruption(&self) -> Option<Interruption> {
        self.stop.reason()
    }
}

/// `path` as a `file:` URI with `mode=ro`, so the URI repeats what the
/// flags say; `None` for a path that is not UTF-8 (opened as a plain path,
/// still with the read-only flag).
fn read_only_uri(path: &Path) -> Option<String> {
    let text = path.to_str()?;
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '%' => escaped.push_str("%25"),
            '?' => escaped.push_str("%3F"),
            '#' => escaped.push_str("%23"),
            '\\' if cfg!(windows) => escaped.push('/'),
            other => escaped.push(other),
        }
    }
    // An absolute path keeps its leading slash after "file:"; "file://"
    // would make the first path segment an authority.
    if escaped.starts_with("//") {
        escaped.insert_str(0, "//localhost");
    }
    Some(format!("file:{escaped}?mode=ro"))
}

/// The authorizer's policy: `Ok` for what a read-only query needs, else
/// what the statement tried to do, in words.
pub(crate) fn decide(action: &AuthAction<'_>) -> Result<(), String> {
    match *action {
        AuthAction::Select | AuthAction::Recursive | AuthAction::Read { .. } => Ok(()),
        AuthAction::Function { function_name } => {
            if DENIED_FUNCTIONS
                .iter()
                .any(|name| name.eq_ignore_ascii_case(function_name))
            {
                Err(format!("call the function {function_name}()"))
            } else {
                Ok(())
            }
        }
        AuthAction::Pragma { pragma_name, .. } => {
            if READ_PRAGMAS.iter().any(|name| name.eq_ignore_ascii_case(pragma_name)) {
                Ok(())
            } else {
                Err(format!("run PRAGMA {pragma_name}"))
            }
        }
        AuthAction::Insert { table_name }
        | AuthAction::Update { table_name, .. }
        | AuthAction::Delete { table_name }
            if is_schema_table(table_name) =>
        {
            Err("change the database schema (CREATE, ALTER or DROP)".to_owned())
        }
        AuthAction::Insert { table_name } => Err(format!("INSERT into \"{table_name}\"")),
        AuthAction::Update { table_name, .. } => Err(format!("UPDATE \"{table_name}\"")),
        AuthAction::Delete { table_name } => Err(format!("DELETE from \"{table_name}\"")),
        AuthAction::CreateTable { table_name } | AuthAction::CreateTempTable { table_name } => {
            Err(format!("CREATE TABLE \"{table_name}\""))
        }
        AuthAction::CreateIndex { index_name, .. } | AuthAction::CreateTempIndex { index_name, .. } => {
            Err(format!("CREATE INDEX \"{index_name}\""))
        }
        AuthAction::CreateView { view_name } | AuthAction::CreateTempView { view_name } => {
            Err(format!("CREATE VIEW \"{view_name}\""))
        }
        AuthAction::CreateTrigger { trigger_name, .. } | AuthAction::CreateTempTrigger { trigger_name, .. } => {
            Err(format!("CREATE TRIGGER \"{trigger_name}\""))
        }
        AuthAction::CreateVtable { table_name, .. } => Err(format!("CREATE VIRTUAL TABLE \"{table_name}\"")),
        AuthAction::DropTable { table_name } | AuthAction::DropTempTable { table_name } => {
            Err(format!("DROP TABLE \"{table_name}\""))
        }
        AuthAction::DropIndex { index_name, .. } | AuthAction::DropTempIndex { index_name, .. } => {
            Err(format!("DROP INDEX \"{index_name}\""))
        }
        AuthAction::DropView { view_name } | AuthAction::DropTempView { view_name } => {
            Err(format!("DROP VIEW \"{view_name}\""))
        }
        AuthAction::DropTrigger { trigger_name, .. } | AuthAction::DropTempTrigger { trigger_name, .. } => {
            Err(format!("DROP TRIGGER \"{trigger_name}\""))
        }
        AuthAction::DropVtable { table_name, .. } => Err(format!("DROP VIRTUAL TABLE \"{table_name}\"")),
        AuthAction::AlterTable { table_name, .. } => Err(format!("ALTER TABLE \"{table_name}\"")),
        AuthAction::Attach { .. } => Err("ATTACH another database".to_owned()),
        AuthAction::Detach { .. } => Err("DETACH a database".to_owned()),
        AuthAction::Reindex { .. } => Err("REINDEX".to_owned()),
        AuthAction::Analyze { .. } => Err("ANALYZE".to_owned()),
        AuthAction::Transaction { .. } => Err("control a transaction (BEGIN, COMMIT, ROLLBACK)".to_owned()),
        AuthAction::Savepoint { .. } => Err("use a SAVEPOINT".to_owned()),
        _ => Err("perform an operation other than reading".to_owned()),
    }
}

/// Whether `table` is SQLite's schema table, which every CREATE, ALTER
/// and DROP writes to before anything else.
fn is_schema_table(table: &str) -> bool {
    [
        "sqlite_master",
        "sqlite_temp_master",
        "sqlite_schema",
        "sqlite_temp_schema",
    ]
    .iter()
    .any(|name| name.eq_ignore_ascii_case(table))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn limits_and_settings_are_in_force() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("t.sqlite");
        Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE t (x)")
            .unwrap();
        let mut guarded = Guarded::open(&path, Stop::new(Duration::from_secs(5), None)).unwrap();
        let connection = &guarded.connection;
        assert_eq!(connection.limit(Limit::SQLITE_LIMIT_ATTACHED).unwrap(), 0);
        assert_eq!(connection.limit(Limit::SQLITE_LIMIT_LENGTH).unwrap(), 1 << 20);
        assert_eq!(connection.limit(Limit::SQLITE_LIMIT_LIKE_PATTERN_LENGTH).unwrap(), 128);
        assert_eq!(connection.limit(Limit::SQLITE_LIMIT_FUNCTION_ARG).unwrap(), 127);
        // Reading a setting is a pragma too: refused, and noted.
        assert!(
            connection
                .pragma_query_value(None, "temp_store", |row| row.get::<_, i64>(0))
                .is_err()
        );
        assert_eq!(guarded.take_refusal().as_deref(), Some("run PRAGMA temp_store"));
        let connection = &mut guarded.connection;
        connection
            .authorizer(None::<fn(AuthContext<'_>) -> Authorization>)
            .unwrap();
        let read = |pragma: &str| {
            connection
                .pragma_query_value(None, pragma, |row| row.get::<_, i64>(0))
                .unwrap()
        };
        assert_eq!((read("temp_store"), read("query_only")), (1, 1));
    }

    #[test]
    fn paths_become_read_only_uris() {
        assert_eq!(
            read_only_uri(Path::new("/data/shop.sqlite")).as_deref(),
            Some("file:/data/shop.sqlite?mode=ro")
        );
        assert_eq!(
            read_only_uri(Path::new("odd %?#/name.db")).as_deref(),
            Some("file:odd %25%3F%23/name.db?mode=ro")
        );
    }

    #[test]
    fn reads_are_allowed_and_writes_refused() {
        assert_eq!(decide(&AuthAction::Select), Ok(()));
        assert_eq!(decide(&AuthAction::Recursive), Ok(()));
        assert_eq!(
            decide(&AuthAction::Read {
                table_name: "t",
                column_name: "c"
            }),
            Ok(())
        );
        assert_eq!(decide(&AuthAction::Function { function_name: "count" }), Ok(()));
        assert_eq!(
            decide(&AuthAction::Function {
                function_name: "LOAD_EXTENSION"
            }),
            Err("call the function LOAD_EXTENSION()".to_owned())
        );
        assert_eq!(
            decide(&AuthAction::Pragma {
                pragma_name: "table_info",
                pragma_value: Some("t")
            }),
            Ok(())
        );
        assert_eq!(
            decide(&AuthAction::Pragma {
                pragma_name: "writable_schema",
                pragma_value: Some("ON")
            }),
            Err("run PRAGMA writable_schema".to_owned())
        );
        assert_eq!(
            decide(&AuthAction::Insert { table_name: "t" }),
            Err("INSERT into \"t\"".to_owned())
        );
    }
}
