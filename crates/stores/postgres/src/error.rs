//! sqlx errors as [`StoreError`]s.

use agent_core::StoreError;
use sqlx_core::error::Error;
use sqlx_core::migrate::MigrateError;

/// The SQLSTATE of a foreign-key violation: a row refers to a conversation
/// that was deleted meanwhile.
const FOREIGN_KEY_VIOLATION: &str = "23503";

/// An sqlx error as a [`StoreError`]: a value that cannot be read back is
/// [`StoreError::Corrupt`], anything else (connection, pool, server) is
/// [`StoreError::Backend`].
pub(crate) fn db(error: Error) -> StoreError {
    match error {
        Error::ColumnDecode { .. }
        | Error::Decode(_)
        | Error::ColumnNotFound(_)
        | Error::ColumnIndexOutOfBounds { .. }
        | Error::TypeNotFound { .. } => StoreError::corrupt(format!("a stored row cannot be read: {error}")),
        other => StoreError::backend(other),
    }
}

/// Like [`db`], but a foreign-key violation (the conversation was deleted
/// while the statement ran) is a [`StoreError::NotFound`] of `name`.
pub(crate) fn db_in(name: &str, error: Error) -> StoreError {
    let vanished = error
        .as_database_error()
        .and_then(sqlx_core::error::DatabaseError::code)
        .is_some_and(|code| code == FOREIGN_KEY_VIOLATION);
    if vanished {
        StoreError::not_found(name)
    } else {
        db(error)
    }
}

/// A failed migration as a [`StoreError`]: a database set up by a newer
/// version of this crate, or whose recorded migrations differ from this
/// one's, is [`StoreError::Corrupt`]; anything else is
/// [`StoreError::Backend`].
pub(crate) fn migration(error: MigrateError) -> StoreError {
    match error {
        MigrateError::VersionMissing(version) => StoreError::corrupt(format!(
            "the database has schema migration {version}, written by a newer agentry (or by another program: \
             give the store a database of its own); this one knows up to migration {}",
            crate::schema::LATEST_MIGRATION
        )),
        MigrateError::VersionMismatch(version) => StoreError::corrupt(format!(
            "schema migration {version} recorded in the database differs from this agentry's (another program's \
             migrations in the same database? give the store a database of its own)"
        )),
        MigrateError::Dirty(version) => StoreError::corrupt(format!(
            "schema migration {version} was left half applied; repair the database by hand"
        )),
        MigrateError::Execute(error) | MigrateError::ExecuteMigration(error, _) => {
            StoreError::backend(format!("migrating the schema: {error}"))
        }
        other => StoreError::backend(format!("migrating the schema: {other}")),
    }
}
