//! Stored conversations: one JSON file per session under
//! `$AGENTRY_HOME/sessions`, loaded before a run with `--session NAME` and
//! saved after it.
//!
//! Several processes may use one session: each takes the session's lock
//! ([`SessionStore::lock`]) before loading it and keeps it until it has
//! saved, so every run sees the turns of the runs before it and none is
//! lost. Files are written to a temporary file of their own, flushed to
//! disk and renamed over the old one, and are readable by their owner only.

use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write as _};
use std::path::{Path, PathBuf};

use agent_core::{Message, Usage};
use fs4::FileExt;
use fs4::TryLockError;
use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// The longest session name.
pub const MAX_NAME_LEN: usize = agent_core::MAX_CONVERSATION_NAME_LEN;

/// A stored conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// Its name (also the file name, without `.json`).
    pub name: String,
    /// When it was created (RFC 3339, UTC).
    pub created_at: String,
    /// When it was last saved (RFC 3339, UTC).
    pub updated_at: String,
    /// The provider of the last run.
    #[serde(default)]
    pub provider: String,
    /// The model of the last run.
    #[serde(default)]
    pub model: String,
    /// Tokens used by every run of the session.
    #[serde(default)]
    pub usage: Usage,
    /// Estimated cost of every run whose price was known, in USD.
    #[serde(default)]
    pub cost_usd: f64,
    /// The conversation, ready to continue.
    pub messages: Vec<Message>,
}

impl Session {
    /// An empty session called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        let now = now();
        Self {
            name: name.into(),
            created_at: now.clone(),
            updated_at: now,
            provider: String::new(),
            model: String::new(),
            usage: Usage::default(),
            cost_usd: 0.0,
            messages: Vec::new(),
        }
    }

    /// Number of user turns.
    pub fn turns(&self) -> usize {
        usize::try_from(agent_core::count_user_messages(&self.messages)).unwrap_or(usize::MAX)
    }

    /// The conversation as people read it.
    pub fn transcript(&self) -> String {
        let mut out = format!(
            "session {} · {} · {} · {} · ${:.6}\n",
            self.name,
            crate::console::count(self.turns() as u64, "turn"),
            if self.model.is_empty() {
                "no runs yet".to_owned()
            } else {
                format!("{}/{}", self.provider, self.model)
            },
            crate::console::count(self.usage.total_tokens(), "token"),
            self.cost_usd
        );
        for message in &self.messages {
            match message {
                Message::System { content } => {
                    let _ = writeln!(out, "system: {content}");
                }
                Message::User { content } => {
                    let _ = write!(out, "\nyou: {content}\n");
                }
                Message::Assistant(assistant) => {
                    for call in &assistant.tool_calls {
                        let _ = writeln!(out, "  → {}({})", call.name, call.arguments_text());
                    }
                    if !assistant.content.trim().is_empty() {
                        let _ = writeln!(out, "assistant: {}", assistant.content.trim());
                    }
                }
                Message::Tool(result) => {
                    let mark = if result.is_error { "✗" } else { "✓" };
                    let _ = writeln!(
                        out,
                        "  {mark} {}: {}",
                        result.name,
                        crate::console::brief(&result.content, 200)
                    );
                }
            }
        }
        out
    }
}

/// A directory of sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStore {
    dir: PathBuf,
}

/// One line of `agentry sessions list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSummary {
    /// The name.
    pub name: String,
    /// When it was last saved.
    pub updated_at: String,
    /// User turns.
    pub turns: usize,
    /// Messages.
    pub messages: usize,
}

impl SessionStore {
    /// A store in `dir` (created on first save).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, name: &str) -> Result<PathBuf, AppError> {
        validate_name(name)?;
        Ok(self.dir.join(format!("{name}.json")))
    }

    /// The session called `name`, if stored.
    pub fn load(&self, name: &str) -> Result<Option<Session>, AppError> {
        let path = self.path(name)?;
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(AppError::io(format!("reading {}", path.display()), error)),
        };
        serde_json::from_str(&text).map(Some).map_err(|error| {
            AppError::Session(format!(
                "the session file {} is damaged ({error}); delete it with `agentry sessions delete {name}`",
                path.display()
            ))
        })
    }

    /// The session called `name`, or a new empty one.
    pub fn load_or_new(&self, name: &str) -> Result<Session, AppError> {
        Ok(self.load(name)?.unwrap_or_else(|| Session::new(name)))
    }

    /// Writes `session` atomically and durably: a temporary file of this
    /// process, flushed to disk, renamed over the old one; owner-only.
    /// Hold the session's [`lock`](Self::lock) from loading to saving, or
    /// a concurrent run's turns can be overwritten.
    pub fn save(&self, session: &mut Session) -> Result<(), AppError> {
        let path = self.path(&session.name)?;
        self.create_dir()?;
        session.updated_at = now();
        let text = serde_json::to_string_pretty(session)
            .map_err(|error| AppError::Session(format!("could not encode the session: {error}")))?;
        let partial = self
            .dir
            .join(format!(".{}.json.{}.partial", session.name, std::process::id()));
        let written = owner_only(OpenOptions::new().write(true).create(true).truncate(true))
            .open(&partial)
            .and_then(|mut file| {
                file.write_all(text.as_bytes())?;
                file.sync_all()
            })
            .and_then(|()| fs::rename(&partial, &path));
        if let Err(error) = written {
            let _ = fs::remove_file(&partial);
            return Err(AppError::io(format!("writing {}", path.display()), error));
        }
        // The rename is durable once the directory is; not every platform
        // can sync a directory, and the file itself is already on disk.
        let _ = File::open(&self.dir).and_then(|dir| dir.sync_all());
        Ok(())
    }

    /// Exclusive use of the session `name` by this process until the
    /// returned guard is dropped. When another process holds it, `wait`
    /// decides: block until it is free (after calling `on_wait` once), or
    /// fail with an error saying the session is in use.
    pub fn lock(&self, name: &str, wait: bool, on_wait: impl FnOnce()) -> Result<SessionLock, AppError> {
        validate_name(name)?;
        self.create_dir()?;
        let path = self.dir.join(format!(".{name}.lock"));
        let file = owner_only(OpenOptions::new().read(true).write(true).create(true).truncate(false))
            .open(&path)
            .map_err(|error| AppError::io(format!("opening {}", path.display()), error))?;
        match FileExt::try_lock(&file) {
            Ok(()) => return Ok(SessionLock { _file: file }),
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
        Ok(SessionLock { _file: file })
    }

    /// Creates the directory, owner-only, if it does not exist.
    fn create_dir(&self) -> Result<(), AppError> {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(&self.dir)
            .map_err(|error| AppError::io(format!("creating {}", self.dir.display()), error))
    }

    /// Deletes the session; fails when there is none of that name, or when
    /// another process is using it (its run would write it again).
    pub fn delete(&self, name: &str) -> Result<(), AppError> {
        let path = self.path(name)?;
        if !path.is_file() {
            return Err(not_found(name));
        }
        let _held = self.lock(name, false, || {})?;
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == ErrorKind::NotFound => Err(not_found(name)),
            Err(error) => Err(AppError::io(format!("deleting {}", path.display()), error)),
        }
    }

    /// Every stored session, most recently saved first. Damaged files are skipped.
    pub fn list(&self) -> Result<Vec<SessionSummary>, AppError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(AppError::io(format!("reading {}", self.dir.display()), error)),
        };
        let mut sessions: Vec<SessionSummary> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let path = entry.path();
                let name = path.file_stem()?.to_str()?.to_owned();
                if path.extension()? != "json" || validate_name(&name).is_err() {
                    return None;
                }
                let session: Session = serde_json::from_str(&fs::read_to_string(&path).ok()?).ok()?;
                Some(SessionSummary {
                    name,
                    turns: session.turns(),
                    messages: session.messages.len(),
                    updated_at: session.updated_at,
                })
            })
            .collect();
        sessions.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| a.name.cmp(&b.name)));
        Ok(sessions)
    }
}

/// A session held by this process; the lock is released when this is
/// dropped (or the process ends, however it ends).
#[derive(Debug)]
pub struct SessionLock {
    _file: File,
}

/// `options` creating files readable and writable by their owner only.
fn owner_only(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(options, 0o600);
    options
}

/// The error for a session that is not stored.
pub fn not_found(name: &str) -> AppError {
    AppError::Session(format!(
        "no session named `{name}`; `agentry sessions list` shows the stored ones"
    ))
}

/// Session names are file names: 1 to 64 letters, digits, `-`, `_` or `.`,
/// not starting with `.`.
/// The rules are the conversation store's
/// ([`validate_conversation_name`](agent_core::validate_conversation_name)).
pub fn validate_name(name: &str) -> Result<(), AppError> {
    agent_core::validate_conversation_name(name).map_err(|error| match error {
        agent_core::StoreError::InvalidName { reason, .. } => AppError::Usage(format!(
            "invalid session name {name:?}: {reason}; use 1 to {MAX_NAME_LEN} letters, digits, '-', '_' or '.', \
             not starting with '.'"
        )),
        other => AppError::Usage(format!("invalid session name {name:?}: {other}")),
    })
}

fn now() -> String {
    agent_core::utc_timestamp(std::time::SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_round_trip_list_and_delete() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = SessionStore::new(dir.path().join("sessions"));
        assert!(store.list().unwrap_or_default().is_empty());
        assert!(store.load("trip").ok().flatten().is_none());

        let mut session = store.load_or_new("trip").unwrap_or_else(|e| panic!("{e}"));
        session.messages = vec![Message::user("hi"), Message::assistant("hello")];
        store.save(&mut session).unwrap_or_else(|e| panic!("{e}"));
        let loaded = store.load("trip").ok().flatten().unwrap_or_else(|| Session::new("x"));
        assert_eq!(loaded.messages, session.messages);
        assert!(loaded.transcript().contains("you: hi"));

        let listed = store.list().unwrap_or_default();
        assert_eq!(listed.len(), 1);
        assert_eq!((listed[0].name.as_str(), listed[0].turns), ("trip", 1));

        store.delete("trip").unwrap_or_else(|e| panic!("{e}"));
        assert!(
            store
                .delete("trip")
                .is_err_and(|e| e.to_string().contains("no session named `trip`"))
        );
    }

    #[test]
    fn a_held_session_is_busy_until_released_and_saves_leave_no_temporary_files() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = SessionStore::new(dir.path());
        let held = store.lock("trip", false, || {}).unwrap_or_else(|e| panic!("{e}"));
        let busy = store
            .lock("trip", false, || {})
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(busy.contains("`trip` is in use by another agentry process"), "{busy}");
        store.lock("other", false, || {}).unwrap_or_else(|e| panic!("{e}"));
        store.save(&mut Session::new("trip")).unwrap_or_else(|e| panic!("{e}"));
        let refused = store.delete("trip").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            refused.contains("`trip` is in use"),
            "a held session is not deleted: {refused}"
        );
        assert!(store.load("trip").is_ok_and(|session| session.is_some()));
        drop(held);
        let _again = store.lock("trip", false, || {}).unwrap_or_else(|e| panic!("{e}"));
        store.save(&mut Session::new("trip")).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| name.contains("partial"))
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }

    #[test]
    fn names_cannot_escape_the_directory() {
        for bad in ["", "../etc", ".hidden", "a/b", "a b", &"x".repeat(65)] {
            assert!(
                validate_name(bad).is_err_and(|e| e.exit_code() == crate::error::EXIT_USAGE),
                "{bad:?}"
            );
        }
        validate_name("trip-2026.v1_a").unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn a_damaged_file_says_how_to_recover() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("bad.json"), "{not json").unwrap_or_else(|e| panic!("{e}"));
        let store = SessionStore::new(dir.path());
        let error = store.load("bad").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("agentry sessions delete bad"), "{error}");
        assert!(store.list().unwrap_or_default().is_empty());
    }
}
