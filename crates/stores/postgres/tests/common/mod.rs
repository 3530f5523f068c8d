//! Helpers shared by the test files: one PostgreSQL server per test binary
//! (a `TempCluster`), a database of its own per test. The turn builders are
//! in `agent_testing::store_contract`.
#![allow(clippy::unwrap_used, dead_code)]

use std::sync::OnceLock;

use agent_store_postgres::PostgresStore;
use agent_store_postgres::testing::TempCluster;

/// The server of this test binary; `None` when PostgreSQL is not installed
/// (and `AGENTRY_REQUIRE_POSTGRES` is not set). Never dropped: its watchdog
/// stops it when the binary exits.
pub fn cluster() -> Option<&'static TempCluster> {
    static CLUSTER: OnceLock<Result<Option<TempCluster>, String>> = OnceLock::new();
    match CLUSTER.get_or_init(TempCluster::start) {
        Ok(cluster) => cluster.as_ref(),
        Err(error) => panic!("{error}"),
    }
}

/// The URL of a new database named after `test`; `None` (after saying so)
/// when the test should skip.
pub async fn database(test: &str) -> Option<String> {
    let Some(cluster) = cluster() else {
        agent_testing::skip::skipped(test, "PostgreSQL is not installed");
        return None;
    };
    Some(cluster.create_database(test).await.unwrap())
}

/// A store on a new database named after `test`, with the database's URL.
pub async fn temp_store(test: &str) -> Option<(String, PostgresStore)> {
    let url = database(test).await?;
    let store = PostgresStore::connect(&url).await.unwrap();
    Some((url, store))
}

/// Runs `sql` (statements without parameters) on the store's database,
/// outside the store: to damage rows, add triggers and look at the tables.
pub async fn execute(store: &PostgresStore, sql: &str) {
    use sqlx_core::executor::Executor as _;
    store.pool().execute(sql).await.unwrap();
}
