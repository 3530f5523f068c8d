//! The schema: the migrations of `migrations/`, embedded at compile time and
//! applied by sqlx's migrator.
//!
//! The migrator takes a PostgreSQL advisory lock (per database) before it
//! looks at `_sqlx_migrations`, so stores starting at once against a new
//! database migrate it once. The migrations are given to it as a
//! [`MigrationSource`] of embedded text (the `migrate!` macro would need the
//! `sqlx` facade, see the workspace manifest), with the versions,
//! descriptions and checksums sqlx's own reading of the directory gives, so
//! `sqlx migrate info --source crates/stores/postgres/migrations` agrees.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;

use agent_core::StoreError;
use sqlx_core::error::BoxDynError;
use sqlx_core::migrate::{Migration, MigrationSource, MigrationType, Migrator};
use sqlx_postgres::PgPool;

use crate::error;

/// Each migration: its version, its description (the file name's, with
/// spaces for underscores, as sqlx reads it) and its SQL. Never edit one
/// that has been released: databases record its checksum.
const MIGRATIONS: [(i64, &str, &str); 2] = [
    (1, "conversations", include_str!("../migrations/0001_conversations.sql")),
    (2, "media", include_str!("../migrations/0002_media.sql")),
];

/// The version of the newest migration this crate applies.
pub const LATEST_MIGRATION: i64 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// The embedded migrations, as sqlx's migrator takes them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Embedded;

impl MigrationSource<'static> for Embedded {
    fn resolve(self) -> Pin<Box<dyn Future<Output = Result<Vec<Migration>, BoxDynError>> + Send + 'static>> {
        Box::pin(async { Ok(migrations()) })
    }
}

/// The embedded migrations.
pub(crate) fn migrations() -> Vec<Migration> {
    MIGRATIONS
        .iter()
        .map(|&(version, description, sql)| {
            Migration::new(
                version,
                Cow::Borrowed(description),
                MigrationType::Simple,
                Cow::Borrowed(sql),
                false,
            )
        })
        .collect()
}

/// Brings the schema of the pool's database up to [`LATEST_MIGRATION`].
pub(crate) async fn migrate(pool: &PgPool) -> Result<(), StoreError> {
    let migrator = Migrator::new(Embedded).await.map_err(error::migration)?;
    let mut conn = pool.acquire().await.map_err(error::db)?;
    let result = migrator.run(&mut *conn).await;
    if result.is_err() {
        // The migrator returns early without releasing its advisory lock,
        // which belongs to the session: end the session so that the lock
        // does not stay with a pooled connection.
        conn.close_on_drop();
    }
    result.map_err(error::migration)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;

    use super::*;

    #[tokio::test]
    async fn the_embedded_migrations_are_the_directory_as_sqlx_reads_it() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        let from_dir = Migrator::new(dir).await.unwrap();
        let embedded = Migrator::new(Embedded).await.unwrap();
        let describe = |migrator: &Migrator| -> Vec<(i64, String, Vec<u8>)> {
            migrator
                .iter()
                .map(|m| (m.version, m.description.to_string(), m.checksum.to_vec()))
                .collect()
        };
        assert_eq!(describe(&embedded), describe(&from_dir));
        assert_eq!(embedded.iter().last().map(|m| m.version), Some(LATEST_MIGRATION));
    }
}
