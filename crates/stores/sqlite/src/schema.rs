//! Opening the database file: permissions, pragmas and schema migrations.

use std::fs::{self, OpenOptions};
use std::path::Path;
use std::time::Duration;

use agent_core::StoreError;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::db;

/// The schema version this crate writes (`PRAGMA user_version`).
///
/// 1: conversations and their messages. 2: summaries (compaction) and run
/// checkpoints. 3: media, once per content, and which conversations use them.
pub const SCHEMA_VERSION: u32 = 3;

/// Migration `i` takes the schema from version `i` to `i + 1`. Never edit
/// one that has been released: files written with it exist.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [
    // 1: conversations and their messages.
    r"
CREATE TABLE conversations (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    provider TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    message_count INTEGER NOT NULL DEFAULT 0,
    user_turns INTEGER NOT NULL DEFAULT 0,
    turn_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX conversations_by_update ON conversations (updated_at DESC, name);
CREATE TABLE messages (
    conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    turn INTEGER NOT NULL,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (conversation_id, seq)
) WITHOUT ROWID;
",
    // 2: every summary a compaction stored (the newest is the current one;
    // `summarised` = how many messages, from seq 0, it stands for), and at
    // most one run checkpoint per conversation (opaque JSON).
    r"
CREATE TABLE summaries (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    summarised INTEGER NOT NULL,
    content TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX summaries_by_conversation ON summaries (conversation_id, id);
CREATE TABLE checkpoints (
    conversation_id INTEGER PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
    saved_at TEXT NOT NULL,
    body TEXT NOT NULL
);
",
    // 3: each distinct attachment once, by the SHA-256 of its bytes (the
    // messages hold references), and the conversations that use each, so
    // that deleting the last one deletes it.
    r"
CREATE TABLE media (
    sha256 TEXT PRIMARY KEY,
    mime_type TEXT NOT NULL,
    size INTEGER NOT NULL,
    data BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE conversation_media (
    conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    sha256 TEXT NOT NULL REFERENCES media (sha256),
    PRIMARY KEY (conversation_id, sha256)
) WITHOUT ROWID;
CREATE INDEX conversation_media_by_hash ON conversation_media (sha256);
",
];

/// Opens (creating when missing) the database at `path`, ready for use by
/// several processes at once.
pub fn open(path: &Path, busy_timeout: Duration) -> Result<Connection, StoreError> {
    prepare_file(path)?;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags)
        .map_err(|error| StoreError::backend(format!("opening {}: {error}", path.display())))?;
    // Wait (rather than fail with SQLITE_BUSY) while another connection writes.
    conn.busy_timeout(busy_timeout).map_err(db)?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .map_err(db)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::backend(format!(
            "{} cannot use write-ahead logging (journal mode stays {mode}); \
             keep the store on a local file system",
            path.display()
        )));
    }
    // FULL: a turn reported as appended survives a power cut too.
    conn.pragma_update(None, "synchronous", "FULL").map_err(db)?;
    conn.pragma_update(None, "foreign_keys", true).map_err(db)?;
    migrate(&mut conn)?;
    Ok(conn)
}

/// Brings the schema up to [`SCHEMA_VERSION`], in one transaction so that two
/// processes opening a new file at once migrate it once.
fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(db)?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(db)?;
    let version = u32::try_from(version).unwrap_or(u32::MAX);
    if version > SCHEMA_VERSION {
        return Err(StoreError::corrupt(format!(
            "the database has schema version {version}, written by a newer agentry; \
             this one reads up to version {SCHEMA_VERSION}"
        )));
    }
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    for migration in &MIGRATIONS[version as usize..] {
        tx.execute_batch(migration).map_err(db)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION).map_err(db)?;
    tx.commit().map_err(db)
}

/// Creates the file's directory (owner-only) and the file itself
/// (readable and writable by its owner only) when they do not exist.
/// SQLite gives its `-wal` and `-shm` files the database file's mode.
fn prepare_file(path: &Path) -> Result<(), StoreError> {
    let io = |what: &str, error: std::io::Error| StoreError::backend(format!("{what} {}: {error}", path.display()));
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(dir)
            .map_err(|error| io("creating the directory of", error))?;
    }
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map_err(|error| io("creating", error))?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The tables and indexes of `conn`, as SQL.
    fn schema_of(conn: &Connection) -> Vec<String> {
        let mut statement = conn
            .prepare("SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY name")
            .unwrap();
        let rows = statement.query_map([], |row| row.get(0)).unwrap();
        rows.collect::<rusqlite::Result<_>>().unwrap()
    }

    #[test]
    fn a_file_of_every_older_version_migrates_to_the_schema_of_a_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = open(&dir.path().join("fresh.db"), Duration::from_secs(1)).unwrap();
        let expected = schema_of(&fresh);
        assert!(expected.iter().any(|sql| sql.contains("CREATE TABLE checkpoints")));
        for version in 1..SCHEMA_VERSION {
            let path = dir.path().join(format!("v{version}.db"));
            {
                let old = Connection::open(&path).unwrap();
                for migration in &MIGRATIONS[..version as usize] {
                    old.execute_batch(migration).unwrap();
                }
                old.pragma_update(None, "user_version", version).unwrap();
            }
            let migrated = open(&path, Duration::from_secs(1)).unwrap();
            assert_eq!(schema_of(&migrated), expected, "from version {version}");
            let now: u32 = migrated.query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap();
            assert_eq!(now, SCHEMA_VERSION);
        }
    }
}
