//! The fixture shared by the integration tests: a small shop database made
//! in a temporary directory, and helpers to call the tools.

#![allow(clippy::unwrap_used, dead_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::{ToolContext, ToolRegistry};
use agent_tools::ToolBox;
use agent_tools_sql::{SqlConfig, SqlTools};
use serde_json::{Value, json};
use tempfile::TempDir;

/// The fixture database and what it looked like when it was made.
pub struct Fixture {
    pub directory: TempDir,
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    pub files: BTreeSet<String>,
}

impl Fixture {
    pub fn new() -> Self {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("shop.sqlite");
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection
            .execute_batch(
                "CREATE TABLE customers (
                     id INTEGER PRIMARY KEY,
                     name TEXT NOT NULL,
                     email TEXT
                 );
                 CREATE TABLE orders (
                     id INTEGER PRIMARY KEY,
                     customer_id INTEGER NOT NULL REFERENCES customers(id),
                     total REAL NOT NULL DEFAULT 0,
                     note TEXT,
                     receipt BLOB
                 );
                 CREATE TABLE order_items (
                     order_id INTEGER REFERENCES orders(id),
                     line INTEGER,
                     sku TEXT,
                     PRIMARY KEY (order_id, line)
                 );
                 CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
                 INSERT INTO customers (name, email) VALUES ('Ada', 'ada@example.com'), ('Grace', NULL);
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 250)
                 INSERT INTO orders (customer_id, total, note) SELECT 1 + i % 2, i * 1.5, 'order ' || i FROM n;
                 UPDATE orders SET receipt = x'00ff10', note = NULL WHERE id = 1;
                 INSERT INTO order_items VALUES (1, 1, 'TEA'), (1, 2, 'MUG');",
            )
            .unwrap();
        drop(connection);
        let bytes = std::fs::read(&path).unwrap();
        let files = list(directory.path());
        Self {
            directory,
            path,
            bytes,
            files,
        }
    }

    pub fn config(&self) -> SqlConfig {
        SqlConfig::new(&self.path)
    }

    pub fn registry(&self, config: SqlConfig) -> ToolBox {
        assert_eq!(config.path, self.path);
        let registry = ToolBox::new();
        registry
            .register(Arc::new(SqlTools::open(config).unwrap().tool_set()), true)
            .unwrap();
        registry
    }

    pub fn assert_unchanged(&self) {
        assert!(
            std::fs::read(&self.path).unwrap() == self.bytes,
            "the database file changed"
        );
        assert_eq!(
            list(self.directory.path()),
            self.files,
            "files appeared beside the database"
        );
    }
}

pub fn list(directory: &Path) -> BTreeSet<String> {
    std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

pub async fn call(registry: &ToolBox, tool: &str, arguments: Value) -> Result<Value, String> {
    let run = registry.execute(tool, &arguments, &ToolContext::new()).await;
    match run.outcome {
        Ok(output) => Ok(serde_json::from_str(&output.to_content()).unwrap()),
        Err(error) => Err(error.to_string()),
    }
}

pub async fn query(registry: &ToolBox, sql: &str) -> Result<Value, String> {
    call(registry, "query_database", json!({"query": sql})).await
}
