//! Messages API stream events -> `StreamEvent`s: a small state machine over
//! the content blocks of one message.

use std::borrow::Cow;

use agent_core::{LlmError, StreamEvent};
use serde::Deserialize;
use serde_json::Value;

use super::response::redacted_block;
use agent_http::EventMapper;
use agent_http::LenientStr;

use agent_http::error::snippet;

use super::wire::{WireUsage, error_from_object, stop_reason};

/// Maps the `data` of each server-sent event of a streamed Messages API
/// reply to [`StreamEvent`]s. Pure: feed it the payloads in order, then
/// call [`finish`](Self::finish) when the body ends.
///
/// - `message_start` gives `Started` (model and id) and the initial usage;
/// - `text` blocks give `TextDelta`s; `thinking` blocks `ReasoningDelta`s
///   and a `ReasoningSignature` (so the accumulator keeps several thinking
///   blocks apart); a `redacted_thinking` block one `Reasoning` event;
/// - a `tool_use` block gives `ToolCallStart`, a `ToolCallDelta` per
///   `input_json_delta` fragment and `ToolCallEnd` at its
///   `content_block_stop`; calls are numbered 0, 1, … in order;
/// - `message_delta` gives `Usage`: its usage keys replace those of
///   `message_start` one by one, keys it leaves out keep their start value;
/// - `message_stop` ends any call still open (one cut by `max_tokens`) and
///   gives `Stop`;
/// - `ping`, unknown event types, and blocks or deltas of unknown types
///   (`server_tool_use`, `citations_delta`, …) are skipped;
/// - an `error` event becomes the matching [`LlmError`] (`overloaded_error`
///   is [`Overloaded`](agent_core::LlmErrorKind::Overloaded),
///   `rate_limit_error` [`RateLimited`](agent_core::LlmErrorKind::RateLimited), …).
///
/// A stream that ends before the `message_delta` with the stop reason is a
/// decode error naming the tool call that was cut off, if any, so a half
/// call is never returned.
///
/// ```
/// use agent_core::{StopReason, StreamEvent};
/// use agent_provider_anthropic::mapper::{EventMapper, StreamMapper};
///
/// let mut mapper = StreamMapper::new();
/// let mut events = Vec::new();
/// for data in [
///     r#"{"type":"message_start","message":{"id":"msg_1","model":"claude-sonnet-4-5","usage":{"input_tokens":9,"output_tokens":1}}}"#,
///     r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
///     r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
///     r#"{"type":"content_block_stop","index":0}"#,
///     r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}"#,
///     r#"{"type":"message_stop"}"#,
/// ] {
///     mapper.push(data, &mut events)?;
/// }
/// assert_eq!(events[1], StreamEvent::TextDelta { text: "Hi".into() });
/// assert_eq!(events.last(), Some(&StreamEvent::Stop { reason: StopReason::EndTurn }));
/// # Ok::<(), agent_core::LlmError>(())
/// ```
#[derive(Debug, Default)]
pub struct StreamMapper {
    blocks: Vec<Block>,
    calls: usize,
    usage: WireUsage,
    stop_reason: Option<String>,
    saw_delta: bool,
    events: usize,
    finished: bool,
}

#[derive(Debug)]
struct Block {
    wire_index: usize,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Text,
    Thinking,
    ToolUse(Call),
    /// A block this mapper does not map (redacted thinking, which is
    /// complete at its start, and unknown types).
    Other,
}

#[derive(Debug)]
struct Call {
    index: usize,
    id: String,
    name: String,
    /// A non-empty `input` given at the block's start, used if no fragment follows.
    initial: Option<String>,
    received: usize,
    ended: bool,
}

impl StreamMapper {
    /// A mapper at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the `message_delta` carrying the stop reason has arrived:
    /// from then on the reply is complete, even if the body breaks.
    pub fn saw_stop_reason(&self) -> bool {
        self.saw_delta
    }

    fn start_block(&mut self, wire_index: usize, block: StartBlock<'_>, out: &mut Vec<StreamEvent>) {
        let kind = match block.kind.as_str().unwrap_or_default() {
            "text" => {
                if let Some(text) = block.text.non_empty() {
                    out.push(StreamEvent::TextDelta { text: text.to_owned() });
                }
                Kind::Text
            }
            "thinking" => {
                if let Some(text) = block.thinking.non_empty() {
                    out.push(StreamEvent::ReasoningDelta { text: text.to_owned() });
                }
                if let Some(signature) = block.signature.non_empty() {
                    out.push(StreamEvent::ReasoningSignature {
                        signature: signature.to_owned(),
                    });
                }
                Kind::Thinking
            }
            "redacted_thinking" => {
                if let Some(data) = block.data.as_str() {
                    out.push(StreamEvent::Reasoning {
                        block: redacted_block(data),
                    });
                }
                Kind::Other
            }
            "tool_use" => {
                let index = self.calls;
                self.calls += 1;
                let id = block
                    .id
                    .non_empty()
                    .map_or_else(|| format!("toolu_{index}"), str::to_owned);
                let name = block.name.as_str().unwrap_or_default().to_owned();
                out.push(StreamEvent::ToolCallStart {
                    index,
                    id: id.clone(),
                    name: name.clone(),
                });
                let initial = match block.input {
                    Some(Value::Object(input)) if !input.is_empty() => Some(Value::Object(input).to_string()),
                    _ => None,
                };
                Kind::ToolUse(Call {
                    index,
                    id,
                    name,
                    initial,
                    received: 0,
                    ended: false,
                })
            }
            _ => Kind::Other,
        };
        self.blocks.push(Block { wire_index, kind });
    }

    fn delta(&mut self, wire_index: usize, delta: &Delta<'_>, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let Some(block) = self.block(wire_index) else {
            return Err(LlmError::decode(format!(
                "a content_block_delta arrived for block {wire_index}, which never started"
            )));
        };
        match (&mut block.kind, delta.kind.as_str().unwrap_or_default()) {
            (Kind::Text, "text_delta") => {
                if let Some(text) = delta.text.non_empty() {
                    out.push(StreamEvent::TextDelta { text: text.to_owned() });
                }
            }
            (Kind::Thinking, "thinking_delta") => {
                if let Some(text) = delta.thinking.non_empty() {
                    out.push(StreamEvent::ReasoningDelta { text: text.to_owned() });
                }
            }
            (Kind::Thinking, "signature_delta") => {
                if let Some(signature) = delta.signature.non_empty() {
                    out.push(StreamEvent::ReasoningSignature {
                        signature: signature.to_owned(),
                    });
                }
            }
            (Kind::ToolUse(call), "input_json_delta") if !call.ended => {
                if let Some(fragment) = delta.partial_json.non_empty() {
                    call.initial = None;
                    call.received += fragment.len();
                    out.push(StreamEvent::ToolCallDelta {
                        index: call.index,
                        arguments: fragment.to_owned(),
                    });
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The block with this wire index (nearly always the last one).
    fn block(&mut self, wire_index: usize) -> Option<&mut Block> {
        self.blocks
            .iter_mut()
            .rev()
            .find(|block| block.wire_index == wire_index)
    }

    fn stop(&mut self, out: &mut Vec<StreamEvent>) {
        if self.finished {
            return;
        }
        self.finished = true;
        for block in &mut self.blocks {
            if let Kind::ToolUse(call) = &mut block.kind {
                end(call, out);
            }
        }
        out.push(StreamEvent::Stop {
            reason: stop_reason(self.stop_reason.as_deref(), self.calls > 0),
        });
    }
}

/// Driven by `agent-http`'s [`map_events`](agent_http::map_events) in the client, and by hand in tests.
impl EventMapper for StreamMapper {
    /// Whether the stream has ended (`message_stop` arrived, or
    /// [`finish`](Self::finish) ran).
    fn is_finished(&self) -> bool {
        self.finished
    }

    /// Takes the `data` of one server-sent event and appends the events it
    /// implies to `out`. Events after the end are ignored.
    fn push(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.finished || data.trim().is_empty() {
            return Ok(());
        }
        let event: WireEvent<'_> = serde_json::from_str(data).map_err(|error| {
            if error.is_eof() {
                // The body ended (or the connection broke) inside this event.
                return LlmError::decode(format!(
                    "event {} was cut after {} bytes; {}",
                    self.events + 1,
                    data.len(),
                    self.truncation_message()
                ));
            }
            LlmError::decode(format!(
                "a stream event is not a Messages API event ({error}); it starts with {:?}",
                snippet(data.as_bytes())
            ))
        })?;
        self.events += 1;
        match event.kind.as_ref() {
            "message_start" => {
                let message = event.message.unwrap_or_default();
                if let Some(usage) = message.usage {
                    self.usage = usage;
                }
                out.push(StreamEvent::Started {
                    model: message.model.non_empty().map(str::to_owned),
                    id: message.id.non_empty().map(str::to_owned),
                });
            }
            "content_block_start" => {
                let index = event.index.unwrap_or(self.blocks.len());
                let block = event.content_block.unwrap_or_default();
                self.start_block(index, block, out);
            }
            "content_block_delta" => {
                let index = event.index.unwrap_or_default();
                if let Some(delta) = event.delta {
                    self.delta(index, &delta, out)?;
                }
            }
            "content_block_stop" => {
                if let Some(Kind::ToolUse(call)) = self.block(event.index.unwrap_or_default()).map(|b| &mut b.kind) {
                    end(call, out);
                }
            }
            "message_delta" => {
                if let Some(reason) = event.delta.as_ref().and_then(|delta| delta.stop_reason.non_empty()) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(usage) = &event.usage {
                    self.usage.merge(usage);
                }
                self.saw_delta = true;
                out.push(StreamEvent::Usage {
                    usage: self.usage.to_usage(),
                });
            }
            "message_stop" => self.stop(out),
            "error" => {
                let error = event.error.as_deref().unwrap_or(&Value::Null);
                let mut error = error_from_object(data.as_bytes(), error, event.request_id.as_deref());
                error.message = format!("the stream reported an error: {}", error.message);
                return Err(error);
            }
            // `ping` and whatever Anthropic adds later.
            _ => {}
        }
        Ok(())
    }

    /// Ends the stream: `Stop` if the stop reason arrived (a missing
    /// `message_stop` after it is forgiven), otherwise a decode error saying
    /// the stream was truncated, naming the tool call that was cut off.
    /// Calling it again does nothing.
    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.finished {
            return Ok(());
        }
        if !self.saw_delta {
            self.finished = true;
            return Err(LlmError::decode(self.truncation_message()));
        }
        self.stop(out);
        Ok(())
    }

    /// Why the stream is incomplete so far: which tool call would be cut
    /// off if it ended now. Used to explain a connection that broke.
    fn truncation_message(&self) -> String {
        let open = self.blocks.iter().rev().find_map(|block| match &block.kind {
            Kind::ToolUse(call) if !call.ended => Some(call),
            _ => None,
        });
        if let Some(call) = open {
            let discarded = match self.calls {
                1 => "the call was discarded".to_owned(),
                n => format!("all {n} tool calls of this reply were discarded"),
            };
            return format!(
                "the stream was truncated in the middle of tool call `{}` ({}, {} bytes of arguments received); \
                 {discarded}",
                call.name, call.id, call.received
            );
        }
        if self.events == 0 {
            "the stream ended before any event arrived".to_owned()
        } else {
            format!(
                "the stream was truncated after {} events, before the message_delta with the stop reason",
                self.events
            )
        }
    }

    /// A reply whose stop reason arrived is whole, even if `message_stop` never does.
    fn is_complete(&self) -> bool {
        self.saw_stop_reason()
    }
}

/// Emits `ToolCallEnd` for a call still open, with the start's `input` as
/// its arguments if no fragment came.
fn end(call: &mut Call, out: &mut Vec<StreamEvent>) {
    if call.ended {
        return;
    }
    call.ended = true;
    if let Some(initial) = call.initial.take() {
        out.push(StreamEvent::ToolCallDelta {
            index: call.index,
            arguments: initial,
        });
    }
    out.push(StreamEvent::ToolCallEnd { index: call.index });
}

#[derive(Deserialize)]
struct WireEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    content_block: Option<StartBlock<'a>>,
    #[serde(default, borrow)]
    message: Option<StartMessage<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Box<Value>>,
    #[serde(default)]
    request_id: Option<String>,
}

#[derive(Default, Deserialize)]
struct StartMessage<'a> {
    #[serde(default, borrow)]
    id: LenientStr<'a>,
    #[serde(default, borrow)]
    model: LenientStr<'a>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Default, Deserialize)]
struct StartBlock<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: LenientStr<'a>,
    #[serde(default, borrow)]
    text: LenientStr<'a>,
    #[serde(default, borrow)]
    thinking: LenientStr<'a>,
    #[serde(default, borrow)]
    signature: LenientStr<'a>,
    #[serde(default, borrow)]
    data: LenientStr<'a>,
    #[serde(default, borrow)]
    id: LenientStr<'a>,
    #[serde(default, borrow)]
    name: LenientStr<'a>,
    #[serde(default)]
    input: Option<Value>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: LenientStr<'a>,
    #[serde(default, borrow)]
    text: LenientStr<'a>,
    #[serde(default, borrow)]
    thinking: LenientStr<'a>,
    #[serde(default, borrow)]
    signature: LenientStr<'a>,
    #[serde(default, borrow)]
    partial_json: LenientStr<'a>,
    #[serde(default, borrow)]
    stop_reason: LenientStr<'a>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agent_core::{LlmErrorKind, ReasoningBlock, StopReason, StreamAccumulator, Usage};
    use serde_json::json;

    use super::*;

    fn start() -> String {
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "content": [], "model": "claude-sonnet-4-5", "stop_reason": null,
            "usage": {"input_tokens": 20, "cache_read_input_tokens": 100, "output_tokens": 1}}})
        .to_string()
    }

    fn block_start(index: usize, block: &Value) -> String {
        json!({"type": "content_block_start", "index": index, "content_block": block}).to_string()
    }

    fn delta(index: usize, delta: &Value) -> String {
        json!({"type": "content_block_delta", "index": index, "delta": delta}).to_string()
    }

    fn block_stop(index: usize) -> String {
        json!({"type": "content_block_stop", "index": index}).to_string()
    }

    fn message_delta(reason: &str, usage: &Value) -> String {
        json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": usage})
            .to_string()
    }

    fn stop() -> String {
        r#"{"type":"message_stop"}"#.to_owned()
    }

    fn run(events: &[String]) -> (Vec<StreamEvent>, Result<(), LlmError>) {
        let mut mapper = StreamMapper::new();
        let mut out = Vec::new();
        for data in events {
            if let Err(error) = mapper.push(data, &mut out) {
                return (out, Err(error));
            }
        }
        let end = mapper.finish(&mut out);
        (out, end)
    }

    fn assemble(events: &[StreamEvent]) -> agent_core::ChatResponse {
        let mut accumulator = StreamAccumulator::new();
        for event in events {
            accumulator.push(event.clone()).unwrap();
        }
        accumulator.finish().unwrap()
    }

    #[test]
    fn thinking_blocks_stay_apart_and_keep_their_signatures() {
        let (events, end) = run(&[
            start(),
            block_start(0, &json!({"type": "thinking", "thinking": "", "signature": ""})),
            delta(0, &json!({"type": "thinking_delta", "thinking": "First "})),
            delta(0, &json!({"type": "thinking_delta", "thinking": "thought."})),
            delta(0, &json!({"type": "signature_delta", "signature": "sig-1"})),
            block_stop(0),
            block_start(1, &json!({"type": "redacted_thinking", "data": "EmwKAhgB"})),
            block_stop(1),
            block_start(2, &json!({"type": "thinking", "thinking": ""})),
            delta(2, &json!({"type": "thinking_delta", "thinking": "Second."})),
            delta(2, &json!({"type": "signature_delta", "signature": "sig-2"})),
            block_stop(2),
            block_start(3, &json!({"type": "text", "text": ""})),
            delta(3, &json!({"type": "text_delta", "text": "Done."})),
            block_stop(3),
            message_delta("end_turn", &json!({"output_tokens": 40})),
            stop(),
        ]);
        end.unwrap();
        let response = assemble(&events);
        assert_eq!(response.message.content, "Done.");
        assert_eq!(
            response.message.reasoning,
            [
                ReasoningBlock {
                    text: "First thought.".into(),
                    signature: Some("sig-1".into()),
                    data: None,
                    provider: None
                },
                redacted_block("EmwKAhgB"),
                ReasoningBlock {
                    text: "Second.".into(),
                    signature: Some("sig-2".into()),
                    data: None,
                    provider: None
                },
            ]
        );
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 120,
                output_tokens: 40,
                cache_read_tokens: 100,
                ..Usage::default()
            }
        );
    }

    #[test]
    fn tool_calls_are_numbered_and_ended_at_their_block_stop() {
        let (events, end) = run(&[
            start(),
            block_start(0, &json!({"type": "text", "text": ""})),
            delta(0, &json!({"type": "text_delta", "text": "Both."})),
            block_stop(0),
            block_start(
                1,
                &json!({"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {}}),
            ),
            delta(1, &json!({"type": "input_json_delta", "partial_json": ""})),
            delta(1, &json!({"type": "input_json_delta", "partial_json": "{\"city\":"})),
            delta(1, &json!({"type": "input_json_delta", "partial_json": "\"Paris\"}"})),
            block_stop(1),
            block_start(
                2,
                &json!({"type": "tool_use", "id": "toolu_b", "name": "now", "input": {"tz": "CET"}}),
            ),
            block_stop(2),
            message_delta("tool_use", &json!({"output_tokens": 30})),
            stop(),
        ]);
        end.unwrap();
        let tool_events: Vec<&StreamEvent> = events
            .iter()
            .filter(|event| !matches!(event, StreamEvent::TextDelta { .. } | StreamEvent::Started { .. }))
            .collect();
        assert_eq!(
            tool_events[..6],
            [
                &StreamEvent::ToolCallStart {
                    index: 0,
                    id: "toolu_a".into(),
                    name: "get_weather".into()
                },
                &StreamEvent::ToolCallDelta {
                    index: 0,
                    arguments: "{\"city\":".into()
                },
                &StreamEvent::ToolCallDelta {
                    index: 0,
                    arguments: "\"Paris\"}".into()
                },
                &StreamEvent::ToolCallEnd { index: 0 },
                &StreamEvent::ToolCallStart {
                    index: 1,
                    id: "toolu_b".into(),
                    name: "now".into()
                },
                &StreamEvent::ToolCallDelta {
                    index: 1,
                    arguments: "{\"tz\":\"CET\"}".into()
                },
            ]
        );
        let response = assemble(&events);
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(response.message.tool_calls[0].arguments, json!({"city": "Paris"}));
        assert_eq!(response.message.tool_calls[1].arguments, json!({"tz": "CET"}));
    }

    #[test]
    fn a_stream_cut_mid_tool_call_is_an_error_naming_the_call() {
        let (events, end) = run(&[
            start(),
            block_start(
                0,
                &json!({"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {}}),
            ),
            delta(
                0,
                &json!({"type": "input_json_delta", "partial_json": "{\"city\": \"Par"}),
            ),
        ]);
        let error = end.unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Decode);
        assert!(
            error
                .message
                .contains("truncated in the middle of tool call `get_weather` (toolu_a, 13 bytes"),
            "{}",
            error.message
        );
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, StreamEvent::ToolCallEnd { .. } | StreamEvent::Stop { .. }))
        );
        let (_, end) = run(&[start(), block_start(0, &json!({"type": "text"}))]);
        assert!(end.unwrap_err().message.contains("after 2 events"));
        let (_, end) = run(&[]);
        assert!(end.unwrap_err().message.contains("before any event"));
    }

    #[test]
    fn a_missing_message_stop_after_the_stop_reason_is_forgiven() {
        let (events, end) = run(&[start(), message_delta("end_turn", &json!({"output_tokens": 2}))]);
        end.unwrap();
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Stop {
                reason: StopReason::EndTurn
            })
        );
    }

    #[test]
    fn error_events_become_typed_errors() {
        for (label, kind) in [
            ("overloaded_error", LlmErrorKind::Overloaded),
            ("rate_limit_error", LlmErrorKind::RateLimited),
            ("api_error", LlmErrorKind::Server),
            ("invalid_request_error", LlmErrorKind::InvalidRequest),
        ] {
            let error_event = json!({"type": "error", "error": {"type": label, "message": "Something happened"}});
            let (_, end) = run(&[start(), error_event.to_string()]);
            let error = end.unwrap_err();
            assert_eq!(error.kind, kind, "{label}");
            assert_eq!(
                error.message,
                format!("the stream reported an error: {label}: Something happened")
            );
        }
    }

    #[test]
    fn garbage_and_deltas_for_unknown_blocks_are_decode_errors() {
        let (_, end) = run(&["{\"type\": ".to_owned()]);
        assert_eq!(end.unwrap_err().kind, LlmErrorKind::Decode);
        let (_, end) = run(&[start(), delta(4, &json!({"type": "text_delta", "text": "x"}))]);
        let error = end.unwrap_err();
        assert!(error.message.contains("block 4, which never started"), "{error}");
    }

    #[test]
    fn unknown_blocks_deltas_and_events_are_skipped() {
        let (events, end) = run(&[
            start(),
            r#"{"type": "ping"}"#.to_owned(),
            block_start(
                0,
                &json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
            ),
            delta(
                0,
                &json!({"type": "input_json_delta", "partial_json": "{\"query\": \"x\"}"}),
            ),
            block_stop(0),
            block_start(1, &json!({"type": "text", "text": ""})),
            delta(
                1,
                &json!({"type": "citations_delta", "citation": {"type": "web_search_result_location"}}),
            ),
            delta(1, &json!({"type": "text_delta", "text": "Sunny."})),
            block_stop(1),
            r#"{"type": "brand_new_event", "index": 1}"#.to_owned(),
            message_delta("end_turn", &json!({"output_tokens": 5})),
            stop(),
            r#"{"type": "message_start", "message": {}}"#.to_owned(),
        ]);
        end.unwrap();
        let response = assemble(&events);
        assert_eq!(response.message.content, "Sunny.");
        assert!(response.message.tool_calls.is_empty());
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, StreamEvent::Started { .. }))
                .count(),
            1,
            "nothing after message_stop"
        );
    }
}
