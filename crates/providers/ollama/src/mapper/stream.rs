//! `/api/chat` NDJSON stream lines -> `StreamEvent`s.

use agent_core::{LlmError, StreamEvent};

use agent_http::EventMapper;
use agent_http::error::snippet;

use super::wire::{WireChunk, stop_reason, tool_call};

/// Maps each line of a streamed `/api/chat` reply to [`StreamEvent`]s.
/// Pure: feed it the lines in order, then call [`finish`](Self::finish)
/// when the body ends.
///
/// - `Started` once, from the first line (model);
/// - `TextDelta` for `message.content`, `ReasoningDelta` for `message.thinking`;
/// - tool calls arrive whole in one line: `ToolCallStart`, one
///   `ToolCallDelta` with the arguments, `ToolCallEnd`, numbered across the
///   stream, with the server's id or the same stable synthesised id as
///   [`parse_response`](super::parse_response) gives;
/// - the final `done: true` line gives `Usage` and `Stop`;
/// - an `{"error": ...}` line is an error with Ollama's message.
///
/// A body that ends without its `done` line was cut short: [`finish`](Self::finish)
/// fails with a decode error, naming the tool call whose line was cut
/// in half, if that is where it stopped.
///
/// ```
/// use agent_core::{StopReason, StreamEvent};
/// use agent_provider_ollama::mapper::{EventMapper, StreamMapper};
///
/// let mut mapper = StreamMapper::new();
/// let mut events = Vec::new();
/// mapper.push(r#"{"model":"llama3.2","message":{"role":"assistant","content":"Hi"},"done":false}"#, &mut events)?;
/// mapper.push(r#"{"model":"llama3.2","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":5,"eval_count":1}"#, &mut events)?;
/// mapper.finish(&mut events)?;
/// assert_eq!(events[1], StreamEvent::TextDelta { text: "Hi".into() });
/// assert_eq!(events.last(), Some(&StreamEvent::Stop { reason: StopReason::EndTurn }));
/// # Ok::<(), agent_core::LlmError>(())
/// ```
#[derive(Debug, Default)]
pub struct StreamMapper {
    started: bool,
    calls: usize,
    last_call: Option<String>,
    lines: usize,
    finished: bool,
    /// A line that did not parse: an error if more follows, a cut-off last
    /// line if the body ends here.
    unparsed: Option<(String, LlmError)>,
}

impl StreamMapper {
    /// A mapper at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Driven by `agent-http`'s [`map_events`](agent_http::map_events) in the client, and by hand in tests.
impl EventMapper for StreamMapper {
    /// Whether the final `done` line arrived.
    fn is_finished(&self) -> bool {
        self.finished
    }

    /// Takes one NDJSON line; appends the events it gives to `out`.
    fn push(&mut self, line: &str, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if let Some((_, error)) = self.unparsed.take() {
            return Err(error);
        }
        if self.finished {
            // Nothing follows the `done` line; ignore anything that does.
            return Ok(());
        }
        self.lines += 1;
        let chunk = match WireChunk::parse(line) {
            Ok(chunk) => chunk,
            Err(error) => {
                self.unparsed = Some((line.to_owned(), error));
                return Ok(());
            }
        };
        if let Some(error) = chunk.error() {
            return Err(error);
        }
        if !self.started {
            self.started = true;
            out.push(StreamEvent::Started {
                model: chunk.model.as_deref().map(str::to_owned),
                id: None,
            });
        }
        let usage = chunk.usage();
        if let Some(message) = chunk.message {
            if let Some(thinking) = message.thinking.filter(|text| !text.is_empty()) {
                out.push(StreamEvent::ReasoningDelta { text: thinking.into() });
            }
            if let Some(content) = message.content.filter(|text| !text.is_empty()) {
                out.push(StreamEvent::TextDelta { text: content.into() });
            }
            for call in message.tool_calls.unwrap_or_default() {
                let index = self.calls;
                self.calls += 1;
                let call = tool_call(call, chunk.created_at.as_deref(), index);
                let arguments = call.arguments_text();
                self.last_call = Some(call.name.clone());
                out.push(StreamEvent::ToolCallStart {
                    index,
                    id: call.id,
                    name: call.name,
                });
                out.push(StreamEvent::ToolCallDelta { index, arguments });
                out.push(StreamEvent::ToolCallEnd { index });
            }
        }
        if chunk.done {
            self.finished = true;
            out.push(StreamEvent::Usage { usage });
            out.push(StreamEvent::Stop {
                reason: stop_reason(chunk.done_reason.as_deref(), self.calls > 0),
            });
        }
        Ok(())
    }

    /// Ends the stream. Fails when the `done` line never came.
    fn finish(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if let Some((line, error)) = self.unparsed.take() {
            if self.finished {
                return Err(error);
            }
            return Err(LlmError::decode(format!(
                "the stream was cut off in the middle of a line{} ({} bytes received of it: {})",
                cut_call(&line).map_or_else(String::new, |name| format!(" carrying tool call `{name}`")),
                line.len(),
                snippet(line.as_bytes())
            )));
        }
        if self.finished {
            return Ok(());
        }
        Err(LlmError::decode(self.truncation_message()))
    }

    /// What a stream that stopped here lacks, for error messages.
    fn truncation_message(&self) -> String {
        if let Some((line, _)) = &self.unparsed
            && let Some(name) = cut_call(line)
        {
            return format!("the stream was cut off in the middle of tool call `{name}`");
        }
        let after = match &self.last_call {
            Some(name) => format!(", after tool call `{name}`"),
            None => String::new(),
        };
        format!(
            "the stream ended before Ollama's final `done` line ({} lines received{after})",
            self.lines
        )
    }
}

/// The name of the tool call in a line that was cut in half, if it has one.
fn cut_call(line: &str) -> Option<&str> {
    let calls = line.find("\"tool_calls\"")?;
    let rest = &line[calls..];
    let name = rest.find("\"name\"")?;
    let rest = rest[name + 6..]
        .trim_start()
        .strip_prefix(':')?
        .trim_start()
        .strip_prefix('"')?;
    let end = rest.find('"').unwrap_or(rest.len());
    Some(&rest[..end])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use agent_core::{LlmErrorKind, StopReason, Usage};

    use super::*;

    fn run(lines: &[&str]) -> (Vec<StreamEvent>, Result<(), LlmError>) {
        let mut mapper = StreamMapper::new();
        let mut events = Vec::new();
        for line in lines {
            if let Err(error) = mapper.push(line, &mut events) {
                return (events, Err(error));
            }
        }
        let outcome = mapper.finish(&mut events);
        (events, outcome)
    }

    const CALL: &str = r#"{"model":"m","created_at":"t1","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Tokyo"}}},{"function":{"name":"get_time","arguments":{}}}]},"done":false}"#;
    const DONE: &str = r#"{"model":"m","created_at":"t2","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":169,"eval_count":15}"#;

    #[test]
    fn whole_tool_calls_become_start_delta_end_and_stop_is_tool_use() {
        let (events, outcome) = run(&[CALL, DONE]);
        outcome.unwrap();
        let StreamEvent::ToolCallStart { index: 0, id, name } = &events[1] else {
            panic!("{events:?}")
        };
        assert!(id.starts_with("call_") && id.len() == 21, "{id}");
        assert_eq!(name, "get_weather");
        assert_eq!(
            events[2],
            StreamEvent::ToolCallDelta {
                index: 0,
                arguments: r#"{"city":"Tokyo"}"#.into()
            }
        );
        assert_eq!(events[3], StreamEvent::ToolCallEnd { index: 0 });
        assert!(matches!(&events[4], StreamEvent::ToolCallStart { index: 1, name, .. } if name == "get_time"));
        assert_eq!(
            events[events.len() - 2],
            StreamEvent::Usage {
                usage: Usage::new(169, 15)
            }
        );
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Stop {
                reason: StopReason::ToolUse
            })
        );
    }

    #[test]
    fn the_same_stream_gives_the_same_ids_and_two_calls_never_share_one() {
        let (first, _) = run(&[CALL, DONE]);
        let (second, _) = run(&[CALL, DONE]);
        assert_eq!(first, second);
        let ids: Vec<&String> = first
            .iter()
            .filter_map(|event| match event {
                StreamEvent::ToolCallStart { id, .. } => Some(id),
                _ => None,
            })
            .collect();
        assert_eq!(ids.len(), 2);
        assert_ne!(ids[0], ids[1]);
    }

    #[test]
    fn a_line_cut_in_the_middle_of_a_tool_call_is_an_error_naming_it() {
        let cut = &CALL[..CALL.find("Tokyo").unwrap()];
        let (_, outcome) = run(&[cut]);
        let error = outcome.unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Decode);
        assert!(error.message.contains("tool call `get_weather`"), "{error}");
    }

    #[test]
    fn a_stream_without_its_done_line_is_an_error() {
        let (_, outcome) = run(&[CALL]);
        let error = outcome.unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Decode);
        assert!(error.message.contains("`done`"), "{error}");
        assert!(error.message.contains("after tool call `get_time`"), "{error}");
    }

    #[test]
    fn a_malformed_line_in_the_middle_is_an_error() {
        let (_, outcome) = run(&["{not json", DONE]);
        assert_eq!(outcome.unwrap_err().kind, LlmErrorKind::Decode);
    }

    #[test]
    fn an_error_line_is_an_error_with_ollamas_message() {
        let (_, outcome) = run(&[
            r#"{"model":"m","message":{"content":"Yes"},"done":false}"#,
            r#"{"error":"an error was encountered while running the model"}"#,
        ]);
        let error = outcome.unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Server);
        assert_eq!(error.message, "an error was encountered while running the model");
    }

    #[test]
    fn thinking_and_length_are_mapped() {
        let (events, outcome) = run(&[
            r#"{"model":"m","message":{"thinking":"Hmm","content":""},"done":false}"#,
            r#"{"model":"m","message":{"content":"A"},"done":true,"done_reason":"length","eval_count":1}"#,
        ]);
        outcome.unwrap();
        assert_eq!(events[1], StreamEvent::ReasoningDelta { text: "Hmm".into() });
        assert_eq!(events[2], StreamEvent::TextDelta { text: "A".into() });
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Stop {
                reason: StopReason::MaxTokens
            })
        );
    }
}
