//! The read-only connection. Writes are impossible by construction, not
//! by inspecting the SQL text:
//!
//! 1. the file is opened with `SQLITE_OPEN_READ_ONLY` and without
//!    `SQLITE_OPEN_CREATE` (a missing file is an error, never created), as
//!    a `file:` URI with `mode=ro`;
//! 2. `PRAGMA query_only = ON`;
//! 3. an authorizer, consulted by SQLite's own parser for every action of
//!    every statement, allows only reads, `SELECT`, recursive CTEs, scalar
//!    and aggregate functions and a few schema-reading pragmas;
//! 4. a statement SQLite does not report as read-only
//!    (`sqlite3_stmt_readonly`, which catches `VACUUM INTO`) is refused;
//! 5. limits: no attached databases, bounded statement and value sizes;
//! 6. a progress handler stops any statement after the time limit or when
//!    the call is cancelled.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::{Connection, OpenFlags};

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

/// What the authorizer does with the actions it is asked about.
#[derive(Debug, Default)]
struct AuthState {
    /// When set, every action is allowed: used only to count the statements
    /// of a query, which prepares them without ever running them.
    counting: bool,
    /// The first action refused, described for the model.
    refused: Option<String>,
}

/// Why a statement stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interruption {
    TimedOut,
    Cancelled,
}

/// A read-only connection with its authorizer state.
pub(crate) struct Guarded {
    pub(crate) connection: Connection,
    auth: Arc<Mutex<AuthState>>,
    stopped: Arc<Mutex<Option<Interruption>>>,
}

impl Guarded {
    /// Opens `path` read-only. The time limit runs from now; `cancelled`
    /// is polled with it.
    pub(crate) fn open(
        path: &Path,
        timeout: Duration,
        cancelled: impl Fn() -> bool + Send + 'static,
    ) -> Result<Self, rusqlite::Error> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut connection = match read_only_uri(path) {
            Some(uri) => Connection::open_with_flags(uri, flags)?,
            None => Connection::open_with_flags(path, flags & !OpenFlags::SQLITE_OPEN_URI)?,
        };
        connection.pragma_update(None, "query_only", true)?;
        connection.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)?;
        connection.set_limit(Limit::SQLITE_LIMIT_SQL_LENGTH, 100_000)?;
        connection.set_limit(Limit::SQLITE_LIMIT_LENGTH, 16 * 1024 * 1024)?;

        let auth = Arc::new(Mutex::new(AuthState::default()));
        let state = Arc::clone(&auth);
        connection.authorizer(Some(move |context: AuthContext<'_>| {
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.counting {
                return Authorization::Allow;
            }
            match decide(&context.action) {
                Ok(()) => Authorization::Allow,
                Err(refusal) => {
                    state.refused.get_or_insert(refusal);
                    Authorization::Deny
                }
            }
        }))?;

        let stopped = Arc::new(Mutex::new(None));
        let flag = Arc::clone(&stopped);
        let deadline = Instant::now() + timeout;
        connection.progress_handler(
            PROGRESS_STEPS,
            Some(move || {
                let reason = if cancelled() {
                    Interruption::Cancelled
                } else if Instant::now() >= deadline {
                    Interruption::TimedOut
                } else {
                    return false;
                };
                *flag.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
                true
            }),
        )?;
        Ok(Self {
            connection,
            auth,
            stopped,
        })
    }

    /// Counts the statements in `sql` by preparing (never running) them
    /// one after another, with SQLite's own parser.
    pub(crate) fn count_statements(&self, sql: &str) -> Result<usize, rusqlite::Error> {
        use rusqlite::fallible_iterator::FallibleIterator;

        self.set_counting(true);
        let mut batch = rusqlite::Batch::new(&self.connection, sql);
        let mut count = 0;
        let outcome = loop {
            match batch.next() {
                Ok(Some(_statement)) => count += 1,
                Ok(None) => break Ok(count),
                Err(error) => break Err(error),
            }
            if count > 1 {
                break Ok(count);
            }
        };
        self.set_counting(false);
        outcome
    }

    fn set_counting(&self, counting: bool) {
        self.auth.lock().unwrap_or_else(PoisonError::into_inner).counting = counting;
    }

    /// The first action the authorizer refused since the last call, if any.
    pub(crate) fn take_refusal(&self) -> Option<String> {
        self.auth.lock().unwrap_or_else(PoisonError::into_inner).refused.take()
    }

    /// Why the progress handler stopped a statement, if it did.
    pub(crate) fn interruption(&self) -> Option<Interruption> {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner)
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
mod tests {
    use super::*;

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
