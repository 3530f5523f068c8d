//! The `/api/chat` response shapes (one non-streamed reply, or one NDJSON
//! line of a stream), read into borrowing structs.

use agent_http::error::snippet;
use std::borrow::Cow;
use std::fmt::Write as _;

use agent_core::{LlmError, LlmErrorKind, ReasoningBlock, StopReason, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

/// One reply object, or one line of a stream.
#[derive(Debug, Deserialize)]
pub(crate) struct WireChunk<'a> {
    #[serde(borrow, default)]
    pub model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub created_at: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub message: Option<WireMessage<'a>>,
    #[serde(default)]
    pub done: bool,
    #[serde(borrow, default)]
    pub done_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    pub prompt_eval_count: Option<u64>,
    #[serde(default)]
    pub eval_count: Option<u64>,
    /// `{"error": "..."}`: Ollama reports failures as a plain string.
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireMessage<'a> {
    #[serde(borrow, default)]
    pub content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub thinking: Option<Cow<'a, str>>,
    #[serde(default)]
    pub tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireToolCall {
    /// Newer servers give an id; older ones do not.
    #[serde(default)]
    pub id: Option<String>,
    pub function: WireFunction,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireFunction {
    pub name: String,
    /// An object on the wire; a string is tolerated (some model templates).
    #[serde(default)]
    pub arguments: Option<Value>,
}

impl WireChunk<'_> {
    /// Parses one reply object or stream line.
    pub(crate) fn parse(text: &str) -> Result<WireChunk<'_>, LlmError> {
        serde_json::from_str(text).map_err(|error| {
            LlmError::decode(format!(
                "Ollama sent a reply that is not the expected JSON ({error}): {}",
                snippet(text.as_bytes())
            ))
        })
    }

    /// The error this object carries, if it is an `{"error": ...}` object.
    pub(crate) fn error(&self) -> Option<LlmError> {
        let error = self.error.as_ref()?;
        let message = match error {
            Value::String(text) => text.clone(),
            other => other
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| other.to_string(), str::to_owned),
        };
        let lower = message.to_ascii_lowercase();
        let kind = if lower.contains("context") && (lower.contains("length") || lower.contains("window")) {
            LlmErrorKind::ContextLength
        } else if lower.contains("not found") {
            LlmErrorKind::InvalidRequest
        } else {
            LlmErrorKind::Server
        };
        Some(LlmError::new(kind, message))
    }

    /// Token counts: `prompt_eval_count` in, `eval_count` out. Ollama
    /// reports no cache figures (a prompt prefix reused from its KV cache
    /// is simply not counted as evaluated).
    pub(crate) fn usage(&self) -> Usage {
        Usage::new(self.prompt_eval_count.unwrap_or(0), self.eval_count.unwrap_or(0))
    }
}

/// The stop reason of a finished reply.
pub(crate) fn stop_reason(done_reason: Option<&str>, has_tool_calls: bool) -> StopReason {
    match done_reason {
        Some("length") => StopReason::MaxTokens,
        _ if has_tool_calls => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    }
}

/// A [`ToolCall`] from the wire, with `id` or a synthesised stable one.
pub(crate) fn tool_call(call: WireToolCall, created_at: Option<&str>, index: usize) -> ToolCall {
    let WireToolCall { id, function } = call;
    let WireFunction { name, arguments } = function;
    let (arguments, text) = match arguments {
        None | Some(Value::Null) => (Value::Object(serde_json::Map::new()), None),
        Some(Value::String(text)) => (Value::Null, Some(text)),
        Some(value) => (value, None),
    };
    let id = id.filter(|id| !id.is_empty()).unwrap_or_else(|| {
        let arguments_text = text.clone().unwrap_or_else(|| arguments.to_string());
        synthesised_id(created_at, index, &name, &arguments_text)
    });
    match text {
        Some(text) => ToolCall::from_argument_text(id, name, &text),
        None => ToolCall::new(id, name, arguments),
    }
}

/// A stable call id for a server that gives none: a hash of the reply's
/// timestamp, the call's position, name and arguments, so the same reply
/// always maps to the same ids and two calls of one reply never share one.
pub(crate) fn synthesised_id(created_at: Option<&str>, index: usize, name: &str, arguments: &str) -> String {
    // FNV-1a, 64 bits: tiny, stable across platforms and releases.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        hash ^= 0xff;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    };
    feed(created_at.unwrap_or_default().as_bytes());
    feed(&index.to_le_bytes());
    feed(name.as_bytes());
    feed(arguments.as_bytes());
    let mut id = String::with_capacity(21);
    id.push_str("call_");
    let _ = write!(id, "{hash:016x}");
    id
}

/// The reasoning block for a reply's `thinking` text.
pub(crate) fn reasoning(thinking: &str) -> ReasoningBlock {
    ReasoningBlock {
        text: thinking.to_owned(),
        ..ReasoningBlock::default()
    }
}
