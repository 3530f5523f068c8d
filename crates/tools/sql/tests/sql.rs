//! The `sql` provider against a fixture database made in a temporary
//! directory. Every test ends by checking that the database file is
//! byte-identical and that no other file appeared beside it.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use agent_core::{ToolContext, ToolError, ToolRegistry};
use agent_tools_sql::{SqlConfig, SqlError, SqlTools};
use common::{Fixture, call, query};
use serde_json::json;

#[tokio::test]
async fn values_map_to_json_types() {
    let fixture = Fixture::new();
    let registry = fixture.registry(fixture.config());
    let result = query(
        &registry,
        "SELECT id, customer_id, total, note, receipt, 1e999 AS big FROM orders WHERE id <= 2 ORDER BY id",
    )
    .await
    .unwrap();
    assert_eq!(
        result,
        json!({
            "columns": ["id", "customer_id", "total", "note", "receipt", "big"],
            "rows": [
                [1, 2, 1.5, null, "AP8Q", "Infinity"],
                [2, 1, 3.0, "order 2", null, "Infinity"]
            ],
            "count": 2,
            "truncated": false,
            "notes": ["column \"receipt\" holds binary data (BLOB), shown base64-encoded"]
        })
    );
    let result = query(&registry, "SELECT count(*) AS n, sum(total) FROM orders;")
        .await
        .unwrap();
    assert_eq!(result["rows"], json!([[250, 47062.5]]));
    fixture.assert_unchanged();
}

#[tokio::test]
async fn recursive_ctes_and_schema_pragmas_are_allowed() {
    let fixture = Fixture::new();
    let registry = fixture.registry(fixture.config());
    let result = query(
        &registry,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) SELECT sum(i) FROM n",
    )
    .await
    .unwrap();
    assert_eq!(result["rows"], json!([[15]]));
    let result = query(&registry, "PRAGMA table_info(customers)").await.unwrap();
    assert_eq!(result["count"], 3);
    let result = query(&registry, "SELECT name FROM pragma_table_info('orders') ORDER BY cid")
        .await
        .unwrap();
    assert_eq!(
        result["rows"],
        json!([["id"], ["customer_id"], ["total"], ["note"], ["receipt"]])
    );
    let result = query(&registry, "SELECT * FROM big_orders ORDER BY id LIMIT 1")
        .await
        .unwrap();
    assert_eq!(result["rows"][0][0], 67);
    fixture.assert_unchanged();
}

#[tokio::test]
async fn row_limit_sets_truncated() {
    let fixture = Fixture::new();
    let registry = fixture.registry(fixture.config().with_max_rows(200));
    let limited = call(
        &registry,
        "query_database",
        json!({"query": "SELECT id FROM orders ORDER BY id", "limit": 10}),
    )
    .await
    .unwrap();
    assert_eq!(limited["count"], 10);
    assert_eq!(limited["truncated"], true);
    assert_eq!(limited["rows"].as_array().unwrap().len(), 10);
    assert_eq!(limited["rows"][9], json!([10]));
    assert!(
        limited["notes"][0]
            .as_str()
            .unwrap()
            .starts_with("only the first 10 rows are shown")
    );

    let default = query(&registry, "SELECT id FROM orders").await.unwrap();
    assert_eq!(
        (default["count"].clone(), default["truncated"].clone()),
        (json!(100), json!(true))
    );

    let exact = call(
        &registry,
        "query_database",
        json!({"query": "SELECT id FROM orders WHERE id <= 10", "limit": 10}),
    )
    .await
    .unwrap();
    assert_eq!(
        (exact["count"].clone(), exact["truncated"].clone()),
        (json!(10), json!(false))
    );
    assert!(exact.get("notes").is_none());

    let capped = call(
        &registry,
        "query_database",
        json!({"query": "SELECT id FROM orders", "limit": 100_000}),
    )
    .await
    .unwrap();
    assert_eq!(
        (capped["count"].clone(), capped["truncated"].clone()),
        (json!(200), json!(true))
    );
    assert_eq!(
        capped["notes"][1],
        "200 rows is the most this database returns per query"
    );

    let error = call(&registry, "query_database", json!({"query": "SELECT 1", "limit": 0}))
        .await
        .unwrap_err();
    assert!(error.contains("limit"), "{error}");
    fixture.assert_unchanged();
}

#[tokio::test]
async fn writes_and_other_statements_are_refused() {
    let fixture = Fixture::new();
    let registry = fixture.registry(fixture.config());
    let elsewhere = fixture.directory.path().join("copy.sqlite");
    let vacuum_into = format!("VACUUM INTO '{}'", elsewhere.display());
    let attach = format!(
        "ATTACH '{}' AS other",
        fixture.directory.path().join("other.sqlite").display()
    );
    let cases: Vec<(&str, &str)> = vec![
        ("SELECT 1; DROP TABLE orders", "more than one SQL statement"),
        ("SELECT 1; SELECT 2", "more than one SQL statement"),
        ("WITH x AS (SELECT 1) DELETE FROM orders", "DELETE from \"orders\""),
        ("DELETE FROM orders", "DELETE from \"orders\""),
        (
            "INSERT INTO customers (name) VALUES ('Eve')",
            "INSERT into \"customers\"",
        ),
        ("UPDATE orders SET total = 0", "UPDATE \"orders\""),
        ("CREATE TABLE t (x)", "change the database schema"),
        ("CREATE TEMP TABLE t (x)", "change the database schema"),
        ("CREATE INDEX i ON orders (total)", "change the database schema"),
        ("CREATE VIEW v AS SELECT 1", "change the database schema"),
        ("DROP TABLE orders", "change the database schema|DROP TABLE \"orders\""),
        (
            "DROP VIEW big_orders",
            "change the database schema|DROP VIEW \"big_orders\"",
        ),
        (
            "ALTER TABLE orders ADD COLUMN x",
            "change the database schema|ALTER TABLE \"orders\"",
        ),
        (&attach, "ATTACH another database"),
        ("PRAGMA writable_schema=ON", "PRAGMA writable_schema"),
        ("PRAGMA query_only = OFF", "PRAGMA query_only"),
        ("PRAGMA journal_mode = WAL", "PRAGMA journal_mode"),
        ("BEGIN", "control a transaction"),
        ("SAVEPOINT s", "SAVEPOINT"),
        ("REINDEX", "REINDEX"),
        ("ANALYZE", "change the database schema|ANALYZE"),
        ("VACUUM", "modify the database"),
        (&vacuum_into, "modify the database"),
        ("SELECT load_extension('evil')", "load_extension()"),
    ];
    for (sql, reason) in cases {
        let error = query(&registry, sql).await.unwrap_err();
        assert!(error.starts_with("refused: "), "{sql}: {error}");
        assert!(
            reason.split('|').any(|reason| error.contains(reason)),
            "{sql}: {error:?} lacks {reason:?}"
        );
    }
    assert!(!elsewhere.exists());
    fixture.assert_unchanged();
}

#[tokio::test]
async fn endless_queries_are_stopped_by_the_time_limit() {
    let fixture = Fixture::new();
    let registry = fixture.registry(fixture.config().with_timeout_ms(300));
    let started = Instant::now();
    let error = query(
        &registry,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n",
    )
    .await
    .unwrap_err();
    assert!(
        error.starts_with("the query was stopped after 300 ms, the time limit"),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // An endless query that returns rows simply stops at the row limit.
    let result = query(
        &registry,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n",
    )
    .await
    .unwrap();
    assert_eq!(
        (result["count"].clone(), result["truncated"].clone()),
        (json!(100), json!(true))
    );
    fixture.assert_unchanged();
}

#[tokio::test]
async fn cancellation_stops_a_running_query() {
    let fixture = Fixture::new();
    let tools = SqlTools::open(fixture.config().with_timeout_ms(60_000)).unwrap();
    let context = ToolContext::new();
    context.cancel.cancel();
    let started = Instant::now();
    let error = tools
        .query(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n",
            10,
            &context,
        )
        .await
        .unwrap_err();
    assert_eq!(error, ToolError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
    fixture.assert_unchanged();
}

#[tokio::test]
async fn describe_database_lists_tables_columns_keys_and_counts() {
    let fixture = Fixture::new();
    let registry = fixture.registry(fixture.config());
    let description = call(&registry, "describe_database", json!({})).await.unwrap();
    assert_eq!(
        description,
        json!({"tables": [
            {
                "name": "big_orders",
                "kind": "view",
                "primary_key": [],
                "columns": [
                    {"name": "id", "type": "INTEGER", "nullable": true, "primary_key": false},
                    {"name": "customer_id", "type": "INTEGER", "nullable": true, "primary_key": false},
                    {"name": "total", "type": "REAL", "nullable": true, "primary_key": false},
                    {"name": "note", "type": "TEXT", "nullable": true, "primary_key": false},
                    {"name": "receipt", "type": "BLOB", "nullable": true, "primary_key": false}
                ]
            },
            {
                "name": "customers",
                "kind": "table",
                "row_count": 2,
                "primary_key": ["id"],
                "columns": [
                    {"name": "id", "type": "INTEGER", "nullable": false, "primary_key": true},
                    {"name": "name", "type": "TEXT", "nullable": false, "primary_key": false},
                    {"name": "email", "type": "TEXT", "nullable": true, "primary_key": false}
                ]
            },
            {
                "name": "order_items",
                "kind": "table",
                "row_count": 2,
                "primary_key": ["order_id", "line"],
                "columns": [
                    {"name": "order_id", "type": "INTEGER", "nullable": false, "primary_key": true},
                    {"name": "line", "type": "INTEGER", "nullable": false, "primary_key": true},
                    {"name": "sku", "type": "TEXT", "nullable": true, "primary_key": false}
                ],
                "foreign_keys": [
                    {"columns": ["order_id"], "references_table": "orders", "references_columns": ["id"]}
                ]
            },
            {
                "name": "orders",
                "kind": "table",
                "row_count": 250,
                "primary_key": ["id"],
                "columns": [
                    {"name": "id", "type": "INTEGER", "nullable": false, "primary_key": true},
                    {"name": "customer_id", "type": "INTEGER", "nullable": false, "primary_key": false},
                    {"name": "total", "type": "REAL", "nullable": false, "primary_key": false, "default": "0"},
                    {"name": "note", "type": "TEXT", "nullable": true, "primary_key": false},
                    {"name": "receipt", "type": "BLOB", "nullable": true, "primary_key": false}
                ],
                "foreign_keys": [
                    {"columns": ["customer_id"], "references_table": "customers", "references_columns": ["id"]}
                ]
            }
        ]})
    );
    fixture.assert_unchanged();
}

#[tokio::test]
async fn sql_errors_help_the_model() {
    let fixture = Fixture::new();
    let registry = fixture.registry(fixture.config());
    let error = query(&registry, "SELECT * FROM order").await.unwrap_err();
    assert!(error.starts_with("SQL error: "), "{error}");
    let error = query(&registry, "SELECT * FROM invoices").await.unwrap_err();
    assert_eq!(
        error,
        "SQL error: no such table: invoices; call describe_database to see the tables and their columns"
    );
    let error = query(&registry, "   ").await.unwrap_err();
    assert!(error.starts_with("the query is empty"), "{error}");
    let error = query(&registry, "-- just a comment").await.unwrap_err();
    assert!(error.starts_with("the query is empty"), "{error}");
    fixture.assert_unchanged();
}

#[tokio::test]
async fn provider_describes_itself() {
    let fixture = Fixture::new();
    let registry = fixture.registry(fixture.config());
    assert_eq!(registry.provider_names(), ["sql"]);
    let definitions = registry.definitions();
    assert_eq!(definitions[0].name, "query_database");
    assert!(
        definitions[0]
            .description
            .contains("Tables: big_orders, customers, order_items, orders.")
    );
    assert_eq!(definitions[0].input_schema["required"], json!(["query"]));
    assert_eq!(
        definitions[0].input_schema["properties"]["limit"]["default"],
        json!(100)
    );
    assert_eq!(definitions[1].name, "describe_database");
    assert!(registry.invalid_schemas().is_empty());
    fixture.assert_unchanged();
}

#[tokio::test]
async fn parallel_queries_share_nothing() {
    let fixture = Fixture::new();
    let tools = SqlTools::open(fixture.config()).unwrap();
    let context = ToolContext::new();
    let runs = (1..=8).map(|id| {
        let tools = tools.clone();
        let context = context.clone();
        async move {
            tools
                .query(&format!("SELECT total FROM orders WHERE id = {id}"), 1, &context)
                .await
        }
    });
    let results = futures_join(runs).await;
    for (index, result) in results.into_iter().enumerate() {
        let expected = (index + 1) as f64 * 1.5;
        assert_eq!(result.unwrap().rows, vec![vec![json!(expected)]]);
    }
    fixture.assert_unchanged();
}

async fn futures_join<F: std::future::Future + Send + 'static>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut outputs = Vec::new();
    for handle in handles {
        outputs.push(handle.await.unwrap());
    }
    outputs
}

#[test]
fn missing_or_invalid_files_are_configuration_errors() {
    let directory = tempfile::tempdir().unwrap();
    let missing = directory.path().join("missing.sqlite");
    let error = SqlTools::open(SqlConfig::new(&missing)).unwrap_err();
    assert!(matches!(error, SqlError::NotFound { .. }));
    assert!(error.to_string().contains("does not exist"));
    assert!(!missing.exists(), "the database must never be created");

    let text = directory.path().join("notes.txt");
    std::fs::write(&text, "this is not a database, just some text that is long enough").unwrap();
    let error = SqlTools::open(SqlConfig::new(&text)).unwrap_err();
    assert!(matches!(error, SqlError::Open { .. }), "{error}");
    assert!(error.to_string().contains("not a database"), "{error}");

    for (config, expected) in [
        (
            SqlConfig::new(&text).with_timeout_ms(0),
            "`timeout_ms = 0` in [tools.sql] is out of range",
        ),
        (
            SqlConfig::new(&text).with_max_rows(0),
            "`max_rows = 0` in [tools.sql] is out of range",
        ),
    ] {
        let error = SqlTools::open(config).unwrap_err();
        assert!(error.to_string().contains(expected), "{error}");
    }
}

#[tokio::test]
async fn paths_with_uri_characters_open_read_only() {
    let directory = tempfile::tempdir().unwrap();
    let odd = directory.path().join("odd #?% dir");
    std::fs::create_dir(&odd).unwrap();
    let path = odd.join("data?.sqlite");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (42);")
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    let tools = SqlTools::open(SqlConfig::new(&path)).unwrap();
    let context = ToolContext::new();
    let result = tools.query("SELECT x FROM t", 10, &context).await.unwrap();
    assert_eq!(result.rows, vec![vec![json!(42)]]);
    let error = tools.query("DELETE FROM t", 10, &context).await.unwrap_err();
    assert!(error.to_string().starts_with("refused: "), "{error}");
    assert!(std::fs::read(&path).unwrap() == before);
    assert_eq!(std::fs::read_dir(&odd).unwrap().count(), 1);
}

#[tokio::test]
async fn invented_arguments_are_refused_before_the_tool_runs() {
    let fixture = Fixture::new();
    let registry = fixture.registry(fixture.config());
    // Valid calls but for an invented argument: refused by schema validation
    // (the tool's own decoding would word it differently), so neither ran.
    let cases = [
        (
            "query_database",
            json!({"query": "SELECT 1", "table": "orders"}),
            "table",
        ),
        ("describe_database", json!({"schema": "main"}), "schema"),
    ];
    agent_testing::assert_invented_arguments_refused(&registry, &cases).await;
    fixture.assert_unchanged();
}
