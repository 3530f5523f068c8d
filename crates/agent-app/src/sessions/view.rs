//! What `agentry sessions show` and `sessions list` print: the shapes of
//! their `--json` output, which scripts rely on, and the transcript people
//! read.

use std::fmt::Write as _;

use agent_core::{Conversation, ConversationMeta, Message, Usage};
use serde::{Deserialize, Serialize};

/// A stored conversation as `agentry sessions show --json` prints it: every
/// stored message, including those a summary replaced in the model's context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// Its name.
    pub name: String,
    /// When it was created (RFC 3339, UTC).
    pub created_at: String,
    /// When a turn was last stored (RFC 3339, UTC).
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
    /// The conversation.
    pub messages: Vec<Message>,
}

impl Session {
    /// Number of user turns.
    pub fn turns(&self) -> usize {
        usize::try_from(agent_store::count_user_messages(&self.messages)).unwrap_or(usize::MAX)
    }

    /// The conversation as people read it.
    pub fn transcript(&self) -> String {
        let mut out = format!(
            "session {} · {} · {} · {} · ${:.6}\n",
            self.name,
            agent_console::count(self.turns() as u64, "turn"),
            if self.model.is_empty() {
                "no runs yet".to_owned()
            } else {
                format!("{}/{}", self.provider, self.model)
            },
            agent_console::count(self.usage.total_tokens(), "token"),
            self.cost_usd
        );
        for message in &self.messages {
            match message {
                Message::System { content } => {
                    let _ = writeln!(out, "system: {content}");
                }
                Message::User { content, .. } => {
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
                        agent_console::brief(&result.content, 200)
                    );
                }
            }
        }
        out
    }
}

impl From<Conversation> for Session {
    fn from(conversation: Conversation) -> Self {
        let meta = conversation.meta;
        Self {
            name: meta.name,
            created_at: meta.created_at,
            updated_at: meta.updated_at,
            provider: meta.provider,
            model: meta.model,
            usage: meta.usage,
            cost_usd: meta.cost_usd,
            messages: conversation.messages,
        }
    }
}

/// One line of `agentry sessions list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSummary {
    /// The name.
    pub name: String,
    /// When a turn was last stored.
    pub updated_at: String,
    /// User turns.
    pub turns: usize,
    /// Messages.
    pub messages: usize,
    /// A run was interrupted and can be continued with `agentry resume`.
    pub interrupted: bool,
}

impl From<ConversationMeta> for SessionSummary {
    fn from(meta: ConversationMeta) -> Self {
        Self {
            name: meta.name,
            updated_at: meta.updated_at,
            turns: usize::try_from(meta.user_turns).unwrap_or(usize::MAX),
            messages: usize::try_from(meta.message_count).unwrap_or(usize::MAX),
            interrupted: meta.has_checkpoint,
        }
    }
}
