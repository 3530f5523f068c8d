//! Statements the guard refuses must leave nothing behind: not in the
//! database file, not beside it, and not in SQLite's process-wide state
//! (heap limits, the temporary directory), which some pragmas change while
//! a statement is merely being prepared.
//!
//! A process-wide setting, once changed, breaks every later test in the
//! same binary, so these tests live in their own.

#![allow(clippy::unwrap_used)]

mod common;

use agent_core::ToolContext;
use agent_tools_sql::SqlTools;
use common::Fixture;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;

/// SQLite's process-wide settings that a pragma can change, as read on a
/// fresh, unguarded in-memory connection.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ProcessState {
    hard_heap_limit: i64,
    soft_heap_limit: i64,
    temp_store_directory: Option<String>,
}

fn process_state() -> ProcessState {
    let connection = rusqlite::Connection::open_in_memory().unwrap();
    let number = |pragma: &str| -> i64 {
        connection
            .query_row(&format!("PRAGMA {pragma}"), [], |row| row.get(0))
            .unwrap()
    };
    let temp_store_directory = connection
        .query_row("PRAGMA temp_store_directory", [], |row| row.get(0))
        .ok();
    // A fresh connection that can still run a query: nothing made every
    // allocation fail.
    let sum: i64 = connection
        .query_row("SELECT sum(value) FROM json_each('[1, 2, 3]')", [], |row| row.get(0))
        .unwrap();
    assert_eq!(sum, 6);
    ProcessState {
        hard_heap_limit: number("hard_heap_limit"),
        soft_heap_limit: number("soft_heap_limit"),
        temp_store_directory,
    }
}

/// A normal query through the tool, on a fresh guarded connection.
fn assert_normal_query_runs(runtime: &tokio::runtime::Runtime, tools: &SqlTools) {
    let result = runtime
        .block_on(tools.query("SELECT count(*) FROM orders", 10, &ToolContext::new()))
        .map_err(|error| error.to_string());
    assert_eq!(
        result.map(|result| result.rows),
        Ok(vec![vec![json!(250)]]),
        "a normal SELECT failed after a refused statement"
    );
}

#[test]
fn refused_process_wide_pragmas_change_nothing() {
    let fixture = Fixture::new();
    let other = tempfile::tempdir().unwrap();
    let before = process_state();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tools = SqlTools::open(fixture.config()).unwrap();
    let temp_dir = format!("PRAGMA temp_store_directory = '{}'", other.path().display());
    let cases = [
        ("PRAGMA hard_heap_limit=1", "tries to run PRAGMA hard_heap_limit"),
        ("PRAGMA hard_heap_limit(1)", "tries to run PRAGMA hard_heap_limit"),
        (
            "pragma main.HARD_HEAP_LIMIT = 1;",
            "tries to run PRAGMA HARD_HEAP_LIMIT",
        ),
        ("PRAGMA soft_heap_limit=1", "tries to run PRAGMA soft_heap_limit"),
        (temp_dir.as_str(), "tries to run PRAGMA temp_store_directory"),
        ("SELECT 1; PRAGMA hard_heap_limit=1", "more than one SQL statement"),
        ("SELECT 1; PRAGMA soft_heap_limit=1", "more than one SQL statement"),
        (
            "SELECT 1; PRAGMA hard_heap_limit=1; SELECT 2",
            "more than one SQL statement",
        ),
    ];
    for (sql, reason) in cases {
        let error = runtime
            .block_on(tools.query(sql, 10, &ToolContext::new()))
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("refused: "), "{sql}: {error}");
        assert!(error.contains(reason), "{sql}: {error:?} lacks {reason:?}");
        assert_eq!(process_state(), before, "{sql} changed SQLite's process-wide state");
        assert_normal_query_runs(&runtime, &tools);
    }
    fixture.assert_unchanged();
    assert_eq!(std::fs::read_dir(other.path()).unwrap().count(), 0);
}

/// Whole statements that write, attach, or change a setting.
const STATEMENTS: &[&str] = &[
    "PRAGMA hard_heap_limit=1",
    "PRAGMA soft_heap_limit=1",
    "PRAGMA temp_store_directory='{other}'",
    "PRAGMA data_store_directory='{other}'",
    "PRAGMA journal_mode=WAL",
    "PRAGMA journal_mode=DELETE",
    "PRAGMA writable_schema=ON",
    "PRAGMA query_only=OFF",
    "PRAGMA locking_mode=EXCLUSIVE",
    "PRAGMA user_version=7",
    "PRAGMA application_id=7",
    "PRAGMA schema_version=99",
    "PRAGMA cache_size=1",
    "PRAGMA mmap_size=65536",
    "PRAGMA threads=4",
    "PRAGMA temp_store=MEMORY",
    "PRAGMA case_sensitive_like=ON",
    "PRAGMA foreign_keys=ON",
    "PRAGMA shrink_memory",
    "PRAGMA optimize",
    "PRAGMA wal_checkpoint",
    "PRAGMA incremental_vacuum",
    "PRAGMA integrity_check",
    "PRAGMA table_info(orders)",
    "INSERT INTO customers (name) VALUES ('Eve')",
    "INSERT INTO orders SELECT * FROM orders",
    "UPDATE orders SET total = 0",
    "DELETE FROM order_items",
    "REPLACE INTO customers VALUES (1, 'x', 'y')",
    "CREATE TABLE t (x)",
    "CREATE TEMP TABLE t (x)",
    "CREATE INDEX i ON orders (total)",
    "CREATE VIEW v AS SELECT 1",
    "CREATE TRIGGER g AFTER INSERT ON orders BEGIN DELETE FROM customers; END",
    "DROP TABLE orders",
    "DROP VIEW big_orders",
    "ALTER TABLE orders RENAME TO invoices",
    "ALTER TABLE orders ADD COLUMN x",
    "ATTACH '{other}/attached.sqlite' AS other",
    "ATTACH ':memory:' AS scratch",
    "DETACH other",
    "VACUUM",
    "VACUUM INTO '{other}/copy.sqlite'",
    "REINDEX",
    "ANALYZE",
    "BEGIN IMMEDIATE",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT s",
    "RELEASE s",
    "SELECT load_extension('x')",
    "SELECT * FROM orders",
    "SELECT name FROM sqlite_master",
    "WITH x AS (SELECT 1) DELETE FROM orders",
    "WITH x AS (SELECT 1) INSERT INTO customers (name) SELECT * FROM x",
];

/// Keywords, names and glue to splice between and into statements.
const WORDS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "INSERT",
    "INTO",
    "VALUES",
    "UPDATE",
    "SET",
    "DELETE",
    "CREATE",
    "TEMP",
    "TABLE",
    "INDEX",
    "VIEW",
    "TRIGGER",
    "DROP",
    "ALTER",
    "RENAME",
    "ATTACH",
    "DETACH",
    "DATABASE",
    "AS",
    "VACUUM",
    "PRAGMA",
    "BEGIN",
    "COMMIT",
    "END",
    "WITH",
    "RECURSIVE",
    "ON",
    "OFF",
    "NULL",
    "main",
    "temp",
    "customers",
    "orders",
    "order_items",
    "big_orders",
    "sqlite_master",
    "sqlite_schema",
    "hard_heap_limit",
    "soft_heap_limit",
    "temp_store_directory",
    "journal_mode",
    "writable_schema",
    "query_only",
    "id",
    "total",
    "name",
    "*",
    "1",
    "0",
    "'x'",
    "=",
    "(",
    ")",
    ",",
    ";",
    ".",
    "--",
    "/*",
    "*/",
];

fn statement() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => prop::sample::select(STATEMENTS).prop_map(str::to_owned),
        2 => prop::collection::vec(prop::sample::select(WORDS), 1..8).prop_map(|words| words.join(" ")),
    ];
    let glue = prop::sample::select(&["; ", ";", " ", "\n", ", ", " -- \n", "/* */", ";;", " ("][..]);
    prop::collection::vec((piece, glue), 1..4).prop_map(|pieces| {
        pieces
            .into_iter()
            .flat_map(|(piece, glue)| [piece, glue.to_owned()])
            .collect::<String>()
    })
}

#[test]
fn random_statements_change_neither_the_database_nor_the_process() {
    let fixture = Fixture::new();
    let other = tempfile::tempdir().unwrap();
    let other_path = other.path().display().to_string();
    let before = process_state();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tools = SqlTools::open(fixture.config().with_timeout_ms(250)).unwrap();
    let config = Config {
        cases: 192,
        failure_persistence: None,
        max_shrink_iters: 256,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let outcome = runner.run(&statement(), |sql| {
        let sql = sql.replace("{other}", &other_path);
        // Any outcome is fine, success or error; what matters is below.
        let _ = runtime.block_on(tools.query(&sql, 10, &ToolContext::new()));
        prop_assert!(
            std::fs::read(&fixture.path).unwrap() == fixture.bytes,
            "{sql} changed the database file"
        );
        prop_assert_eq!(common::list(fixture.directory.path()), fixture.files.clone(), "{}", sql);
        prop_assert_eq!(std::fs::read_dir(other.path()).unwrap().count(), 0, "{}", sql);
        prop_assert_eq!(process_state(), before.clone(), "{}", sql);
        let count = runtime
            .block_on(tools.query("SELECT count(*) FROM orders", 10, &ToolContext::new()))
            .map(|result| result.rows)
            .map_err(|error| error.to_string());
        prop_assert_eq!(count, Ok(vec![vec![json!(250)]]), "after {}", sql);
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
    fixture.assert_unchanged();
}
