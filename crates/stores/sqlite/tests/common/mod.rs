//! Helpers shared by the test files (the turn builders are in
//! `agent_testing::store_contract`).
#![allow(clippy::unwrap_used, dead_code)]

use agent_store_sqlite::SqliteStore;

/// A store on `store.db` in a new temporary directory.
pub fn temp_store() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("store.db")).unwrap();
    (dir, store)
}
