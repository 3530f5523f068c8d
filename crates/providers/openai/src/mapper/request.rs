//! `ChatRequest` -> Chat Completions request body.
//!
//! Every wire struct here borrows from the request; the body is serialised
//! straight into one byte buffer without building a `serde_json::Value`.

use std::fmt;

use agent_core::{AssistantMessage, ChatRequest, LlmError, Message, ResponseFormat, ToolChoice, ToolDefinition};
use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::media::{ToolMedia, UserWithMedia, check_attachments};
use super::{BodyOptions, MaxTokensField, SystemRole};

/// Serialises `request` as a Chat Completions body (JSON bytes).
///
/// - the system prompt becomes the first message, with the configured role;
/// - assistant tool calls carry their arguments as a JSON *string* (the raw
///   text unchanged when the model produced malformed JSON);
/// - failed tool results are prefixed with `Error: ` so the model sees that
///   the call failed;
/// - `tool_choice` and `parallel_tool_calls` are sent only with tools;
/// - the token limit goes in `max_completion_tokens` or `max_tokens`, as configured;
/// - a user message with attachments has `content` as an array of parts
///   (its text, then an `image_url`, `file`, `input_audio` or `text` part
///   per attachment); the media of tool results go in a user message right
///   after that round's tool messages, which take text only (see the
///   `media` module of this mapper). A message without attachments is
///   written as before, its `content` a string.
///
/// Fails for values JSON cannot carry (a non-finite temperature) and, with
/// an [`UnsupportedInput`](agent_core::LlmErrorKind::UnsupportedInput)
/// error, for an attachment that cannot be sent: larger than
/// [`BodyOptions::media_limits`], of a kind or form Chat Completions does
/// not take (audio other than WAV or MP3, a document or recording by URL),
/// or whose bytes a session store did not load.
pub fn build_request_body(request: &ChatRequest, options: &BodyOptions) -> Result<Vec<u8>, LlmError> {
    if let Some(temperature) = request.temperature
        && !temperature.is_finite()
    {
        return Err(LlmError::invalid_request(format!(
            "temperature must be a finite number, got {temperature}"
        )));
    }
    check_attachments(&request.messages, &options.media_limits, &options.provider)?;
    let has_tools = !request.tools.is_empty();
    let (max_completion_tokens, max_tokens) = match options.max_tokens_field {
        MaxTokensField::MaxCompletionTokens => (request.max_tokens, None),
        MaxTokensField::MaxTokens => (None, request.max_tokens),
    };
    let body = Body {
        model: request.model.as_deref().unwrap_or(&options.model),
        messages: Messages {
            system: request.system.as_deref(),
            system_role: options.system_role,
            history: &request.messages,
            send_reasoning_content: options.send_reasoning_content,
            provider: &options.provider,
        },
        tools: has_tools.then_some(Tools(&request.tools)),
        tool_choice: has_tools.then_some(WireToolChoice(&request.tool_choice)),
        parallel_tool_calls: request.parallel_tool_calls.filter(|_| has_tools),
        max_completion_tokens,
        max_tokens,
        temperature: request.temperature,
        stop: &request.stop,
        response_format: request.response_format.as_ref().map(WireResponseFormat),
        stream: options.stream,
        stream_options: (options.stream && options.stream_usage).then_some(StreamOptions { include_usage: true }),
    };
    let mut out = Vec::with_capacity(estimate_size(request));
    serde_json::to_writer(&mut out, &body)
        .map_err(|error| LlmError::invalid_request(format!("the request cannot be encoded as JSON: {error}")))?;
    Ok(out)
}

/// A guess at the body size, so the buffer rarely grows.
fn estimate_size(request: &ChatRequest) -> usize {
    let text: usize = request
        .messages
        .iter()
        .map(|message| match message {
            Message::System { content } | Message::User { content, .. } => content.len() + 48,
            Message::Assistant(assistant) => {
                assistant.content.len()
                    + 48
                    + assistant
                        .tool_calls
                        .iter()
                        .map(|call| call.id.len() + call.name.len() + 160)
                        .sum::<usize>()
            }
            Message::Tool(result) => result.content.len() + result.call_id.len() + 64,
        })
        .sum();
    // Inline bytes go as base64 (4 characters for 3 bytes).
    let media: usize = request
        .messages
        .iter()
        .flat_map(Message::attachments)
        .map(|attachment| attachment.bytes().map_or(256, |bytes| bytes.len() / 3 * 4 + 256))
        .sum();
    let tools = request.tools.len() * 512;
    let system = request.system.as_ref().map_or(0, String::len);
    let total = 256 + text + tools + system + media;
    // Escapes make JSON a little longer than its text.
    total + total / 8
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Messages<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Tools<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<WireResponseFormat<'a>>,
    #[serde(skip_serializing_if = "is_false")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_false(value: &bool) -> bool {
    !*value
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// The system prompt followed by the conversation.
struct Messages<'a> {
    system: Option<&'a str>,
    system_role: SystemRole,
    history: &'a [Message],
    send_reasoning_content: bool,
    /// The provider named in errors.
    provider: &'a str,
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let has_media = self.history.iter().any(|message| !message.attachments().is_empty());
        // One more message per round of tool results (a run of tool
        // messages) whose results carry media.
        let media_messages = if has_media {
            self.history
                .split(|message| !matches!(message, Message::Tool(_)))
                .filter(|round| ToolMedia::has_media(round))
                .count()
        } else {
            0
        };
        let len = self.history.len() + usize::from(self.system.is_some()) + media_messages;
        let mut seq = serializer.serialize_seq(Some(len))?;
        if let Some(system) = self.system {
            seq.serialize_element(&TextMessage {
                role: self.system_role.as_str(),
                content: system,
            })?;
        }
        let mut round_start = 0;
        for (index, message) in self.history.iter().enumerate() {
            match message {
                Message::System { content } => seq.serialize_element(&TextMessage {
                    role: self.system_role.as_str(),
                    content,
                })?,
                Message::User { content, attachments } if attachments.is_empty() => {
                    seq.serialize_element(&TextMessage { role: "user", content })?;
                }
                Message::User { content, attachments } => seq.serialize_element(&UserWithMedia {
                    content,
                    attachments,
                    provider: self.provider,
                })?,
                Message::Assistant(assistant) => seq.serialize_element(&WireAssistant {
                    message: assistant,
                    send_reasoning_content: self.send_reasoning_content,
                })?,
                Message::Tool(result) => {
                    seq.serialize_element(&WireToolMessage {
                        role: "tool",
                        tool_call_id: &result.call_id,
                        content: ToolContent {
                            content: &result.content,
                            is_error: result.is_error,
                        },
                    })?;
                    if index == 0 || !matches!(self.history[index - 1], Message::Tool(_)) {
                        round_start = index;
                    }
                    let round_ends = !matches!(self.history.get(index + 1), Some(Message::Tool(_)));
                    let round = &self.history[round_start..=index];
                    if has_media && round_ends && ToolMedia::has_media(round) {
                        seq.serialize_element(&ToolMedia {
                            round,
                            provider: self.provider,
                        })?;
                    }
                }
            }
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct TextMessage<'a> {
    role: &'a str,
    content: &'a str,
}

struct WireAssistant<'a> {
    message: &'a AssistantMessage,
    send_reasoning_content: bool,
}

impl Serialize for WireAssistant<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let message = self.message;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("role", "assistant")?;
        // Content may be left out only when the turn calls tools; a `null`
        // would not validate against the published schema's `nullable` quirk.
        if !message.content.is_empty() || message.tool_calls.is_empty() {
            map.serialize_entry("content", &message.content)?;
        }
        if self.send_reasoning_content {
            let mut reasoning = message
                .reasoning
                .iter()
                .filter(|block| !block.text.is_empty())
                .peekable();
            if reasoning.peek().is_some() {
                map.serialize_entry("reasoning_content", &JoinedReasoning(message))?;
            }
        }
        if !message.tool_calls.is_empty() {
            map.serialize_entry("tool_calls", &WireToolCalls(message))?;
        }
        map.end()
    }
}

/// The reasoning blocks' text, joined, written without an intermediate String.
struct JoinedReasoning<'a>(&'a AssistantMessage);

impl Serialize for JoinedReasoning<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl fmt::Display for JoinedReasoning<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for block in &self.0.reasoning {
            f.write_str(&block.text)?;
        }
        Ok(())
    }
}

struct WireToolCalls<'a>(&'a AssistantMessage);

impl Serialize for WireToolCalls<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.tool_calls.len()))?;
        for call in &self.0.tool_calls {
            seq.serialize_element(&WireToolCall {
                id: &call.id,
                kind: "function",
                function: WireFunctionCall {
                    name: &call.name,
                    arguments: match &call.raw_arguments {
                        Some(raw) => Arguments::Raw(raw),
                        None => Arguments::Json(&call.arguments),
                    },
                },
            })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: Arguments<'a>,
}

/// Tool-call arguments, always a JSON string on the wire.
enum Arguments<'a> {
    /// The model's own text, sent back unchanged.
    Raw(&'a str),
    /// Well-formed arguments, written as compact JSON text inside a string.
    Json(&'a Value),
}

impl Serialize for Arguments<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Raw(raw) => serializer.serialize_str(raw),
            // `Value`'s Display is compact JSON; collect_str escapes it into
            // the output as it is written, with no intermediate String.
            Self::Json(value) => serializer.collect_str(value),
        }
    }
}

#[derive(Serialize)]
struct WireToolMessage<'a> {
    role: &'static str,
    tool_call_id: &'a str,
    content: ToolContent<'a>,
}

/// A tool result's text; failures are prefixed so the model sees the call failed.
struct ToolContent<'a> {
    content: &'a str,
    is_error: bool,
}

impl Serialize for ToolContent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let already_says_so = self
            .content
            .get(..5)
            .is_some_and(|start| start.eq_ignore_ascii_case("error"));
        if self.is_error && !already_says_so {
            serializer.collect_str(&format_args!("Error: {}", self.content))
        } else {
            serializer.serialize_str(self.content)
        }
    }
}

struct Tools<'a>(&'a [ToolDefinition]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for tool in self.0 {
            seq.serialize_element(&WireTool {
                kind: "function",
                function: WireFunction {
                    name: &tool.name,
                    description: Some(tool.description.as_str()).filter(|d| !d.is_empty()),
                    parameters: Some(&*tool.input_schema).filter(|schema| !schema.is_null()),
                },
            })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<&'a Value>,
}

struct WireToolChoice<'a>(&'a ToolChoice);

impl Serialize for WireToolChoice<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            ToolChoice::Auto => serializer.serialize_str("auto"),
            ToolChoice::None => serializer.serialize_str("none"),
            ToolChoice::Required => serializer.serialize_str("required"),
            ToolChoice::Tool { name } => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("type", "function")?;
                map.serialize_entry("function", &NameOnly { name })?;
                map.end()
            }
        }
    }
}

#[derive(Serialize)]
struct NameOnly<'a> {
    name: &'a str,
}

struct WireResponseFormat<'a>(&'a ResponseFormat);

impl Serialize for WireResponseFormat<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let format = self.0;
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("type", "json_schema")?;
        map.serialize_entry(
            "json_schema",
            &JsonSchemaFormat {
                name: if format.name.is_empty() {
                    "response"
                } else {
                    &format.name
                },
                schema: &format.schema,
                strict: format.strict,
            },
        )?;
        map.end()
    }
}

#[derive(Serialize)]
struct JsonSchemaFormat<'a> {
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}
