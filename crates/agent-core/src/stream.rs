//! Streamed replies: the events a provider emits and the accumulator that
//! turns them back into a [`ChatResponse`].

use serde::{Deserialize, Serialize};

use crate::{AssistantMessage, ChatResponse, LlmError, ReasoningBlock, StopReason, ToolCall, Usage};

/// One piece of a streamed reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// The response started (model and id, when the provider says).
    Started {
        /// The model that answers.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// The provider's response id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    /// More visible text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// More reasoning text, appended to the current reasoning block.
    ReasoningDelta {
        /// The new reasoning text.
        text: String,
    },
    /// The signature of the current reasoning block.
    ReasoningSignature {
        /// The provider-issued signature.
        signature: String,
    },
    /// A complete opaque reasoning block (e.g. redacted thinking).
    Reasoning {
        /// The block.
        block: ReasoningBlock,
    },
    /// A tool call begins; `index` identifies it in later events.
    ToolCallStart {
        /// Position of the call in this response.
        index: usize,
        /// The call id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolCallDelta {
        /// The call this fragment belongs to.
        index: usize,
        /// The fragment, to be appended.
        arguments: String,
    },
    /// A tool call is complete.
    ToolCallEnd {
        /// The call that ended.
        index: usize,
    },
    /// Usage so far; a later `Usage` event replaces an earlier one.
    Usage {
        /// The usage totals of this response.
        usage: Usage,
    },
    /// The response is complete; every open tool call ends here.
    Stop {
        /// Why the model stopped.
        reason: StopReason,
    },
    /// The reply comes through a client that routes between providers:
    /// who answers, and the attempts that failed before. Sent before any
    /// other event of the reply.
    Routed {
        /// The provider that answers and the failed attempts.
        route: crate::Route,
    },
    /// What the model is doing, for progress displays (a local model reading
    /// the prompt, then writing). Carries no part of the reply: the
    /// accumulator ignores it.
    Progress {
        /// The phase and how far it got.
        progress: ModelProgress,
    },
}

/// How far a model got with a request, as a provider that knows reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModelProgress {
    /// Evaluating the prompt: `done` of `total` tokens (tokens reused from a
    /// cache count as done from the start).
    ReadingPrompt {
        /// Tokens evaluated or reused so far.
        done: u64,
        /// The prompt's tokens.
        total: u64,
    },
    /// Generating the reply: `tokens` written so far, over `elapsed_ms`
    /// milliseconds of generation.
    Writing {
        /// Tokens generated so far.
        tokens: u64,
        /// Milliseconds since generation began.
        elapsed_ms: u64,
    },
}

#[derive(Debug, Clone)]
struct PartialCall {
    index: usize,
    id: String,
    name: String,
    arguments: String,
    done: Option<ToolCall>,
}

/// Assembles [`StreamEvent`]s into a [`ChatResponse`]. Pure: no I/O.
#[derive(Debug, Clone, Default)]
pub struct StreamAccumulator {
    text: String,
    reasoning: Vec<ReasoningBlock>,
    calls: Vec<PartialCall>,
    usage: Usage,
    stop: Option<StopReason>,
    model: Option<String>,
    id: Option<String>,
    route: Option<crate::Route>,
}

impl StreamAccumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one event. Fails on events that contradict earlier ones (a
    /// fragment for a call that never started).
    pub fn push(&mut self, event: StreamEvent) -> Result<(), LlmError> {
        match event {
            StreamEvent::Started { model, id } => {
                self.model = model.or(self.model.take());
                self.id = id.or(self.id.take());
            }
            StreamEvent::TextDelta { text } => self.text.push_str(&text),
            StreamEvent::ReasoningDelta { text } => self.current_reasoning().text.push_str(&text),
            StreamEvent::ReasoningSignature { signature } => self.current_reasoning().signature = Some(signature),
            StreamEvent::Reasoning { block } => self.reasoning.push(block),
            StreamEvent::ToolCallStart { index, id, name } => {
                if self.calls.iter().any(|call| call.index == index) {
                    return Err(LlmError::decode(format!("tool call {index} started twice")));
                }
                self.calls.push(PartialCall {
                    index,
                    id,
                    name,
                    arguments: String::new(),
                    done: None,
                });
            }
            StreamEvent::ToolCallDelta { index, arguments } => {
                let call = self.open_call(index)?;
                call.arguments.push_str(&arguments);
            }
            StreamEvent::ToolCallEnd { index } => {
                let call = self.open_call(index)?;
                call.done = Some(ToolCall::from_argument_text(&call.id, &call.name, &call.arguments));
            }
            StreamEvent::Usage { usage } => self.usage = usage,
            StreamEvent::Routed { route } => self.route = Some(route),
            StreamEvent::Progress { .. } => {}
            StreamEvent::Stop { reason } => {
                for call in self.calls.iter_mut().filter(|call| call.done.is_none()) {
                    call.done = Some(ToolCall::from_argument_text(&call.id, &call.name, &call.arguments));
                }
                self.stop = Some(reason);
            }
        }
        Ok(())
    }

    /// The text received so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the stop event arrived.
    pub fn is_complete(&self) -> bool {
        self.stop.is_some()
    }

    /// The assembled response. Fails when the stream ended early (no stop
    /// event), naming a half-received tool call if there is one.
    pub fn finish(self) -> Result<ChatResponse, LlmError> {
        let Some(stop_reason) = self.stop else {
            let message = match self.calls.iter().find(|call| call.done.is_none()) {
                Some(call) => format!(
                    "the stream ended in the middle of tool call `{}` ({} bytes of arguments received)",
                    call.name,
                    call.arguments.len()
                ),
                None => "the stream ended before the response was complete".to_owned(),
            };
            return Err(LlmError::decode(message));
        };
        let tool_calls = self.calls.into_iter().filter_map(|call| call.done).collect();
        Ok(ChatResponse {
            message: AssistantMessage {
                content: self.text,
                tool_calls,
                reasoning: self.reasoning,
            },
            stop_reason,
            usage: self.usage,
            model: self.model.unwrap_or_default(),
            id: self.id,
            route: self.route,
        })
    }

    /// The reasoning block deltas go to: the last one while it is open, a
    /// new one once the last is closed (it got its signature, or it is an
    /// opaque block), so a reply with several thinking blocks keeps them apart.
    fn current_reasoning(&mut self) -> &mut ReasoningBlock {
        let closed = |block: &ReasoningBlock| block.signature.is_some() || block.data.is_some();
        if self.reasoning.last().is_none_or(closed) {
            self.reasoning.push(ReasoningBlock::default());
        }
        let last = self.reasoning.len() - 1;
        &mut self.reasoning[last]
    }

    fn open_call(&mut self, index: usize) -> Result<&mut PartialCall, LlmError> {
        self.calls
            .iter_mut()
            .find(|call| call.index == index && call.done.is_none())
            .ok_or_else(|| LlmError::decode(format!("tool call fragment for call {index}, which is not open")))
    }
}

/// Replays a complete response as the events a streaming provider would emit.
pub fn response_to_events(response: ChatResponse) -> Vec<StreamEvent> {
    let ChatResponse {
        message,
        stop_reason,
        usage,
        model,
        id,
        route,
    } = response;
    let mut events = Vec::with_capacity(5 + 3 * message.tool_calls.len());
    events.extend(route.map(|route| StreamEvent::Routed { route }));
    events.push(StreamEvent::Started {
        model: (!model.is_empty()).then_some(model),
        id,
    });
    events.extend(
        message
            .reasoning
            .into_iter()
            .map(|block| StreamEvent::Reasoning { block }),
    );
    if !message.content.is_empty() {
        events.push(StreamEvent::TextDelta { text: message.content });
    }
    for (index, call) in message.tool_calls.into_iter().enumerate() {
        let arguments = call.arguments_text();
        events.push(StreamEvent::ToolCallStart {
            index,
            id: call.id,
            name: call.name,
        });
        events.push(StreamEvent::ToolCallDelta { index, arguments });
        events.push(StreamEvent::ToolCallEnd { index });
    }
    events.push(StreamEvent::Usage { usage });
    events.push(StreamEvent::Stop { reason: stop_reason });
    events
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::LlmErrorKind;

    fn response() -> ChatResponse {
        ChatResponse {
            message: AssistantMessage {
                content: "Let me check.".into(),
                tool_calls: vec![
                    ToolCall::new("a", "get_weather", json!({"location": "Tokyo"})),
                    ToolCall::new("b", "calculator", json!({"expression": "1+1"})),
                ],
                reasoning: vec![ReasoningBlock {
                    text: "thinking".into(),
                    signature: Some("sig".into()),
                    data: None,
                    provider: None,
                }],
            },
            stop_reason: StopReason::ToolUse,
            usage: Usage::new(12, 7),
            model: "m".into(),
            id: Some("r1".into()),
            route: None,
        }
    }

    #[test]
    fn replayed_events_reassemble_to_the_same_response() {
        let mut accumulator = StreamAccumulator::new();
        for event in response_to_events(response()) {
            accumulator.push(event).unwrap_or_else(|error| panic!("{error}"));
        }
        assert_eq!(accumulator.finish().ok(), Some(response()));
    }

    #[test]
    fn a_routed_reply_keeps_its_route_through_the_events() {
        let routed = ChatResponse {
            route: Some(crate::Route {
                provider: "second".into(),
                model: "m".into(),
                failed: vec![crate::ProviderAttempt {
                    provider: "first".into(),
                    model: "m0".into(),
                    error: LlmError::new(LlmErrorKind::Overloaded, "busy"),
                    duration_ms: 3,
                }],
            }),
            ..response()
        };
        let events = response_to_events(routed.clone());
        assert!(matches!(events.first(), Some(StreamEvent::Routed { .. })), "{events:?}");
        let mut accumulator = StreamAccumulator::new();
        for event in events {
            accumulator.push(event).unwrap_or_else(|error| panic!("{error}"));
        }
        assert_eq!(accumulator.finish().ok(), Some(routed));
    }

    #[test]
    fn progress_events_between_the_reply_events_change_nothing() {
        let mut accumulator = StreamAccumulator::new();
        for (i, event) in response_to_events(response()).into_iter().enumerate() {
            let progress = ModelProgress::Writing {
                tokens: i as u64,
                elapsed_ms: 5,
            };
            accumulator
                .push(StreamEvent::Progress { progress })
                .unwrap_or_else(|error| panic!("{error}"));
            accumulator.push(event).unwrap_or_else(|error| panic!("{error}"));
        }
        assert_eq!(accumulator.finish().ok(), Some(response()));
        let reading = StreamEvent::Progress {
            progress: ModelProgress::ReadingPrompt { done: 512, total: 2045 },
        };
        assert_eq!(
            serde_json::to_value(&reading).ok(),
            Some(json!({"type": "progress", "progress": {"phase": "reading_prompt", "done": 512, "total": 2045}}))
        );
    }

    #[test]
    fn fragments_are_joined_and_malformed_arguments_kept_raw() {
        let mut acc = StreamAccumulator::new();
        let events = [
            StreamEvent::ToolCallStart {
                index: 0,
                id: "x".into(),
                name: "t".into(),
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                arguments: "{\"a\":".into(),
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                arguments: "1}".into(),
            },
            StreamEvent::ToolCallStart {
                index: 1,
                id: "y".into(),
                name: "t".into(),
            },
            StreamEvent::ToolCallDelta {
                index: 1,
                arguments: "{oops".into(),
            },
            StreamEvent::Stop {
                reason: StopReason::ToolUse,
            },
        ];
        for event in events {
            assert!(acc.push(event).is_ok());
        }
        let response = acc.finish().unwrap_or_default();
        assert_eq!(response.message.tool_calls[0].arguments, json!({"a": 1}));
        assert_eq!(response.message.tool_calls[1].arguments, serde_json::Value::Null);
        assert_eq!(response.message.tool_calls[1].raw_arguments.as_deref(), Some("{oops"));
    }

    #[test]
    fn a_stream_cut_mid_tool_call_is_a_truncation_error() {
        let mut acc = StreamAccumulator::new();
        assert!(
            acc.push(StreamEvent::ToolCallStart {
                index: 0,
                id: "x".into(),
                name: "get_weather".into()
            })
            .is_ok()
        );
        assert!(
            acc.push(StreamEvent::ToolCallDelta {
                index: 0,
                arguments: "{\"loc".into()
            })
            .is_ok()
        );
        let error = acc.finish().err().map(|e| (e.kind, e.message));
        let (kind, message) = error.unwrap_or((LlmErrorKind::Auth, String::new()));
        assert_eq!(kind, LlmErrorKind::Decode);
        assert!(message.contains("middle of tool call `get_weather`"), "{message}");
    }

    #[test]
    fn a_fragment_for_an_unknown_call_is_rejected() {
        let mut acc = StreamAccumulator::new();
        assert!(
            acc.push(StreamEvent::ToolCallDelta {
                index: 3,
                arguments: "{}".into()
            })
            .is_err()
        );
    }

    #[test]
    fn later_usage_replaces_earlier_usage() {
        let mut acc = StreamAccumulator::new();
        assert!(
            acc.push(StreamEvent::Usage {
                usage: Usage::new(10, 1)
            })
            .is_ok()
        );
        assert!(
            acc.push(StreamEvent::Usage {
                usage: Usage::new(10, 9)
            })
            .is_ok()
        );
        assert!(
            acc.push(StreamEvent::Stop {
                reason: StopReason::EndTurn
            })
            .is_ok()
        );
        assert_eq!(acc.finish().map(|r| r.usage).ok(), Some(Usage::new(10, 9)));
    }

    #[test]
    fn a_signed_reasoning_block_is_closed_and_the_next_delta_starts_another() -> Result<(), LlmError> {
        let mut accumulator = StreamAccumulator::new();
        for event in [
            StreamEvent::ReasoningDelta { text: "first ".into() },
            StreamEvent::ReasoningDelta { text: "thought".into() },
            StreamEvent::ReasoningSignature {
                signature: "sig-1".into(),
            },
            StreamEvent::Reasoning {
                block: ReasoningBlock {
                    data: Some(json!("opaque")),
                    ..ReasoningBlock::default()
                },
            },
            StreamEvent::ReasoningDelta { text: "second".into() },
            StreamEvent::ReasoningSignature {
                signature: "sig-2".into(),
            },
            StreamEvent::Stop {
                reason: StopReason::EndTurn,
            },
        ] {
            accumulator.push(event)?;
        }
        let reasoning = accumulator.finish()?.message.reasoning;
        let summary: Vec<(&str, Option<&str>, bool)> = reasoning
            .iter()
            .map(|block| (block.text.as_str(), block.signature.as_deref(), block.data.is_some()))
            .collect();
        assert_eq!(
            summary,
            [
                ("first thought", Some("sig-1"), false),
                ("", None, true),
                ("second", Some("sig-2"), false)
            ]
        );
        Ok(())
    }
}
