//! Chat Completions stream chunks -> `StreamEvent`s: a small state machine
//! that assembles tool calls from their fragments.

use std::borrow::Cow;

use agent_core::{LlmError, StreamEvent};
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde_json::Value;

use super::wire::{
    FinishReason, First, Indexed, LenientStr, WireArguments, WireText, WireUsage, error_from_object, stop_reason,
};
use agent_http::EventMapper;
use agent_http::error::snippet;

/// Maps the `data` of each server-sent event of a streamed Chat Completion
/// to [`StreamEvent`]s. Pure: feed it the payloads in order, then call
/// [`finish`](Self::finish) when the stream ends.
///
/// - `Started` once, from the first chunk that names a model or id;
/// - text, refusal and reasoning deltas as they come (choice 0 only);
/// - tool calls assembled by their `index`: `ToolCallStart` when the id and
///   name arrive, a `ToolCallDelta` per argument fragment, `ToolCallEnd` for
///   every open call when the `finish_reason` arrives;
/// - `Usage` from the final usage chunk (`choices: []`);
/// - `Stop` at the end of the stream (`[DONE]` or end of input), only if a
///   `finish_reason` was seen. Otherwise the stream was cut short and
///   [`finish`](Self::finish) fails with a decode error naming the tool
///   call that was cut off, if any, so a half call is never returned.
///
/// An `{"error": …}` object inside the stream becomes an [`LlmError`].
///
/// ```
/// use agent_core::{StopReason, StreamEvent};
/// use agent_provider_openai::mapper::{EventMapper, StreamMapper};
///
/// let mut mapper = StreamMapper::new();
/// let mut events = Vec::new();
/// mapper.push(r#"{"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#, &mut events)?;
/// mapper.push(r#"{"id":"c1","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#, &mut events)?;
/// mapper.push("[DONE]", &mut events)?;
/// assert_eq!(events[1], StreamEvent::TextDelta { text: "Hi".into() });
/// assert_eq!(events.last(), Some(&StreamEvent::Stop { reason: StopReason::EndTurn }));
/// # Ok::<(), agent_core::LlmError>(())
/// ```
#[derive(Debug, Default)]
pub struct StreamMapper {
    started: bool,
    finish: Option<FinishReason>,
    refused: bool,
    calls: Vec<PartialCall>,
    chunks: usize,
    finished: bool,
}

#[derive(Debug)]
struct PartialCall {
    /// The call's `index` on the wire, when the server sent one.
    wire_index: Option<u32>,
    /// The index used in the events.
    index: usize,
    id: String,
    name: String,
    /// `ToolCallStart` was emitted.
    started: bool,
    /// `ToolCallEnd` was emitted.
    ended: bool,
    /// Argument text that arrived before the call's name.
    pending: String,
    received: usize,
}

impl StreamMapper {
    /// A mapper at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a `finish_reason` has arrived.
    pub fn saw_finish(&self) -> bool {
        self.finish.is_some()
    }

    fn delta(&mut self, delta: Delta<'_>, out: &mut Vec<StreamEvent>) {
        if let Some(text) = delta.reasoning_content.non_empty().or(delta.reasoning.non_empty()) {
            out.push(StreamEvent::ReasoningDelta { text: text.to_owned() });
        }
        if let Some(text) = delta.content.text() {
            out.push(StreamEvent::TextDelta { text: text.to_owned() });
        }
        if let Some(text) = delta.refusal.text() {
            self.refused = true;
            out.push(StreamEvent::TextDelta { text: text.to_owned() });
        }
        let (first, rest) = match delta.tool_calls {
            ToolCallChunks::None => (None, Vec::new()),
            ToolCallChunks::One(call) => (Some(call), Vec::new()),
            ToolCallChunks::Many(calls) => (None, calls),
        };
        for call in first.into_iter().chain(rest) {
            let (name, arguments) = match call.function {
                Some(function) => (function.name, function.arguments),
                None => (None, None),
            };
            self.tool_delta(call.index, call.id.as_deref(), name.as_deref(), arguments.as_ref(), out);
        }
        if let Some(function) = delta.function_call {
            self.tool_delta(
                Some(0),
                None,
                function.name.as_deref(),
                function.arguments.as_ref(),
                out,
            );
        }
    }

    fn tool_delta(
        &mut self,
        wire_index: Option<u32>,
        id: Option<&str>,
        name: Option<&str>,
        arguments: Option<&WireArguments<'_>>,
        out: &mut Vec<StreamEvent>,
    ) {
        let id = id.filter(|id| !id.is_empty());
        let name = name.filter(|name| !name.is_empty());
        let position = self.find_call(wire_index, id, out);
        let call = &mut self.calls[position];
        if call.id.is_empty()
            && let Some(id) = id
        {
            id.clone_into(&mut call.id);
        }
        if call.name.is_empty()
            && let Some(name) = name
        {
            name.clone_into(&mut call.name);
        }
        let fragment = arguments.map(WireArguments::as_text).unwrap_or_default();
        call.received += fragment.len();
        if !call.started && !call.name.is_empty() {
            start(call, out);
        }
        if fragment.is_empty() {
            return;
        }
        if call.started {
            out.push(StreamEvent::ToolCallDelta {
                index: call.index,
                arguments: fragment.into_owned(),
            });
        } else {
            call.pending.push_str(&fragment);
        }
    }

    /// The call a fragment belongs to, opening a new one where needed. A new
    /// id at an index whose call already has another id is a new call (some
    /// servers send every call at index 0).
    fn find_call(&mut self, wire_index: Option<u32>, id: Option<&str>, out: &mut Vec<StreamEvent>) -> usize {
        let open = match wire_index {
            Some(wire_index) => self
                .calls
                .iter()
                .rposition(|call| call.wire_index == Some(wire_index) && !call.ended),
            None if id.is_some() => None,
            None => self.calls.iter().rposition(|call| !call.ended),
        };
        if let Some(position) = open {
            let call = &self.calls[position];
            let other_id = id.is_some_and(|id| !call.id.is_empty() && call.id != id);
            if !other_id {
                return position;
            }
            end(&mut self.calls[position], out);
        }
        let index = self.calls.len();
        self.calls.push(PartialCall {
            wire_index,
            index,
            id: String::new(),
            name: String::new(),
            started: false,
            ended: false,
            pending: String::new(),
            received: 0,
        });
        index
    }

    fn end_calls(&mut self, out: &mut Vec<StreamEvent>) {
        for call in &mut self.calls {
            end(call, out);
        }
    }
}

/// Driven by `agent-http`'s [`map_events`](agent_http::map_events) in the client, and by hand in tests.
impl EventMapper for StreamMapper {
    /// Whether the stream has ended ([`finish`](Self::finish) ran, or `[DONE]` arrived).
    fn is_finished(&self) -> bool {
        self.finished
    }

    /// Takes the `data` of one server-sent event and appends the events it
    /// implies to `out`. `[DONE]` ends the stream (as [`finish`](Self::finish)).
    fn push(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let data = data.trim_ascii();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            return self.finish(out);
        }
        if self.finished {
            return Ok(());
        }
        let chunk: WireChunk<'_> = serde_json::from_str(data).map_err(|error| {
            if error.is_eof() {
                // The body ended (or the connection broke) inside this chunk.
                return LlmError::decode(format!(
                    "chunk {} was cut after {} bytes; {}",
                    self.chunks + 1,
                    data.len(),
                    self.truncation_message()
                ));
            }
            LlmError::decode(format!(
                "a stream chunk is not a Chat Completions chunk ({error}); it starts with {:?}",
                snippet(data.as_bytes())
            ))
        })?;
        self.chunks += 1;
        if let Some(error) = chunk.error.as_ref().filter(|error| !error.is_null()) {
            let mut error = error_from_object(data.as_bytes(), error);
            error.message = format!("the stream reported an error: {}", error.message);
            return Err(error);
        }
        if !self.started {
            let id = chunk.id.as_deref().filter(|id| !id.is_empty());
            let model = chunk.model.as_deref().filter(|model| !model.is_empty());
            if id.is_some() || model.is_some() {
                self.started = true;
                out.push(StreamEvent::Started {
                    model: model.map(str::to_owned),
                    id: id.map(str::to_owned),
                });
            }
        }
        if let Some(choice) = chunk.choices.0 {
            if let Some(delta) = choice.delta {
                self.delta(delta, out);
            }
            if let Some(finish) = choice.finish_reason {
                self.finish = Some(finish);
                self.end_calls(out);
            }
        }
        let usage = chunk.usage.or(chunk.x_groq.and_then(|groq| groq.usage));
        if let Some(usage) = usage {
            out.push(StreamEvent::Usage {
                usage: usage.to_usage(),
            });
        }
        Ok(())
    }

    /// Ends the stream: `Stop` if a `finish_reason` was seen, otherwise a
    /// decode error saying the stream was truncated (naming the tool call
    /// that was cut off). Calling it again does nothing.
    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        let Some(finish) = self.finish else {
            return Err(LlmError::decode(self.truncation_message()));
        };
        self.end_calls(out);
        out.push(StreamEvent::Stop {
            reason: stop_reason(Some(finish), !self.calls.is_empty(), self.refused),
        });
        Ok(())
    }

    /// Why the stream is incomplete so far: which tool call would be cut
    /// off if it ended now. Used to explain a connection that broke.
    fn truncation_message(&self) -> String {
        // The call being received is the last one opened.
        if let Some(call) = self.calls.iter().rev().find(|call| !call.ended) {
            let name = if call.name.is_empty() { "(unnamed)" } else { &call.name };
            let id = if call.id.is_empty() { "no id" } else { &call.id };
            let discarded = match self.calls.len() {
                1 => "the call was discarded".to_owned(),
                n => format!("all {n} tool calls of this reply were discarded"),
            };
            return format!(
                "the stream was truncated in the middle of tool call `{name}` ({id}, {} bytes of arguments \
                 received); {discarded}",
                call.received
            );
        }
        if self.chunks == 0 {
            "the stream ended before any chunk arrived".to_owned()
        } else {
            format!(
                "the stream was truncated after {} chunks, before a finish_reason arrived",
                self.chunks
            )
        }
    }
}

/// Emits `ToolCallStart` (with a synthesised id when the server sent none)
/// and any argument text that came before the name.
fn start(call: &mut PartialCall, out: &mut Vec<StreamEvent>) {
    if call.id.is_empty() {
        call.id = format!("call_{}", call.index);
    }
    call.started = true;
    out.push(StreamEvent::ToolCallStart {
        index: call.index,
        id: call.id.clone(),
        name: call.name.clone(),
    });
    if !call.pending.is_empty() {
        out.push(StreamEvent::ToolCallDelta {
            index: call.index,
            arguments: std::mem::take(&mut call.pending),
        });
    }
}

/// Emits `ToolCallEnd` for a call that is still open (starting it first if
/// its name never came, so the runner can report the unnamed call).
fn end(call: &mut PartialCall, out: &mut Vec<StreamEvent>) {
    if call.ended {
        return;
    }
    if !call.started {
        start(call, out);
    }
    call.ended = true;
    out.push(StreamEvent::ToolCallEnd { index: call.index });
}

#[derive(Deserialize)]
struct WireChunk<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    choices: First<ChunkChoice<'a>>,
    // The rarely present fields are boxed: the chunk struct stays small, which
    // matters because serde moves it around while building it.
    #[serde(default)]
    usage: Option<Box<WireUsage>>,
    /// Groq sends the usage here, with the last choice chunk.
    #[serde(default)]
    x_groq: Option<Box<XGroq>>,
    #[serde(default)]
    error: Option<Box<Value>>,
}

#[derive(Deserialize)]
struct XGroq {
    #[serde(default)]
    usage: Option<Box<WireUsage>>,
}

#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    finish_reason: Option<FinishReason>,
}

impl Indexed for ChunkChoice<'_> {
    const FALLBACK: bool = false;

    fn index(&self) -> u32 {
        self.index.unwrap_or(0)
    }
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: WireText<'a>,
    #[serde(default, borrow)]
    refusal: WireText<'a>,
    #[serde(default, borrow)]
    reasoning_content: LenientStr<'a>,
    #[serde(default, borrow)]
    reasoning: LenientStr<'a>,
    #[serde(default, borrow)]
    tool_calls: ToolCallChunks<'a>,
    #[serde(default, borrow)]
    function_call: Option<Box<FunctionChunk<'a>>>,
}

/// The `tool_calls` of a delta. Nearly every chunk carries one fragment, so
/// a single one is kept inline instead of in a `Vec`.
#[derive(Default)]
enum ToolCallChunks<'a> {
    #[default]
    None,
    One(ToolCallChunk<'a>),
    Many(Vec<ToolCallChunk<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for ToolCallChunks<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ChunksVisitor;

        impl<'de> Visitor<'de> for ChunksVisitor {
            type Value = ToolCallChunks<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of tool-call fragments")
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ToolCallChunks::None)
            }

            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ToolCallChunks::None)
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let Some(first) = seq.next_element::<ToolCallChunk<'de>>()? else {
                    return Ok(ToolCallChunks::None);
                };
                let Some(second) = seq.next_element::<ToolCallChunk<'de>>()? else {
                    return Ok(ToolCallChunks::One(first));
                };
                let mut all = vec![first, second];
                while let Some(next) = seq.next_element()? {
                    all.push(next);
                }
                Ok(ToolCallChunks::Many(all))
            }
        }

        deserializer.deserialize_any(ChunksVisitor)
    }
}

#[derive(Deserialize)]
struct ToolCallChunk<'a> {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionChunk<'a>>,
}

#[derive(Deserialize)]
struct FunctionChunk<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<WireArguments<'a>>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agent_core::{LlmErrorKind, StopReason, StreamAccumulator, Usage};
    use serde_json::json;

    use super::*;

    fn chunk(delta: &Value, finish: Option<&str>) -> String {
        json!({"id": "c1", "object": "chat.completion.chunk", "model": "m",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    }

    fn tool(index: u32, id: Option<&str>, name: Option<&str>, arguments: &str) -> Value {
        let mut function = json!({"arguments": arguments});
        if let Some(name) = name {
            function["name"] = json!(name);
        }
        let mut call = json!({"index": index, "function": function});
        if let Some(id) = id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        json!({"tool_calls": [call]})
    }

    fn run(chunks: &[String]) -> (Vec<StreamEvent>, Result<(), LlmError>) {
        let mut mapper = StreamMapper::new();
        let mut events = Vec::new();
        for data in chunks {
            if let Err(error) = mapper.push(data, &mut events) {
                return (events, Err(error));
            }
        }
        let end = mapper.finish(&mut events);
        (events, end)
    }

    fn assemble(events: &[StreamEvent]) -> agent_core::ChatResponse {
        let mut accumulator = StreamAccumulator::new();
        for event in events {
            accumulator.push(event.clone()).unwrap();
        }
        accumulator.finish().unwrap()
    }

    #[test]
    fn text_usage_and_stop() {
        let usage = json!({"id": "c1", "model": "m", "choices": [],
            "usage": {"prompt_tokens": 20, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 16},
                      "completion_tokens_details": {"reasoning_tokens": 1}}})
        .to_string();
        let (events, end) = run(&[
            chunk(&json!({"role": "assistant", "content": ""}), None),
            chunk(&json!({"content": "Hel"}), None),
            chunk(&json!({"content": "lo"}), None),
            chunk(&json!({}), Some("stop")),
            usage,
            "[DONE]".to_owned(),
        ]);
        assert!(end.is_ok());
        assert_eq!(
            events,
            vec![
                StreamEvent::Started {
                    model: Some("m".into()),
                    id: Some("c1".into())
                },
                StreamEvent::TextDelta { text: "Hel".into() },
                StreamEvent::TextDelta { text: "lo".into() },
                StreamEvent::Usage {
                    usage: Usage {
                        input_tokens: 20,
                        output_tokens: 2,
                        cache_read_tokens: 16,
                        cache_write_tokens: 0,
                        reasoning_tokens: 1
                    }
                },
                StreamEvent::Stop {
                    reason: StopReason::EndTurn
                },
            ]
        );
    }

    #[test]
    fn parallel_tool_calls_are_assembled_by_index() {
        let (events, end) = run(&[
            chunk(&tool(0, Some("call_a"), Some("get_weather"), ""), None),
            chunk(&tool(0, None, None, "{\"city\":"), None),
            chunk(&tool(1, Some("call_b"), Some("get_time"), "{\"tz\":"), None),
            chunk(&tool(0, None, None, "\"Paris\"}"), None),
            chunk(&tool(1, None, None, "\"CET\"}"), None),
            chunk(&json!({}), Some("tool_calls")),
        ]);
        assert!(end.is_ok());
        let ends: Vec<_> = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::ToolCallEnd { .. }))
            .collect();
        assert_eq!(ends.len(), 2);
        let response = assemble(&events);
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        let calls = &response.message.tool_calls;
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("call_a", "get_weather")
        );
        assert_eq!(calls[0].arguments, json!({"city": "Paris"}));
        assert_eq!((calls[1].id.as_str(), calls[1].name.as_str()), ("call_b", "get_time"));
        assert_eq!(calls[1].arguments, json!({"tz": "CET"}));
    }

    #[test]
    fn a_stream_cut_mid_tool_call_is_a_truncation_error_naming_the_call() {
        let (events, end) = run(&[
            chunk(&tool(0, Some("call_a"), Some("get_weather"), ""), None),
            chunk(&tool(0, None, None, "{\"city\": \"Par"), None),
        ]);
        let error = end.unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Decode);
        assert!(
            error
                .message
                .contains("truncated in the middle of tool call `get_weather` (call_a"),
            "{}",
            error.message
        );
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, StreamEvent::ToolCallEnd { .. } | StreamEvent::Stop { .. }))
        );
    }

    #[test]
    fn a_stream_cut_without_a_finish_reason_is_an_error() {
        let (_, end) = run(&[chunk(&json!({"content": "Hel"}), None), "[DONE]".to_owned()]);
        let error = end.unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Decode);
        assert!(error.message.contains("before a finish_reason"), "{}", error.message);
        let (_, end) = run(&[]);
        assert!(end.unwrap_err().message.contains("before any chunk"));
    }

    #[test]
    fn error_objects_in_the_stream_are_errors() {
        let (_, end) = run(&[
            chunk(&json!({"content": "Hel"}), None),
            json!({"error": {"message": "The server had an error while processing your request.", "type": "server_error"}})
                .to_string(),
        ]);
        let error = end.unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Server);
        assert!(error.message.contains("The server had an error"), "{}", error.message);
    }

    #[test]
    fn garbage_is_a_decode_error() {
        let (_, end) = run(&["{\"id\": ".to_owned()]);
        assert_eq!(end.unwrap_err().kind, LlmErrorKind::Decode);
    }

    #[test]
    fn several_fragments_in_one_chunk_are_all_taken() {
        let both = json!({"tool_calls": [
            {"index": 0, "id": "a", "type": "function", "function": {"name": "one", "arguments": "{}"}},
            {"index": 1, "id": "b", "type": "function", "function": {"name": "two", "arguments": "{\"x\":"}},
            {"index": 1, "function": {"arguments": "2}"}}
        ]});
        let (events, end) = run(&[chunk(&both, None), chunk(&json!({}), Some("tool_calls"))]);
        assert!(end.is_ok());
        let calls = assemble(&events).message.tool_calls;
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].arguments, json!({"x": 2}));
    }

    #[test]
    fn a_new_id_at_a_reused_index_is_a_new_call() {
        let (events, end) = run(&[
            chunk(&tool(0, Some("a"), Some("one"), "{}"), None),
            chunk(&tool(0, Some("b"), Some("two"), "{\"x\":1}"), None),
            chunk(&json!({}), Some("tool_calls")),
        ]);
        assert!(end.is_ok());
        let calls = assemble(&events).message.tool_calls;
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].name, "two");
        assert_eq!(calls[1].arguments, json!({"x": 1}));
    }

    #[test]
    fn calls_without_ids_or_with_late_names_are_handled() {
        let (events, end) = run(&[
            chunk(&tool(0, None, None, "{\"a\""), None),
            chunk(&tool(0, None, Some("late"), ":1}"), None),
            chunk(&json!({}), Some("stop")),
        ]);
        assert!(end.is_ok());
        let response = assemble(&events);
        assert_eq!(response.message.tool_calls[0].id, "call_0");
        assert_eq!(response.message.tool_calls[0].name, "late");
        assert_eq!(response.message.tool_calls[0].arguments, json!({"a": 1}));
        assert_eq!(response.stop_reason, StopReason::ToolUse);
    }

    #[test]
    fn refusals_reasoning_and_other_choices() {
        let other = json!({"id": "c1", "model": "m",
            "choices": [{"index": 1, "delta": {"content": "other"}, "finish_reason": null}]})
        .to_string();
        let (events, end) = run(&[
            chunk(&json!({"reasoning_content": "think"}), None),
            other,
            chunk(&json!({"refusal": "I can't"}), None),
            chunk(&json!({}), Some("stop")),
        ]);
        assert!(end.is_ok());
        let response = assemble(&events);
        assert_eq!(response.message.content, "I can't");
        assert_eq!(response.message.reasoning[0].text, "think");
        assert_eq!(response.stop_reason, StopReason::ContentFilter);
    }

    #[test]
    fn started_waits_for_a_model_or_id_and_comes_once() {
        let azure_first = json!({"id": "", "model": "", "choices": [], "prompt_filter_results": []}).to_string();
        let (events, _) = run(&[
            azure_first,
            chunk(&json!({"content": "a"}), None),
            chunk(&json!({}), Some("stop")),
        ]);
        let started: Vec<_> = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Started { .. }))
            .collect();
        assert_eq!(started.len(), 1);
        assert!(matches!(events[0], StreamEvent::Started { .. }));
    }

    #[test]
    fn groq_usage_and_repeated_ends_are_handled() {
        let groq = json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "x_groq": {"usage": {"prompt_tokens": 5, "completion_tokens": 1}}})
        .to_string();
        let mut mapper = StreamMapper::new();
        let mut events = Vec::new();
        mapper.push(&groq, &mut events).unwrap();
        mapper.push("[DONE]", &mut events).unwrap();
        mapper.finish(&mut events).unwrap();
        assert!(mapper.is_finished());
        let response = assemble(&events);
        assert_eq!(response.usage, Usage::new(5, 1));
        assert_eq!(
            events.iter().filter(|e| matches!(e, StreamEvent::Stop { .. })).count(),
            1
        );
    }
}
