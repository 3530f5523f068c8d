//! `streamGenerateContent?alt=sse` chunks -> `StreamEvent`s.

use agent_core::{LlmError, StreamEvent};
use serde_json::{Map, Value};

use super::response::{Piece, read_part};
use agent_http::EventMapper;
use agent_http::error::snippet;

use super::wire::{
    CallIds, Finish, PartialArg, WireResponse, WireUsage, blocked_prompt, error_from_object, finish, signature_block,
};

/// Maps the `data` of each server-sent event of a streamed reply (each one
/// a whole `GenerateContentResponse` chunk) to [`StreamEvent`]s. Pure: feed
/// it the payloads in order, then call [`finish`](Self::finish) at the end
/// of the body.
///
/// - `Started` once, from the first chunk (`modelVersion`, `responseId`);
/// - text parts as `TextDelta`s, thought parts as `ReasoningDelta`s (a
///   signed thought as one `Reasoning` block), every other signature as a
///   `Reasoning` block naming its part (as [`parse_response`](super::parse_response) does);
/// - a `functionCall` part arrives whole: `ToolCallStart`, one
///   `ToolCallDelta` with the arguments and `ToolCallEnd` together (Vertex
///   AI's `partialArgs` streaming is assembled and emitted when the call
///   is complete);
/// - `finishReason` is remembered, not acted on: old models repeat it on
///   every chunk, so the stream ends at the end of the body. `Usage` (the
///   last chunk's `usageMetadata` wins; earlier ones are partial) and
///   `Stop` come from [`finish`](Self::finish), which fails with a decode
///   error when no `finishReason` ever came (a truncated stream), and with
///   the same error as [`parse_response`](super::parse_response) for a
///   finish that leaves no usable reply (`MALFORMED_FUNCTION_CALL`: a
///   [`MalformedToolCall`](agent_core::LlmErrorKind::MalformedToolCall)
///   error carrying `finishMessage`);
/// - an `{"error": ...}` chunk becomes an [`LlmError`].
///
/// ```
/// use agent_core::{StopReason, StreamEvent};
/// use agent_provider_gemini::mapper::{EventMapper, StreamMapper};
///
/// let mut mapper = StreamMapper::new();
/// let mut events = Vec::new();
/// mapper.push(r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]}}],"modelVersion":"gemini-2.5-flash"}"#, &mut events)?;
/// mapper.push(r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"!"}]},"finishReason":"STOP"}]}"#, &mut events)?;
/// mapper.finish(&mut events)?;
/// assert_eq!(events[1], StreamEvent::TextDelta { text: "Hi".into() });
/// assert_eq!(events.last(), Some(&StreamEvent::Stop { reason: StopReason::EndTurn }));
/// # Ok::<(), agent_core::LlmError>(())
/// ```
#[derive(Debug, Default)]
pub struct StreamMapper {
    started: bool,
    fallback_model: Option<String>,
    ids: CallIds,
    finish_reason: Option<String>,
    finish_message: Option<String>,
    usage: Option<WireUsage>,
    /// Complete calls emitted so far (the next call's index).
    calls: usize,
    /// A call whose arguments are still streaming (`partialArgs`).
    open: Option<OpenCall>,
    chunks: usize,
    text_bytes: usize,
    finished: bool,
}

#[derive(Debug)]
struct OpenCall {
    index: usize,
    id: String,
    name: String,
    args: Value,
    received: usize,
}

impl StreamMapper {
    /// A mapper at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reports `model` in `Started` when the chunks do not name one.
    pub fn with_fallback_model(mut self, model: impl Into<String>) -> Self {
        self.fallback_model = Some(model.into());
        self
    }

    /// Whether a `finishReason` has arrived.
    pub fn saw_finish(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// A chunk that does not parse: cut short (the body ended inside it),
    /// naming the tool call it carried if any, or not Gemini's at all.
    fn unreadable(&self, data: &str, error: &serde_json::Error) -> LlmError {
        if error.is_eof() {
            let call = data.find("\"functionCall\"").map(|at| {
                let name = data[at..]
                    .find("\"name\"")
                    .and_then(|start| {
                        let rest = data[at + start + 6..].trim_start().strip_prefix(':')?.trim_start();
                        let rest = rest.strip_prefix('"')?;
                        rest.find('"').map(|end| &rest[..end])
                    })
                    .unwrap_or("(name not received)");
                format!(" in the middle of tool call `{name}`; the call was discarded")
            });
            return LlmError::decode(format!(
                "the stream was truncated inside chunk {}{} ({} bytes of it received)",
                self.chunks + 1,
                call.unwrap_or_default(),
                data.len()
            ));
        }
        LlmError::decode(format!(
            "a stream chunk is not a GenerateContentResponse ({error}); it starts with {:?}",
            snippet(data.as_bytes())
        ))
    }

    /// A `functionCall` part of Vertex AI's streamed arguments: the name
    /// opens the call, `partialArgs` fill it, a part without
    /// `willContinue` (often an empty `functionCall: {}`) closes it.
    fn partial_call(&mut self, part: super::wire::WirePart<'_>, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let Some(call) = part.function_call else {
            return Ok(());
        };
        if let Some(name) = call.name.as_deref().filter(|name| !name.is_empty()) {
            self.end_open_call(out);
            let id = self.ids.next(call.id.as_deref(), name, "");
            if let Some(signature) = part.thought_signature.as_deref().filter(|s| !s.is_empty()) {
                out.push(StreamEvent::Reasoning {
                    block: signature_block("function_call", Some(&id), "", signature),
                });
            }
            let index = self.calls;
            self.calls += 1;
            out.push(StreamEvent::ToolCallStart {
                index,
                id: id.clone(),
                name: name.to_owned(),
            });
            self.open = Some(OpenCall {
                index,
                id,
                name: name.to_owned(),
                args: call.args.unwrap_or_else(|| Value::Object(Map::new())),
                received: 0,
            });
        }
        let Some(open) = self.open.as_mut() else {
            return Err(LlmError::decode(
                "streamed function-call arguments arrived before the call's name",
            ));
        };
        for piece in call.partial_args.unwrap_or_default() {
            open.received += piece.json_path.len();
            apply_partial(&mut open.args, piece)?;
        }
        if call.will_continue != Some(true) {
            self.end_open_call(out);
        }
        Ok(())
    }

    /// Emits the arguments and the end of the call whose arguments streamed.
    fn end_open_call(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some(call) = self.open.take() {
            out.push(StreamEvent::ToolCallDelta {
                index: call.index,
                arguments: call.args.to_string(),
            });
            out.push(StreamEvent::ToolCallEnd { index: call.index });
        }
    }
}

/// Driven by `agent-http`'s [`map_events`](agent_http::map_events) in the client, and by hand in tests.
impl EventMapper for StreamMapper {
    /// Whether [`finish`](Self::finish) has run.
    fn is_finished(&self) -> bool {
        self.finished
    }

    /// Takes the `data` of one server-sent event and appends the events it
    /// implies to `out`.
    fn push(&mut self, data: &str, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let data = data.trim_ascii();
        // Gemini sends no end marker; `[DONE]` (from a proxy) is ignored.
        if data.is_empty() || data == "[DONE]" || self.finished {
            return Ok(());
        }
        let mut chunk: WireResponse<'_> = serde_json::from_str(data).map_err(|error| self.unreadable(data, &error))?;
        self.chunks += 1;
        if let Some(error) = chunk.error.as_deref().filter(|error| !error.is_null()) {
            let mut error = error_from_object(data.as_bytes(), error);
            error.message = format!("the stream reported an error: {}", error.message);
            return Err(error);
        }
        self.ids.set_response_id(chunk.response_id.as_deref());
        if !self.started {
            self.started = true;
            out.push(StreamEvent::Started {
                model: chunk
                    .model_version
                    .as_deref()
                    .filter(|model| !model.is_empty())
                    .map(str::to_owned)
                    .or_else(|| self.fallback_model.clone()),
                id: chunk
                    .response_id
                    .as_deref()
                    .filter(|id| !id.is_empty())
                    .map(str::to_owned),
            });
        }
        if let Some(usage) = chunk.usage_metadata {
            self.usage = Some(usage);
        }
        let Some(candidate) = chunk.take_candidate() else {
            if let Some(error) = chunk.prompt_feedback.as_ref().and_then(blocked_prompt) {
                return Err(error);
            }
            return Ok(());
        };
        for part in candidate.content.and_then(|content| content.parts).unwrap_or_default() {
            let partial = part.function_call.as_ref().is_some_and(|call| {
                call.partial_args.is_some()
                    || call.will_continue == Some(true)
                    || (self.open.is_some() && call.name.is_none() && call.args.is_none())
            });
            if partial {
                self.partial_call(part, out)?;
                continue;
            }
            self.end_open_call(out);
            read_part(part, &mut self.ids, &mut |piece| match piece {
                Piece::Text(text) => {
                    self.text_bytes += text.len();
                    out.push(StreamEvent::TextDelta {
                        text: text.into_owned(),
                    });
                }
                Piece::Thought(text) => out.push(StreamEvent::ReasoningDelta {
                    text: text.into_owned(),
                }),
                Piece::Signed(block) => out.push(StreamEvent::Reasoning { block }),
                Piece::Call { id, name, arguments } => {
                    let index = self.calls;
                    self.calls += 1;
                    out.push(StreamEvent::ToolCallStart { index, id, name });
                    out.push(StreamEvent::ToolCallDelta { index, arguments });
                    out.push(StreamEvent::ToolCallEnd { index });
                }
            });
        }
        if let Some(reason) = candidate.finish_reason.filter(|reason| !reason.is_empty()) {
            self.finish_reason = Some(reason.into_owned());
            self.finish_message = candidate.finish_message.map(std::borrow::Cow::into_owned);
        }
        Ok(())
    }

    /// Ends the stream (the body is over): the open streamed call, `Usage`
    /// and `Stop` if a `finishReason` was seen, otherwise a decode error
    /// saying where the stream was cut. Calling it again does nothing.
    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        let Some(reason) = self.finish_reason.as_deref() else {
            return Err(LlmError::decode(self.truncation_message()));
        };
        let stop = match finish(
            Some(reason),
            self.finish_message.as_deref(),
            self.calls > 0 || self.open.is_some(),
        ) {
            Finish::Stop(stop) => stop,
            Finish::BadCall(error) => return Err(error),
        };
        self.end_open_call(out);
        if let Some(usage) = self.usage {
            out.push(StreamEvent::Usage {
                usage: usage.to_usage(),
            });
        }
        out.push(StreamEvent::Stop { reason: stop });
        Ok(())
    }

    /// Why the stream is incomplete so far: where it would be cut if it
    /// ended now. Used to explain a connection that broke.
    fn truncation_message(&self) -> String {
        if let Some(call) = &self.open {
            return format!(
                "the stream was truncated in the middle of tool call `{}` ({}, {} bytes of arguments received); \
                 the call was discarded",
                call.name, call.id, call.received
            );
        }
        if self.chunks == 0 {
            return "the stream ended before any chunk arrived".to_owned();
        }
        let calls = match self.calls {
            0 => String::new(),
            1 => ", 1 complete tool call".to_owned(),
            n => format!(", {n} complete tool calls"),
        };
        format!(
            "the stream was truncated after {} chunks ({} bytes of text{calls}) before a finishReason arrived; \
             the partial reply was discarded",
            self.chunks, self.text_bytes
        )
    }
}

/// Sets (or, for a string, extends) the value at a `partialArgs` JSON path
/// (`$.a.b`, `$.list[2].c`, `$['odd key']`) in `args`.
fn apply_partial(args: &mut Value, piece: PartialArg) -> Result<(), LlmError> {
    let path = parse_path(&piece.json_path).ok_or_else(|| {
        LlmError::decode(format!(
            "streamed function-call arguments use a JSON path this client cannot follow: {:?}",
            piece.json_path
        ))
    })?;
    let mut target = args;
    for step in path {
        target = match step {
            Step::Key(key) => {
                if !target.is_object() {
                    *target = Value::Object(Map::new());
                }
                match target {
                    Value::Object(map) => map.entry(key).or_insert(Value::Null),
                    _ => return Err(LlmError::decode("streamed arguments could not be assembled")),
                }
            }
            Step::Index(index) => {
                if !target.is_array() {
                    *target = Value::Array(Vec::new());
                }
                match target {
                    Value::Array(items) => {
                        if items.len() <= index {
                            items.resize(index + 1, Value::Null);
                        }
                        &mut items[index]
                    }
                    _ => return Err(LlmError::decode("streamed arguments could not be assembled")),
                }
            }
        };
    }
    if let Some(text) = piece.string_value {
        match target {
            Value::String(existing) => existing.push_str(&text),
            other => *other = Value::String(text),
        }
    } else if let Some(number) = piece.number_value {
        *target = Value::Number(number);
    } else if let Some(flag) = piece.bool_value {
        *target = Value::Bool(flag);
    } else if piece.null_value.is_some() {
        *target = Value::Null;
    }
    Ok(())
}

enum Step {
    Key(String),
    Index(usize),
}

fn parse_path(path: &str) -> Option<Vec<Step>> {
    let mut rest = path.strip_prefix('$')?;
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end == 0 {
                return None;
            }
            steps.push(Step::Key(after[..end].to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let inside = &after[..end];
            let quoted = inside
                .strip_prefix('\'')
                .and_then(|s| s.strip_suffix('\''))
                .or_else(|| inside.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
            match quoted {
                Some(key) => steps.push(Step::Key(key.to_owned())),
                None => steps.push(Step::Index(inside.parse().ok()?)),
            }
            rest = &after[end + 1..];
        } else {
            return None;
        }
    }
    Some(steps)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agent_core::{LlmErrorKind, StopReason, StreamAccumulator, Usage};
    use serde_json::json;

    use super::*;

    fn chunk(parts: &Value, finish: Option<&str>, usage: Option<(u64, u64)>) -> String {
        let mut candidate = json!({"content": {"role": "model", "parts": parts}});
        if let Some(finish) = finish {
            candidate["finishReason"] = json!(finish);
        }
        let mut chunk = json!({"candidates": [candidate], "modelVersion": "gemini-2.5-flash", "responseId": "r1"});
        if let Some((prompt, output)) = usage {
            chunk["usageMetadata"] = json!({"promptTokenCount": prompt, "candidatesTokenCount": output});
        }
        chunk.to_string()
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
    fn text_then_the_last_usage_then_stop() {
        let (events, end) = run(&[
            chunk(&json!([{"text": "Hel"}]), None, Some((101, 0))),
            chunk(&json!([{"text": "lo"}]), Some("STOP"), Some((27, 2))),
        ]);
        end.unwrap();
        assert_eq!(
            events,
            vec![
                StreamEvent::Started {
                    model: Some("gemini-2.5-flash".into()),
                    id: Some("r1".into())
                },
                StreamEvent::TextDelta { text: "Hel".into() },
                StreamEvent::TextDelta { text: "lo".into() },
                StreamEvent::Usage {
                    usage: Usage::new(27, 2)
                },
                StreamEvent::Stop {
                    reason: StopReason::EndTurn
                },
            ]
        );
    }

    #[test]
    fn a_finish_reason_on_every_chunk_does_not_end_the_stream_early() {
        let (events, end) = run(&[
            chunk(&json!([{"text": "a"}]), Some("STOP"), None),
            chunk(&json!([{"text": "b"}]), Some("STOP"), None),
        ]);
        end.unwrap();
        assert_eq!(assemble(&events).message.content, "ab");
    }

    #[test]
    fn whole_calls_are_emitted_together_with_their_signatures() {
        let (events, end) = run(&[chunk(
            &json!([{"functionCall": {"name": "divide", "args": {"a": 10}}, "thoughtSignature": "SIG"}]),
            Some("STOP"),
            None,
        )]);
        end.unwrap();
        let response = assemble(&events);
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(response.message.tool_calls[0].id, "gemini_synth_r1_0");
        assert_eq!(response.message.tool_calls[0].arguments, json!({"a": 10}));
        assert_eq!(response.message.reasoning[0].signature.as_deref(), Some("SIG"));
    }

    #[test]
    fn a_stream_without_a_finish_reason_is_truncated() {
        let (_, end) = run(&[chunk(&json!([{"text": "Hel"}]), None, None)]);
        let error = end.unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Decode);
        assert!(
            error.message.contains("truncated after 1 chunks (3 bytes of text)"),
            "{}",
            error.message
        );
        let (_, end) = run(&[]);
        assert!(end.unwrap_err().message.contains("before any chunk"));
    }

    #[test]
    fn a_chunk_cut_inside_a_function_call_names_the_call() {
        let whole = chunk(
            &json!([{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]),
            Some("STOP"),
            None,
        );
        let cut = &whole[..whole.find("Paris").unwrap()];
        let (_, end) = run(&[cut.to_owned()]);
        let error = end.unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Decode);
        assert!(
            error.message.contains("in the middle of tool call `get_weather`"),
            "{}",
            error.message
        );
    }

    #[test]
    fn error_chunks_and_garbage_are_errors() {
        let (events, end) = run(&[
            chunk(&json!([{"text": "test"}]), None, None),
            r#"{"error":{"code":500,"message":"Error","status":"INTERNAL"}}"#.to_owned(),
        ]);
        let error = end.unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Server);
        assert!(error.message.contains("INTERNAL: Error"), "{}", error.message);
        assert!(events.contains(&StreamEvent::TextDelta { text: "test".into() }));
        let (_, end) = run(&["{\"candidates\": oops".to_owned()]);
        assert!(end.unwrap_err().message.contains("not a GenerateContentResponse"));
    }

    #[test]
    fn a_blocked_prompt_and_a_malformed_call_are_errors() {
        let (_, end) = run(&[json!({"promptFeedback": {"blockReason": "SAFETY"}}).to_string()]);
        assert!(end.unwrap_err().message.contains("blockReason SAFETY"));
        let malformed =
            json!({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": "bad call"}]});
        let (_, end) = run(&[malformed.to_string()]);
        let error = end.unwrap_err();
        assert!(error.message.contains("bad call"), "{}", error.message);
    }

    #[test]
    fn a_malformed_call_ends_the_stream_with_a_model_output_fault() {
        let (events, end) = run(&[
            chunk(&json!([{"text": "Let me print it."}]), None, Some((12, 3))),
            json!({"candidates": [{"content": {"role": "model"}, "finishReason": "MALFORMED_FUNCTION_CALL",
                "finishMessage": "Malformed function call: print(text='hi'"}]})
            .to_string(),
        ]);
        let error = end.unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::MalformedToolCall);
        assert!(error.message.contains("MALFORMED_FUNCTION_CALL"), "{}", error.message);
        assert!(error.message.contains("print(text='hi'"), "{}", error.message);
        assert!(
            !events.iter().any(|event| matches!(event, StreamEvent::Stop { .. })),
            "no reply ends: {events:?}"
        );
        // The same finish without a message, and a stream mapper asked again.
        let mut mapper = StreamMapper::new();
        let mut events = Vec::new();
        mapper
            .push(
                &json!({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL"}]}).to_string(),
                &mut events,
            )
            .unwrap();
        assert_eq!(
            mapper.finish(&mut events).unwrap_err().kind,
            LlmErrorKind::MalformedToolCall
        );
        assert!(mapper.finish(&mut events).is_ok(), "finishing twice does nothing");
    }

    #[test]
    fn partial_args_are_assembled_into_one_call() {
        let call = |value: Value| json!([{"functionCall": value}]);
        let (events, end) = run(&[
            chunk(&call(json!({"name": "book", "willContinue": true})), None, None),
            chunk(
                &call(
                    json!({"partialArgs": [{"jsonPath": "$.city", "stringValue": "New", "willContinue": true}], "willContinue": true}),
                ),
                None,
                None,
            ),
            chunk(
                &call(json!({"partialArgs": [{"jsonPath": "$.city", "stringValue": " York"}], "willContinue": true})),
                None,
                None,
            ),
            chunk(
                &call(
                    json!({"partialArgs": [{"jsonPath": "$.stops[1].n", "numberValue": 2}, {"jsonPath": "$['ok']", "boolValue": true}], "willContinue": true}),
                ),
                None,
                None,
            ),
            chunk(&call(json!({})), Some("STOP"), None),
        ]);
        end.unwrap();
        let response = assemble(&events);
        assert_eq!(
            response.message.tool_calls[0].arguments,
            json!({"city": "New York", "stops": [null, {"n": 2}], "ok": true})
        );
        assert_eq!(response.stop_reason, StopReason::ToolUse);
    }

    #[test]
    fn a_stream_cut_while_arguments_stream_names_the_call() {
        let (events, end) = run(&[chunk(
            &json!([{"functionCall": {"name": "book", "willContinue": true}}]),
            None,
            None,
        )]);
        let error = end.unwrap_err();
        assert!(
            error.message.contains("middle of tool call `book` (gemini_synth_r1_0"),
            "{}",
            error.message
        );
        assert!(!events.iter().any(|e| matches!(e, StreamEvent::ToolCallEnd { .. })));
    }

    #[test]
    fn json_paths_parse_or_are_refused() {
        assert!(parse_path("$").is_some_and(|steps| steps.is_empty()));
        assert!(parse_path("$.a[0]['b c']").is_some_and(|steps| steps.len() == 3));
        assert!(parse_path("a.b").is_none());
        assert!(parse_path("$..a").is_none());
        assert!(parse_path("$[x]").is_none());
    }
}
