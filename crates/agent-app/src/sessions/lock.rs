//! One process at a time per session: a lock file beside the database.

use std::fs::{self, File, OpenOptions};
use std::path::Path;

#[cfg(feature = "sqlite")]
use fs4::{FileExt, TryLockError};

use super::validate_name;
use crate::error::AppError;

/// A session held by this process; the lock is released when this is
/// dropped (or the process ends, however it ends).
///
/// The store itself never interleaves two turns, but a run that loaded the
/// history before another process appended its turn would answer without
/// it: the lock makes every run see the turns of the runs before it.
#[derive(Debug)]
pub struct SessionLock {
    _file: File,
}

impl SessionLock {
    /// Exclusive use of the session `name` of the sessions directory `dir`
    /// until the returned guard is dropped. When another process holds it,
    /// `wait` decides: block until it is free (after calling `on_wait`
    /// once), or fail with an error saying the session is in use.
    ///
    /// File locks come with the `sqlite` feature (the session store on
    /// disk); without it this fails with the error naming the feature.
    pub fn acquire(dir: &Path, name: &str, wait: bool, on_wait: impl FnOnce()) -> Result<Self, AppError> {
        validate_name(name)?;
        create_private_dir(dir)?;
        let path = dir.join(format!(".{name}.lock"));
        let file = owner_only(OpenOptions::new().read(true).write(true).create(true).truncate(false))
            .open(&path)
            .map_err(|error| AppError::io(format!("opening {}", path.display()), error))?;
        Self::lock(file, &path, name, wait, on_wait)
    }

    #[cfg(feature = "sqlite")]
    fn lock(file: File, path: &Path, name: &str, wait: bool, on_wait: impl FnOnce()) -> Result<Self, AppError> {
        match FileExt::try_lock(&file) {
            Ok(()) => return Ok(Self { _file: file }),
            Err(TryLockError::WouldBlock) if !wait => {
                return Err(AppError::Session(format!(
                    "the session `{name}` is in use by another agentry process; try again when it has finished"
                )));
            }
            Err(TryLockError::WouldBlock) => on_wait(),
            Err(TryLockError::Error(error)) => {
                return Err(AppError::io(format!("locking {}", path.display()), error));
            }
        }
        FileExt::lock(&file).map_err(|error| AppError::io(format!("locking {}", path.display()), error))?;
        Ok(Self { _file: file })
    }

    #[cfg(not(feature = "sqlite"))]
    fn lock(_: File, _: &Path, _: &str, _: bool, _: impl FnOnce()) -> Result<Self, AppError> {
        Err(crate::error::ConfigError::not_compiled("the session lock of the SQLite session store", "sqlite").into())
    }
}

/// Creates `dir`, owner-only, if it does not exist.
pub(crate) fn create_private_dir(dir: &Path) -> Result<(), AppError> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|error| AppError::io(format!("creating {}", dir.display()), error))
}

/// `options` creating files readable and writable by their owner only.
fn owner_only(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(options, 0o600);
    options
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use super::*;

    #[test]
    fn a_held_session_is_busy_until_released() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let held = SessionLock::acquire(dir.path(), "trip", false, || {}).unwrap_or_else(|e| panic!("{e}"));
        let busy = SessionLock::acquire(dir.path(), "trip", false, || {})
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(busy.contains("`trip` is in use by another agentry process"), "{busy}");
        SessionLock::acquire(dir.path(), "other", false, || {}).unwrap_or_else(|e| panic!("{e}"));
        drop(held);
        SessionLock::acquire(dir.path(), "trip", false, || {}).unwrap_or_else(|e| panic!("{e}"));
    }
}
