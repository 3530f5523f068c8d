//! The conversation as Anthropic wants it: alternating user and assistant
//! turns of content blocks, borrowed from the request, and how each block
//! is written.

use std::borrow::Cow;

use agent_core::{AssistantMessage, Attachment, LlmError, MediaLimits, Message, ToolCall, ToolResult};
use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::RAW_ARGUMENTS_KEY;
use super::media::{MediaBlock, Place, media_block};

/// Whether `text` is empty or only whitespace (Anthropic rejects such text blocks).
pub(super) fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// `cache_control` of a breakpoint.
#[derive(Serialize)]
pub(super) struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

pub(super) const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Assistant,
}

/// One message on the wire: a run of same-role messages merged.
pub(super) struct Turn<'a> {
    role: Role,
    /// `tool_result` blocks, which must open a user message.
    results: Vec<Block<'a>>,
    /// Every other block, in order.
    blocks: Vec<Block<'a>>,
}

impl<'a> Turn<'a> {
    /// The block a prompt-cache breakpoint goes on: the last one that may
    /// carry `cache_control` (thinking blocks may not).
    pub(super) fn cache_target(&mut self) -> Option<&mut Block<'a>> {
        let results = &mut self.results;
        self.blocks
            .iter_mut()
            .rev()
            .find(|block| !block.kind.is_thinking())
            .or_else(|| results.last_mut())
    }
}

pub(super) struct Block<'a> {
    pub(super) kind: BlockKind<'a>,
    pub(super) cache: bool,
}

pub(super) enum BlockKind<'a> {
    Text(Cow<'a, str>),
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking(&'a str),
    ToolUse(&'a ToolCall),
    /// A tool result and the attachments it returned (its content is then
    /// an array: the text, then the attachments' blocks).
    ToolResult {
        result: &'a ToolResult,
        media: Vec<MediaBlock<'a>>,
    },
    /// An image or a document of a user message.
    Media(MediaBlock<'a>),
}

impl BlockKind<'_> {
    fn is_thinking(&self) -> bool {
        matches!(self, Self::Thinking { .. } | Self::RedactedThinking(_))
    }
}

/// Groups the history (after the leading system messages) into turns,
/// merging consecutive messages of the same role and dropping empty ones.
/// A user message's attachments come before its text (Anthropic reads
/// images best placed before the question); a tool result's after its text.
///
/// Fails for an attachment Anthropic cannot take (see [`media_block`]).
pub(super) fn group_turns<'a>(messages: &'a [Message], limits: &MediaLimits) -> Result<Vec<Turn<'a>>, LlmError> {
    let mut turns: Vec<Turn<'_>> = Vec::with_capacity(messages.len());
    for message in messages {
        let (role, results, blocks) = match message {
            Message::System { content } if !is_blank(content) => (
                Role::User,
                Vec::new(),
                vec![text(Cow::Owned(format!("<system>{content}</system>")))],
            ),
            Message::System { .. } => continue,
            Message::User { content, attachments } => {
                let mut blocks = Vec::with_capacity(attachments.len() + 1);
                for block in media_blocks(attachments, Place::UserMessage, limits)? {
                    blocks.push(Block {
                        kind: BlockKind::Media(block),
                        cache: false,
                    });
                }
                if !is_blank(content) {
                    blocks.push(text(Cow::Borrowed(content)));
                }
                (Role::User, Vec::new(), blocks)
            }
            Message::Assistant(assistant) => (Role::Assistant, Vec::new(), assistant_blocks(assistant)),
            Message::Tool(result) => (
                Role::User,
                vec![Block {
                    kind: BlockKind::ToolResult {
                        result,
                        media: media_blocks(&result.attachments, Place::ToolResult, limits)?,
                    },
                    cache: false,
                }],
                Vec::new(),
            ),
        };
        if results.is_empty() && blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => {
                last.results.extend(results);
                last.blocks.extend(blocks);
            }
            _ => turns.push(Turn { role, results, blocks }),
        }
    }
    Ok(turns)
}

fn media_blocks<'a>(
    attachments: &'a [Attachment],
    place: Place,
    limits: &MediaLimits,
) -> Result<Vec<MediaBlock<'a>>, LlmError> {
    attachments
        .iter()
        .map(|attachment| media_block(attachment, place, limits))
        .collect()
}

fn text(text: Cow<'_, str>) -> Block<'_> {
    Block {
        kind: BlockKind::Text(text),
        cache: false,
    }
}

/// Reasoning first (only what Anthropic itself produced), then the text,
/// then the tool calls.
fn assistant_blocks(assistant: &AssistantMessage) -> Vec<Block<'_>> {
    let mut blocks = Vec::with_capacity(assistant.reasoning.len() + assistant.tool_calls.len() + 1);
    for reasoning in &assistant.reasoning {
        if !reasoning.is_from(crate::config::PROVIDER_NAME) {
            // Another provider's signature would be rejected.
            continue;
        }
        let kind = match (&reasoning.signature, &reasoning.data) {
            (Some(signature), _) if !signature.is_empty() => BlockKind::Thinking {
                thinking: &reasoning.text,
                signature,
            },
            (_, Some(data)) => match redacted_data(data) {
                Some(data) => BlockKind::RedactedThinking(data),
                None => continue,
            },
            _ => continue,
        };
        blocks.push(Block { kind, cache: false });
    }
    if !is_blank(&assistant.content) {
        blocks.push(text(Cow::Borrowed(&assistant.content)));
    }
    blocks.extend(assistant.tool_calls.iter().map(|call| Block {
        kind: BlockKind::ToolUse(call),
        cache: false,
    }));
    blocks
}

/// The payload of a reasoning block that holds an Anthropic
/// `redacted_thinking` block (as the response mapper stores it).
fn redacted_data(data: &Value) -> Option<&str> {
    (data.get("type")?.as_str()? == "redacted_thinking")
        .then(|| data.get("data")?.as_str())
        .flatten()
}

impl Serialize for Turn<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry(
            "role",
            match self.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            },
        )?;
        match (self.results.as_slice(), self.blocks.as_slice()) {
            (
                [],
                [
                    Block {
                        kind: BlockKind::Text(text),
                        cache: false,
                    },
                ],
            ) => map.serialize_entry("content", text)?,
            _ => map.serialize_entry("content", &Content(self))?,
        }
        map.end()
    }
}

struct Content<'a>(&'a Turn<'a>);

impl Serialize for Content<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let turn = self.0;
        let mut seq = serializer.serialize_seq(Some(turn.results.len() + turn.blocks.len()))?;
        for block in turn.results.iter().chain(&turn.blocks) {
            seq.serialize_element(block)?;
        }
        seq.end()
    }
}

impl Serialize for Block<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match &self.kind {
            BlockKind::Text(text) => {
                map.serialize_entry("type", "text")?;
                map.serialize_entry("text", text)?;
            }
            BlockKind::Thinking { thinking, signature } => {
                map.serialize_entry("type", "thinking")?;
                map.serialize_entry("thinking", thinking)?;
                map.serialize_entry("signature", signature)?;
            }
            BlockKind::RedactedThinking(data) => {
                map.serialize_entry("type", "redacted_thinking")?;
                map.serialize_entry("data", data)?;
            }
            BlockKind::ToolUse(call) => {
                map.serialize_entry("type", "tool_use")?;
                map.serialize_entry("id", &call.id)?;
                map.serialize_entry("name", &call.name)?;
                map.serialize_entry("input", &Input(call))?;
            }
            BlockKind::ToolResult { result, media } => {
                map.serialize_entry("type", "tool_result")?;
                map.serialize_entry("tool_use_id", &result.call_id)?;
                if !media.is_empty() {
                    map.serialize_entry("content", &ResultContent { result, media })?;
                } else if !result.content.is_empty() {
                    map.serialize_entry("content", &result.content)?;
                }
                if result.is_error {
                    map.serialize_entry("is_error", &true)?;
                }
            }
            BlockKind::Media(block) => block.write(&mut map)?,
        }
        if self.cache {
            map.serialize_entry("cache_control", &EPHEMERAL)?;
        }
        map.end()
    }
}

/// A tool result's content with attachments: its text as a text block
/// (unless blank: Anthropic rejects empty text blocks), then one block per
/// attachment.
struct ResultContent<'a> {
    result: &'a ToolResult,
    media: &'a [MediaBlock<'a>],
}

impl Serialize for ResultContent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        if !is_blank(&self.result.content) {
            seq.serialize_element(&Block {
                kind: BlockKind::Text(Cow::Borrowed(&self.result.content)),
                cache: false,
            })?;
        }
        for block in self.media {
            seq.serialize_element(&MediaElement(block))?;
        }
        seq.end()
    }
}

/// One attachment's block inside a tool result (never a cache breakpoint:
/// the breakpoint goes on the `tool_result` itself).
struct MediaElement<'a>(&'a MediaBlock<'a>);

impl Serialize for MediaElement<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        self.0.write(&mut map)?;
        map.end()
    }
}

/// A tool call's `input`, always a JSON object.
struct Input<'a>(&'a ToolCall);

impl Serialize for Input<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let call = self.0;
        match (&call.raw_arguments, &call.arguments) {
            (None, object @ Value::Object(_)) => object.serialize(serializer),
            (None, Value::Null) => serializer.serialize_map(Some(0))?.end(),
            (Some(raw), _) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry(RAW_ARGUMENTS_KEY, raw)?;
                map.end()
            }
            (None, other) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry(RAW_ARGUMENTS_KEY, &other.to_string())?;
                map.end()
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agent_core::{ChatRequest, ReasoningBlock};
    use serde_json::json;

    use super::*;
    use crate::mapper::{BodyOptions, build_request_body};

    fn body(request: &ChatRequest) -> Value {
        serde_json::from_slice(&build_request_body(request, &BodyOptions::new("claude-sonnet-4-5")).unwrap()).unwrap()
    }

    #[test]
    fn attachments_go_before_a_questions_text_and_after_a_results_text() {
        let png = agent_testing::media::png();
        let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                           "data": png.base64().unwrap()}});
        let result = ToolResult {
            attachments: vec![png.clone()],
            ..ToolResult::success("a", "t", "chart")
        };
        let bare = ToolResult {
            attachments: vec![png.clone()],
            ..ToolResult::error("b", "t", " ")
        };
        let request = ChatRequest::new(vec![
            Message::user_with("What is it?", vec![png.clone()]),
            Message::Assistant(AssistantMessage::with_tool_calls(
                "",
                vec![ToolCall::new("a", "t", json!({})), ToolCall::new("b", "t", json!({}))],
            )),
            Message::tool(result),
            Message::tool(bare),
            Message::user_with("", vec![png]),
        ]);
        let body = body(&request);
        assert_eq!(
            body["messages"][0],
            json!({"role": "user", "content": [image, {"type": "text", "text": "What is it?"}]})
        );
        assert_eq!(
            body["messages"][2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "chart"}, image]},
                {"type": "tool_result", "tool_use_id": "b", "content": [image], "is_error": true},
                image
            ]),
            "a blank text sends no text block; a message with only an attachment keeps it"
        );
    }

    #[test]
    fn leading_system_messages_join_the_system_prompt_and_later_ones_stay_in_place() {
        let request = ChatRequest::new(vec![
            Message::system("Be brief."),
            Message::user("Hi"),
            Message::assistant("Hello."),
            Message::system("Answer in French."),
            Message::user("Thanks"),
        ])
        .with_system("You help.");
        let body = body(&request);
        assert_eq!(body["system"], "You help.\n\nBe brief.");
        assert_eq!(
            body["messages"][2],
            json!({"role": "user", "content": [
                {"type": "text", "text": "<system>Answer in French.</system>"},
                {"type": "text", "text": "Thanks"}
            ]})
        );
        assert_eq!(body["messages"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn tool_results_come_first_in_a_merged_user_turn_and_errors_are_flagged() {
        let request = ChatRequest::new(vec![
            Message::user("go"),
            Message::Assistant(AssistantMessage::with_tool_calls(
                "",
                vec![ToolCall::new("a", "t", json!({})), ToolCall::new("b", "t", json!({}))],
            )),
            Message::system("Note this."),
            Message::tool(ToolResult::success("a", "t", "ok")),
            Message::tool(ToolResult::error("b", "t", "boom")),
            Message::user("and?"),
        ]);
        let body = body(&request);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(
            messages[1]["content"],
            json!([{"type": "tool_use", "id": "a", "name": "t", "input": {}},
                   {"type": "tool_use", "id": "b", "name": "t", "input": {}}]),
            "no empty text block before the calls"
        );
        assert_eq!(
            messages[2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "a", "content": "ok"},
                {"type": "tool_result", "tool_use_id": "b", "content": "boom", "is_error": true},
                {"type": "text", "text": "<system>Note this.</system>"},
                {"type": "text", "text": "and?"}
            ])
        );
    }

    #[test]
    fn blank_messages_never_become_blocks() {
        let request = ChatRequest::new(vec![
            Message::user("one"),
            Message::assistant("  "),
            Message::user(""),
            Message::user("two"),
            Message::tool(ToolResult::success("x", "t", "")),
        ])
        .with_system(" ");
        let body = body(&request);
        assert!(body.get("system").is_none());
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "x"},
                {"type": "text", "text": "one"},
                {"type": "text", "text": "two"}
            ]}])
        );
    }

    #[test]
    fn arguments_are_always_an_object() {
        let calls = vec![
            ToolCall::from_argument_text("a", "t", "{\"city\": Par"),
            ToolCall::new("b", "t", Value::Null),
            ToolCall::new("c", "t", json!([1, 2])),
            ToolCall::new("d", "t", json!({"x": 1})),
        ];
        let request = ChatRequest::new(vec![Message::Assistant(AssistantMessage::with_tool_calls("", calls))]);
        let inputs: Vec<Value> = body(&request)["messages"][0]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|block| block["input"].clone())
            .collect();
        assert_eq!(
            inputs,
            [
                json!({"_raw_arguments": "{\"city\": Par"}),
                json!({}),
                json!({"_raw_arguments": "[1,2]"}),
                json!({"x": 1})
            ]
        );
    }

    #[test]
    fn only_anthropic_reasoning_is_sent_back_first_in_its_turn() {
        let assistant = AssistantMessage {
            content: "Sure.".into(),
            tool_calls: vec![ToolCall::new("a", "t", json!({}))],
            reasoning: vec![
                ReasoningBlock {
                    text: "Let me think.".into(),
                    signature: Some("sig-1".into()),
                    provider: Some("anthropic".into()),
                    data: None,
                },
                ReasoningBlock {
                    data: Some(json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy"})),
                    ..ReasoningBlock::default()
                },
                ReasoningBlock {
                    text: "a Gemini thought".into(),
                    signature: Some("GEMINI_SIG".into()),
                    data: Some(json!({"gemini_part": "thought"})),
                    provider: Some("gcp.gemini".into()),
                },
                ReasoningBlock {
                    text: "unsigned, from another provider".into(),
                    ..ReasoningBlock::default()
                },
                ReasoningBlock {
                    data: Some(json!("opaque from elsewhere")),
                    ..ReasoningBlock::default()
                },
            ],
        };
        let body = body(&ChatRequest::new(vec![Message::Assistant(assistant)]));
        assert_eq!(
            body["messages"][0]["content"],
            json!([
                {"type": "thinking", "thinking": "Let me think.", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy"},
                {"type": "text", "text": "Sure."},
                {"type": "tool_use", "id": "a", "name": "t", "input": {}}
            ])
        );
    }
}
