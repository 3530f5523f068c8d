//! Stored conversations: `agentry run|chat --session NAME` continues one,
//! `agentry sessions` lists, shows and deletes them.
//!
//! Sessions live in a [`ConversationStore`]: the SQLite database
//! `$AGENTRY_HOME/sessions/conversations.sqlite` (owner-only, several
//! processes at once). Each run appends its turn in one transaction, so a
//! crash never leaves half a turn. Session files written by earlier versions
//! (`sessions/NAME.json`) are imported the first time the store is opened
//! and moved to `sessions/imported/` ([`import`]).
//!
//! A process takes the session's lock ([`SessionLock`]) before loading it
//! and keeps it until its turn is stored, so every run sees the turns of the
//! runs before it.

mod import;
mod lock;
mod view;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_core::{AgentRunResult, Conversation, ConversationStore, Message, StoreError};
#[cfg(feature = "sqlite")]
use agent_store_sqlite::SqliteStore;

pub use import::{IMPORTED_DIR, ImportReport, import_json_sessions};
pub use lock::SessionLock;
pub use view::{Session, SessionSummary};

use crate::error::AppError;

/// The longest session name.
pub const MAX_NAME_LEN: usize = agent_core::MAX_CONVERSATION_NAME_LEN;

/// The database file inside the sessions directory.
pub const DATABASE_FILE: &str = "conversations.sqlite";

/// The sessions of one `$AGENTRY_HOME`.
#[derive(Clone)]
pub struct SessionStore {
    dir: PathBuf,
    conversations: Arc<dyn ConversationStore>,
}

impl std::fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl SessionStore {
    /// Opens the sessions of the directory `dir` (created owner-only when
    /// missing), importing the JSON session files found there.
    pub async fn open(dir: impl Into<PathBuf>) -> Result<Self, AppError> {
        let dir = dir.into();
        lock::create_private_dir(&dir)?;
        let conversations = open_sqlite(dir.join(DATABASE_FILE)).await?;
        Self::with_store(dir, conversations).await
    }

    /// The sessions of `dir` kept in `conversations` (e.g. an in-memory
    /// store in tests); JSON session files in `dir` are imported into it,
    /// and those that cannot be are named on stderr.
    pub async fn with_store(
        dir: impl Into<PathBuf>,
        conversations: Arc<dyn ConversationStore>,
    ) -> Result<Self, AppError> {
        let store = Self {
            dir: dir.into(),
            conversations,
        };
        let report = import_json_sessions(&store.dir, store.conversations.as_ref()).await?;
        for (path, reason) in &report.skipped {
            eprintln!(
                "warning: the session file {} was not imported: {reason}",
                path.display()
            );
        }
        Ok(store)
    }

    /// The sessions directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The conversation store behind the sessions.
    pub fn conversations(&self) -> &Arc<dyn ConversationStore> {
        &self.conversations
    }

    /// Exclusive use of the session `name` (see [`SessionLock::acquire`]).
    pub fn lock(&self, name: &str, wait: bool, on_wait: impl FnOnce()) -> Result<SessionLock, AppError> {
        SessionLock::acquire(&self.dir, name, wait, on_wait)
    }

    /// The conversation `name` as the next run continues it, created empty
    /// when there is none.
    pub async fn load_or_create(&self, name: &str) -> Result<Conversation, AppError> {
        validate_name(name)?;
        self.conversations
            .load_or_create(name)
            .await
            .map_err(|error| store_error(name, error))
    }

    /// The session `name` with every stored message, if there is one.
    pub async fn show(&self, name: &str) -> Result<Option<Session>, AppError> {
        validate_name(name)?;
        let conversation = self
            .conversations
            .transcript(name)
            .await
            .map_err(|error| store_error(name, error))?;
        Ok(conversation.map(Session::from))
    }

    /// Stores the turn of a run of `provider` that continued `history`
    /// (the session's context as loaded), as [`agent_runner::store_turn`]
    /// does.
    pub async fn record_turn(
        &self,
        name: &str,
        provider: &str,
        history: &[Message],
        result: &AgentRunResult,
    ) -> Result<(), AppError> {
        if result.added_messages_start(history.len()).is_none() {
            return Err(AppError::Session(format!(
                "the run's conversation does not continue the stored session `{name}`; its turn was not stored"
            )));
        }
        agent_runner::store_turn(self.conversations.as_ref(), name, provider, history.len(), result)
            .await
            .map(drop)
            .map_err(|error| store_error(name, error))
    }

    /// Empties the session `name` (`/reset` in a chat): it is deleted and
    /// created again.
    pub async fn reset(&self, name: &str) -> Result<(), AppError> {
        validate_name(name)?;
        match self.conversations.delete(name).await {
            Ok(()) | Err(StoreError::NotFound { .. }) => {}
            Err(error) => return Err(store_error(name, error)),
        }
        self.load_or_create(name).await.map(drop)
    }

    /// Every stored session, most recently updated first.
    pub async fn list(&self) -> Result<Vec<SessionSummary>, AppError> {
        let metas = self
            .conversations
            .list()
            .await
            .map_err(|error| AppError::Session(error.to_string()))?;
        Ok(metas.into_iter().map(SessionSummary::from).collect())
    }

    /// Deletes the session; fails when there is none of that name, or when
    /// another process is using it (its run would write it again).
    pub async fn delete(&self, name: &str) -> Result<(), AppError> {
        validate_name(name)?;
        if self.show(name).await?.is_none() {
            return Err(not_found(name));
        }
        let _held = self.lock(name, false, || {})?;
        self.conversations
            .delete(name)
            .await
            .map_err(|error| store_error(name, error))
    }
}

/// The SQLite store at `path`, opened off the async runtime (opening
/// creates and migrates the file, which blocks).
/// The SQLite store of the file `path`, opened on a blocking thread; in a
/// build without the `sqlite` feature, the error naming it.
#[cfg_attr(
    not(feature = "sqlite"),
    allow(clippy::unused_async, reason = "the same signature as the build with SQLite")
)]
pub(crate) async fn open_sqlite(path: PathBuf) -> Result<Arc<dyn ConversationStore>, AppError> {
    #[cfg(feature = "sqlite")]
    {
        let shown = path.display().to_string();
        let failed = |error: &dyn std::fmt::Display| {
            AppError::Session(format!("opening the session store {shown} failed: {error}"))
        };
        let store = tokio::task::spawn_blocking(move || SqliteStore::open(path))
            .await
            .map_err(|error| failed(&error))?
            .map_err(|error| failed(&error))?;
        Ok(Arc::new(store))
    }
    #[cfg(not(feature = "sqlite"))]
    {
        let _ = path;
        Err(crate::error::ConfigError::not_compiled(
            "the SQLite session store (`--session`, `agentry sessions`)",
            "sqlite",
        )
        .into())
    }
}

/// A store error as the CLI reports it.
pub(crate) fn store_error(name: &str, error: StoreError) -> AppError {
    match error {
        StoreError::NotFound { .. } => not_found(name),
        StoreError::InvalidName { .. } => validate_name(name)
            .err()
            .unwrap_or_else(|| AppError::Usage(error.to_string())),
        other => AppError::Session(format!("session `{name}`: {other}")),
    }
}

/// The error for a session that is not stored.
pub fn not_found(name: &str) -> AppError {
    AppError::Session(format!(
        "no session named `{name}`; `agentry sessions list` shows the stored ones"
    ))
}

/// Session names: 1 to 64 letters, digits, `-`, `_` or `.`, not starting
/// with `.`. The rules are the conversation store's
/// ([`validate_conversation_name`](agent_core::validate_conversation_name)).
pub fn validate_name(name: &str) -> Result<(), AppError> {
    agent_core::validate_conversation_name(name).map_err(|error| match error {
        StoreError::InvalidName { reason, .. } => AppError::Usage(format!(
            "invalid session name {name:?}: {reason}; use 1 to {MAX_NAME_LEN} letters, digits, '-', '_' or '.', \
             not starting with '.'"
        )),
        other => AppError::Usage(format!("invalid session name {name:?}: {other}")),
    })
}

#[cfg(test)]
mod tests {
    use agent_store::InMemoryStore;
    use serde_json::json;

    use super::*;

    fn result(stop_reason: &str, messages: &[Message], input_tokens: u64) -> AgentRunResult {
        serde_json::from_value(json!({
            "response": "", "stop_reason": stop_reason, "iterations": 1, "tool_calls": [], "model_calls": [],
            "usage": {"input_tokens": input_tokens, "output_tokens": 2}, "cost_usd": 0.5,
            "provider": "openai", "model": "gpt-4o-mini", "messages": messages,
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    async fn store(dir: &Path) -> SessionStore {
        SessionStore::with_store(dir, Arc::new(InMemoryStore::new()))
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[tokio::test]
    async fn a_turn_stores_only_the_messages_it_added_and_a_failed_one_only_its_usage() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = store(dir.path()).await;
        let history = store
            .load_or_create("trip")
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .messages;
        assert!(history.is_empty());
        let first = vec![Message::user("hi"), Message::assistant("hello")];
        store
            .record_turn("trip", "openai", &history, &result("completed", &first, 10))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut second = first.clone();
        second.extend([Message::user("again"), Message::assistant("still here")]);
        store
            .record_turn("trip", "openai", &first, &result("completed", &second, 20))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut failed = second.clone();
        failed.push(Message::user("this one failed"));
        store
            .record_turn("trip", "openai", &second, &result("error", &failed, 5))
            .await
            .unwrap_or_else(|e| panic!("{e}"));

        let shown = store
            .show("trip")
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("stored"));
        assert_eq!(shown.messages, second, "each message once, none of the failed turn");
        assert_eq!(shown.usage.input_tokens, 35, "the failed turn's usage counts");
        assert!((shown.cost_usd - 1.5).abs() < 1e-9);
        assert_eq!(
            (shown.provider.as_str(), shown.model.as_str()),
            ("openai", "gpt-4o-mini")
        );

        let unrelated = result("completed", &[Message::user("another conversation")], 1);
        let refused = store.record_turn("trip", "openai", &second, &unrelated).await;
        assert!(
            refused.is_err_and(|e| e.to_string().contains("does not continue the stored session `trip`")),
            "a result that does not continue the history is not stored as if it did"
        );
    }

    #[tokio::test]
    async fn a_run_that_compacted_the_conversation_leaves_its_summary_in_the_session() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = store(dir.path()).await;
        let old = vec![
            Message::user("one"),
            Message::assistant("1"),
            Message::user("two"),
            Message::assistant("2"),
        ];
        store.load_or_create("trip").await.unwrap_or_else(|e| panic!("{e}"));
        store
            .record_turn("trip", "llama", &[], &result("completed", &old, 1))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let history = store
            .load_or_create("trip")
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .messages;

        // The run replaced the first turn by a summary, then added its own.
        let summary = format!("{}The user counted to one.", agent_runner::context::SUMMARY_PREFIX);
        let mut messages = vec![Message::system(summary.clone())];
        messages.extend(old[2..].iter().cloned());
        messages.extend([Message::user("three"), Message::assistant("3")]);
        let mut compacted = result("completed", &messages, 1);
        compacted.compactions = vec![
            serde_json::from_value(json!({
                "trigger": "threshold", "iteration": 1, "estimated_tokens_before": 900,
                "estimated_tokens_after": 300, "elided_results": 0, "elided_bytes": 0,
                "replaced_messages": 2, "summary": summary, "summary_calls": 1,
            }))
            .unwrap_or_else(|e| panic!("{e}")),
        ];
        store
            .record_turn("trip", "llama", &history, &compacted)
            .await
            .unwrap_or_else(|e| panic!("{e}"));

        let context = store.load_or_create("trip").await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(context.messages, messages, "the next run starts from the summary");
        assert_eq!(context.summarised, 2);
        let shown = store
            .show("trip")
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("stored"));
        assert_eq!(shown.messages.len(), 6, "the transcript keeps every message");
        assert_eq!(shown.messages[..4], old[..]);
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn reset_empties_and_delete_removes_a_session() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = store(dir.path()).await;
        let turn = vec![Message::user("hi"), Message::assistant("hello")];
        store.load_or_create("trip").await.unwrap_or_else(|e| panic!("{e}"));
        store
            .record_turn("trip", "openai", &[], &result("completed", &turn, 1))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        store.reset("trip").await.unwrap_or_else(|e| panic!("{e}"));
        let shown = store
            .show("trip")
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("kept"));
        assert!(shown.messages.is_empty());
        assert_eq!(store.list().await.unwrap_or_default().len(), 1);

        let held = store.lock("trip", false, || {}).unwrap_or_else(|e| panic!("{e}"));
        let refused = store
            .delete("trip")
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            refused.contains("`trip` is in use"),
            "a held session is not deleted: {refused}"
        );
        drop(held);
        store.delete("trip").await.unwrap_or_else(|e| panic!("{e}"));
        let again = store
            .delete("trip")
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(again.contains("no session named `trip`"), "{again}");
        assert!(store.list().await.unwrap_or_default().is_empty());
    }

    #[tokio::test]
    async fn a_json_file_is_imported_once_and_a_name_taken_by_another_conversation_is_left_alone() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let session = |text: &str| {
            json!({"name": "x", "created_at": "2026-11-20T09:15:02.123Z", "updated_at": "2026-11-20T09:15:02.123Z",
                   "messages": [{"role": "user", "content": text}]})
            .to_string()
        };
        std::fs::write(dir.path().join("trip.json"), session("to Rome")).unwrap_or_else(|e| panic!("{e}"));
        let conversations: Arc<dyn ConversationStore> = Arc::new(InMemoryStore::new());
        let store = SessionStore::with_store(dir.path(), Arc::clone(&conversations))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(dir.path().join("imported/trip.json").is_file());

        // The same file again (copied back): already there, moved aside again.
        std::fs::write(dir.path().join("trip.json"), session("to Rome")).unwrap_or_else(|e| panic!("{e}"));
        let report = import_json_sessions(dir.path(), conversations.as_ref())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(report.imported, ["trip"]);
        assert!(dir.path().join("imported/trip.2.json").is_file());

        // A different conversation under a taken name stays in place.
        std::fs::write(dir.path().join("trip.json"), session("to Oslo")).unwrap_or_else(|e| panic!("{e}"));
        let report = import_json_sessions(dir.path(), conversations.as_ref())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(report.imported.is_empty());
        assert!(
            report.skipped[0]
                .1
                .contains("already has a different session named `trip`")
        );
        assert!(dir.path().join("trip.json").is_file());
        let shown = store
            .show("trip")
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("stored"));
        assert_eq!(shown.messages, [Message::user("to Rome")]);
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
}
