//! `sql_guard`: the SQL tool's read-only guard.

use std::path::PathBuf;
use std::sync::OnceLock;

use agent_core::ToolContext;
use agent_tools_sql::{SqlConfig, SqlTools};

use crate::runtime::block_on;

/// The fixture database: its tools and the file's bytes when made.
struct Fixture {
    path: PathBuf,
    tools: SqlTools,
    bytes: Vec<u8>,
}

/// Runs `data` (as UTF-8, lossily) as a statement of the `sql_query` tool
/// on a small database: a result or a typed error, and afterwards the
/// database file is byte for byte what it was, with no journal beside it.
pub fn sql_guard(data: &[u8]) {
    let fixture = fixture();
    let sql = String::from_utf8_lossy(data);
    let _ = block_on(fixture.tools.query(&sql, 50, &ToolContext::new()));
    let now = std::fs::read(&fixture.path).unwrap_or_default();
    assert!(now == fixture.bytes, "the statement changed the database file: {sql:?}");
    for suffix in ["-journal", "-wal"] {
        let mut side = fixture.path.clone().into_os_string();
        side.push(suffix);
        assert!(
            !PathBuf::from(&side).exists(),
            "the statement left {} beside the database: {sql:?}",
            PathBuf::from(side).display()
        );
    }
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("agent-fuzz-sql-{}", std::process::id()));
        let path = dir.join("shop.sqlite");
        let made = std::fs::create_dir_all(&dir)
            .map_err(|error| error.to_string())
            .and_then(|()| make_database(&path).map_err(|error| error.to_string()));
        if let Err(error) = made {
            panic!("the fuzz database {} could not be made: {error}", path.display());
        }
        let tools = match SqlTools::open(SqlConfig::new(&path).with_timeout_ms(200).with_max_rows(100)) {
            Ok(tools) => tools,
            Err(error) => panic!("the fuzz database could not be opened: {error}"),
        };
        let bytes = std::fs::read(&path).unwrap_or_default();
        Fixture { path, tools, bytes }
    })
}

fn make_database(path: &std::path::Path) -> rusqlite::Result<()> {
    let _ = std::fs::remove_file(path);
    let connection = rusqlite::Connection::open(path)?;
    connection.execute_batch(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT UNIQUE);
         CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id),
                              total REAL, placed TEXT, note BLOB);
         CREATE INDEX orders_by_customer ON orders(customer_id);
         CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
         CREATE TRIGGER no_negative BEFORE INSERT ON orders WHEN NEW.total < 0
             BEGIN SELECT RAISE(ABORT, 'negative'); END;
         INSERT INTO customers (name, email) VALUES ('Ada', 'ada@example.com'), ('Linus', NULL);
         INSERT INTO orders (customer_id, total, placed, note)
             VALUES (1, 120.5, '2026-11-30', x'00ff'), (2, 9.99, '2026-12-01', NULL);",
    )?;
    connection.close().map_err(|(_, error)| error)
}
