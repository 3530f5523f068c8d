//! The one-time import of the JSON session files earlier versions wrote
//! (`$AGENTRY_HOME/sessions/NAME.json`) into the conversation store.
//!
//! Every file is imported once: when the store holds it, the file moves to
//! `sessions/imported/`, where it stays (nothing is deleted). A file that
//! cannot be read or decoded stays where it is and is reported; a file
//! whose name is already taken in the store by a different conversation is
//! left alone too, with a warning saying how to import it.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use agent_core::{Conversation, ConversationMeta, ConversationStore, StoreError};
use agent_store::count_user_messages;

use super::{Session, store_error};
use crate::error::AppError;

/// Where imported files are moved to, inside the sessions directory.
pub const IMPORTED_DIR: &str = "imported";

/// What an import did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// Sessions now in the store, by name.
    pub imported: Vec<String>,
    /// Files left in place, each with the reason.
    pub skipped: Vec<(PathBuf, String)>,
}

/// Imports every `NAME.json` session file of `dir` into `store`.
/// Safe to run again and from several processes at once: a session already
/// in the store with the same messages counts as imported.
pub async fn import_json_sessions(dir: &Path, store: &dyn ConversationStore) -> Result<ImportReport, AppError> {
    let mut report = ImportReport::default();
    for (name, path) in json_session_files(dir)? {
        let session = match read_session(&path) {
            Ok(session) => session,
            Err(reason) => {
                report.skipped.push((path, reason));
                continue;
            }
        };
        let conversation = to_conversation(name.clone(), session);
        match store.import(&conversation).await {
            Ok(_) => {}
            Err(StoreError::Conflict { .. }) => {
                let stored = store.load(&name).await.map_err(|error| store_error(&name, error))?;
                if stored.map(|stored| stored.messages) != Some(conversation.messages) {
                    report.skipped.push((
                        path,
                        format!(
                            "the store already has a different session named `{name}`; rename the file \
                             (to a name that is not taken) to import it"
                        ),
                    ));
                    continue;
                }
            }
            Err(error) => return Err(store_error(&name, error)),
        }
        move_to_imported(dir, &name, &path)?;
        report.imported.push(name);
    }
    Ok(report)
}

/// The `NAME.json` files of `dir` whose names are valid session names.
fn json_session_files(dir: &Path) -> Result<Vec<(String, PathBuf)>, AppError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(AppError::io(format!("reading {}", dir.display()), error)),
    };
    let mut files: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|extension| extension == "json"))
        .filter_map(|path| {
            let name = path.file_stem()?.to_str()?.to_owned();
            agent_core::validate_conversation_name(&name).ok()?;
            Some((name, path))
        })
        .collect();
    files.sort();
    Ok(files)
}

fn read_session(path: &Path) -> Result<Session, String> {
    let text = fs::read_to_string(path).map_err(|error| format!("it could not be read: {error}"))?;
    serde_json::from_str(&text).map_err(|error| format!("it is damaged ({error})"))
}

/// The session as a stored conversation: its timestamps, provider, model and
/// totals are kept (the store recomputes the counts).
fn to_conversation(name: String, session: Session) -> Conversation {
    let mut meta = ConversationMeta::new(name, session.created_at);
    meta.updated_at = session.updated_at;
    meta.provider = session.provider;
    meta.model = session.model;
    meta.usage = session.usage;
    meta.cost_usd = session.cost_usd;
    meta.message_count = session.messages.len() as u64;
    meta.user_turns = count_user_messages(&session.messages);
    Conversation::new(meta, session.messages)
}

/// Moves an imported file to `imported/`, under a free name.
fn move_to_imported(dir: &Path, name: &str, path: &Path) -> Result<(), AppError> {
    let imported = dir.join(IMPORTED_DIR);
    super::lock::create_private_dir(&imported)?;
    let mut target = imported.join(format!("{name}.json"));
    let mut attempt = 1;
    while target.exists() {
        attempt += 1;
        target = imported.join(format!("{name}.{attempt}.json"));
    }
    match fs::rename(path, &target) {
        Ok(()) => Ok(()),
        // Another process imported and moved it first.
        Err(error) if error.kind() == ErrorKind::NotFound => Ok(()),
        Err(error) => Err(AppError::io(
            format!("moving {} to {}", path.display(), target.display()),
            error,
        )),
    }
}
