//! A reply's stream: the engine's output turned into stream events, with
//! the tool calls separated from the text.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agent_core::{CancellationToken, LlmError, LlmErrorKind, StopReason, StreamEvent, Usage};
use agent_parse::{StreamingToolCallFilter, ToolCallParser};
use tokio::sync::mpsc;

use crate::engine::{Finish, Generated, Summary};

/// Turns engine output into stream events.
pub(crate) struct Mapper {
    receiver: mpsc::UnboundedReceiver<Generated>,
    cancel: CancellationToken,
    calls: ToolCallExtractor,
    /// Events of the prefilled opening, sent after `Started`.
    opening: Vec<StreamEvent>,
    model: String,
    next_call: Arc<AtomicU64>,
    started: bool,
    done: bool,
}

impl Mapper {
    /// A stream over `receiver`'s output; `tools` are the names of the
    /// callable tools, `prefill` the opening the reply was started with.
    pub fn new(
        receiver: mpsc::UnboundedReceiver<Generated>,
        cancel: CancellationToken,
        tools: Vec<String>,
        prefill: Option<&str>,
        model: String,
        next_call: Arc<AtomicU64>,
    ) -> Self {
        let mut calls = ToolCallExtractor::new(tools);
        // The prefilled opening of a forced call is part of the reply.
        let opening = prefill.map(|prefill| calls.push(prefill)).unwrap_or_default();
        Self {
            receiver,
            cancel,
            calls,
            opening,
            model,
            next_call,
            started: false,
            done: false,
        }
    }

    /// The next batch of events; `None` after the last.
    pub async fn next(mut self) -> Option<(Result<Vec<StreamEvent>, LlmError>, Self)> {
        if self.done {
            return None;
        }
        if !self.started {
            self.started = true;
            let mut events = vec![StreamEvent::Started {
                model: Some(self.model.clone()),
                id: None,
            }];
            events.append(&mut self.opening);
            return Some((Ok(events), self));
        }
        let generated = tokio::select! {
            biased;
            () = self.cancel.cancelled() => {
                self.done = true;
                return Some((Err(LlmError::cancelled().with_provider("llama")), self));
            }
            generated = self.receiver.recv() => generated,
        };
        let output = match generated {
            Some(Generated::Progress(progress)) => Ok(vec![StreamEvent::Progress { progress }]),
            Some(Generated::Text(text)) => Ok(self.calls.push(&text)),
            Some(Generated::Done(summary)) => Ok(self.finish(summary)),
            Some(Generated::Failed(error)) => {
                self.done = true;
                Err(error)
            }
            None => {
                self.done = true;
                Err(LlmError::new(
                    LlmErrorKind::Server,
                    "the model thread stopped mid-generation",
                ))
            }
        };
        Some((output, self))
    }

    /// The events that end a reply.
    fn finish(&mut self, summary: Summary) -> Vec<StreamEvent> {
        tracing::debug!(
            prompt_tokens = summary.prompt_tokens,
            reused_tokens = summary.reused_tokens,
            loaded_tokens = summary.loaded_tokens,
            generated_tokens = summary.generated_tokens,
            prompt_ms = summary.prompt_time.as_millis() as u64,
            generation_ms = summary.generation_time.as_millis() as u64,
            "local generation finished"
        );
        let (mut events, calls) = self.calls.finish(summary.finish == Finish::MaxTokens);
        self.done = true;
        for (index, (name, arguments)) in calls.iter().enumerate() {
            let id = format!("call_{}", self.next_call.fetch_add(1, Ordering::Relaxed));
            events.push(StreamEvent::ToolCallStart {
                index,
                id,
                name: name.clone(),
            });
            events.push(StreamEvent::ToolCallDelta {
                index,
                arguments: arguments.clone(),
            });
            events.push(StreamEvent::ToolCallEnd { index });
        }
        events.push(StreamEvent::Usage { usage: usage(&summary) });
        let reason = match summary.finish {
            _ if !calls.is_empty() => StopReason::ToolUse,
            Finish::EndOfGeneration => StopReason::EndTurn,
            Finish::MaxTokens => StopReason::MaxTokens,
            Finish::StopSequence => StopReason::StopSequence,
        };
        events.push(StreamEvent::Stop { reason });
        events
    }
}

/// Usage of one job: reused prefix tokens are reported as cache reads.
fn usage(summary: &Summary) -> Usage {
    Usage {
        input_tokens: summary.prompt_tokens,
        output_tokens: summary.generated_tokens,
        cache_read_tokens: summary.reused_tokens,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
    }
}

/// Separates tool calls from generated text as it streams: tagged calls are
/// hidden at once; a reply that starts like JSON, a code fence or a tag is
/// held back until the end, because small models write their calls that way
/// (in a fence, bare, or wrapped in tags of their own such as `<tools>`).
struct ToolCallExtractor {
    tools: Vec<String>,
    filter: StreamingToolCallFilter,
    text: String,
    shown: String,
    holding: Option<bool>,
}

impl ToolCallExtractor {
    fn new(tools: Vec<String>) -> Self {
        Self {
            tools,
            filter: StreamingToolCallFilter::new(),
            text: String::new(),
            shown: String::new(),
            holding: None,
        }
    }

    fn push(&mut self, piece: &str) -> Vec<StreamEvent> {
        self.text.push_str(piece);
        if self.tools.is_empty() {
            return vec![StreamEvent::TextDelta { text: piece.to_owned() }];
        }
        let holding = *self.holding.get_or_insert_with(|| {
            let start = self.text.trim_start();
            if start.is_empty() {
                return true;
            }
            start.starts_with(['{', '[', '<']) || start.starts_with("```")
        });
        if self.text.trim_start().is_empty() {
            self.holding = None;
            return Vec::new();
        }
        if holding {
            return Vec::new();
        }
        let visible = self.filter.push(piece);
        self.show(visible)
    }

    /// The last text events and the calls, as (name, JSON argument text).
    /// `cut`: the generation hit `max_tokens`; a held-back reply that was
    /// starting a tool call is then dropped, never released as text.
    fn finish(&mut self, cut: bool) -> (Vec<StreamEvent>, Vec<(String, String)>) {
        if self.tools.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let reply = ToolCallParser::new()
            .known_tools(self.tools.iter().cloned())
            .parse(&self.text);
        let mut events = Vec::new();
        if let Some(rest) = reply.text.strip_prefix(self.shown.as_str()) {
            // A cut reply that was held back is dropped when it was starting a
            // call, or is what trails the calls it held (a call cut short).
            if cut && self.holding == Some(true) && (self.starts_a_call(rest) || !reply.calls.is_empty()) {
                tracing::warn!(
                    fragment = %rest.chars().take(120).collect::<String>(),
                    "max_tokens cut a tool call short; the fragment is dropped, not shown as text"
                );
            } else if !rest.is_empty() {
                events.push(StreamEvent::TextDelta { text: rest.to_owned() });
            }
        }
        let calls = reply
            .calls
            .into_iter()
            .map(|call| {
                let arguments = call.raw_arguments.clone().unwrap_or_else(|| call.arguments.to_string());
                (call.name, arguments)
            })
            .collect();
        (events, calls)
    }

    /// Whether held-back `text` is the start of a tool call: a `"name"`
    /// key or one of the tools' names inside JSON or a code fence.
    fn starts_a_call(&self, text: &str) -> bool {
        let start = text.trim_start();
        let shaped = start.starts_with(['{', '[', '<']) || start.starts_with("```");
        shaped && (start.contains("\"name\"") || self.tools.iter().any(|tool| start.contains(&format!("\"{tool}\""))))
    }

    fn show(&mut self, visible: String) -> Vec<StreamEvent> {
        if visible.is_empty() {
            return Vec::new();
        }
        self.shown.push_str(&visible);
        vec![StreamEvent::TextDelta { text: visible }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_cut(tools: &[&str], pieces: &[&str], cut: bool) -> (String, Vec<(String, String)>) {
        let mut extractor = ToolCallExtractor::new(tools.iter().map(|t| (*t).to_owned()).collect());
        let mut shown = String::new();
        let mut collect = |events: Vec<StreamEvent>| {
            for event in events {
                if let StreamEvent::TextDelta { text } = event {
                    shown.push_str(&text);
                }
            }
        };
        for piece in pieces {
            collect(extractor.push(piece));
        }
        let (events, calls) = extractor.finish(cut);
        collect(events);
        (shown, calls)
    }

    fn run(tools: &[&str], pieces: &[&str]) -> (String, Vec<(String, String)>) {
        run_cut(tools, pieces, false)
    }

    /// A finished job's output: `pieces` of text, then `Done`.
    fn job(pieces: &[&str], generated_tokens: u64) -> mpsc::UnboundedReceiver<Generated> {
        let (out, receiver) = mpsc::unbounded_channel();
        for piece in pieces {
            out.send(Generated::Text((*piece).to_owned())).expect("open channel");
        }
        let summary = Summary {
            finish: Finish::EndOfGeneration,
            prompt_tokens: 100,
            reused_tokens: 90,
            loaded_tokens: 0,
            generated_tokens,
            prompt_time: std::time::Duration::ZERO,
            generation_time: std::time::Duration::ZERO,
        };
        out.send(Generated::Done(summary)).expect("open channel");
        receiver
    }

    const SYDNEY: &str = "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Sydney\"}}";
    const RATE: &str = "{\"name\": \"get_exchange_rate\", \"arguments\": {\"from\": \"AUD\", \"to\": \"USD\"}}";

    /// The events of a reply of `pieces`, started with `prefill`.
    async fn reply(prefill: Option<&str>, pieces: &[&str]) -> Vec<StreamEvent> {
        let mapper = Mapper::new(
            job(pieces, 7),
            CancellationToken::new(),
            vec!["get_weather".to_owned(), "get_exchange_rate".to_owned()],
            prefill,
            "qwen".to_owned(),
            Arc::new(AtomicU64::new(0)),
        );
        let mut events = Vec::new();
        let mut state = Some(mapper);
        while let Some((batch, next)) = match state.take() {
            Some(mapper) => mapper.next().await,
            None => None,
        } {
            events.extend(batch.expect("no error"));
            state = Some(next);
        }
        events
    }

    #[tokio::test]
    async fn a_reply_streams_its_text_then_its_calls_usage_and_stop() {
        let events = reply(None, &[SYDNEY, "\n", RATE]).await;
        assert!(
            matches!(events.first(), Some(StreamEvent::Started { .. })),
            "{events:?}"
        );
        let names: Vec<&str> = events
            .iter()
            .filter_map(|event| match event {
                StreamEvent::ToolCallStart { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(names, ["get_weather", "get_exchange_rate"]);
        let output_tokens: Vec<u64> = events
            .iter()
            .filter_map(|event| match event {
                StreamEvent::Usage { usage } => Some(usage.output_tokens),
                _ => None,
            })
            .collect();
        assert_eq!(output_tokens, [7], "{events:?}");
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Stop {
                reason: StopReason::ToolUse
            })
        );

        let events = reply(None, &["It is 20 °C in Sydney."]).await;
        let text: String = events
            .iter()
            .filter_map(|event| match event {
                StreamEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "It is 20 °C in Sydney.");
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Stop {
                reason: StopReason::EndTurn
            })
        );
    }

    #[tokio::test]
    async fn a_prefilled_reply_is_read_from_its_prefill_on() {
        let prefill = "{\"name\": \"";
        let events = reply(Some(prefill), &[&SYDNEY[prefill.len()..]]).await;
        let arguments: Vec<&str> = events
            .iter()
            .filter_map(|event| match event {
                StreamEvent::ToolCallDelta { arguments, .. } => Some(arguments.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(arguments, [r#"{"location":"Sydney"}"#]);
    }

    #[test]
    fn a_call_cut_by_max_tokens_is_never_shown_as_text() {
        let pieces = ["{\"name\": \"get_weather\", \"argum", "ents\": {\"location\": \"Aus"];
        let (shown, calls) = run_cut(&["get_weather"], &pieces, true);
        assert_eq!(shown, "");
        assert!(calls.is_empty());
        let fenced = ["```json\n[{\"get_weather\": {\"loc"];
        assert_eq!(run_cut(&["get_weather"], &fenced, true).0, "");
        // Complete calls before the cut are kept; the cut one is dropped
        // even when too little of it was written to name a tool.
        let short = ["{\"name\": \"get_weather\", \"arguments\": {}}\n{\""];
        let (shown, calls) = run_cut(&["get_weather"], &short, true);
        assert_eq!((shown.as_str(), calls.len()), ("", 1));
        let two = [
            "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Oslo\"}}\n",
            "{\"name\": \"get_weather\", \"arguments\": {\"loc",
        ];
        let (shown, calls) = run_cut(&["get_weather"], &two, true);
        assert_eq!(shown, "");
        assert_eq!(calls.len(), 1, "{calls:?}");
    }

    #[test]
    fn complete_calls_in_a_fence_cut_by_max_tokens_are_kept() {
        let call = "{\"name\": \"calculator\", \"arguments\": {\"expression\": \"17 * 23\"}}";
        let pieces = ["```json\n", call, "\n", call, "\n{\"name\":"];
        let (shown, calls) = run_cut(&["calculator"], &pieces, true);
        assert_eq!(shown, "");
        assert!(!calls.is_empty(), "{calls:?}");
        assert!(calls.iter().all(|(name, _)| name == "calculator"), "{calls:?}");
    }

    #[test]
    fn held_back_text_that_is_not_a_call_is_still_shown_when_cut() {
        let pieces = ["```\nls -la\n", "cd /tm"];
        assert_eq!(run_cut(&["get_weather"], &pieces, true).0, "```\nls -la\ncd /tm");
        // Without a cut, an unparseable held-back reply is text, as before.
        let pieces = ["{\"name\": \"get_weather\", \"arguments\": {\"loc"];
        assert_eq!(run(&["get_weather"], &pieces).0, pieces[0]);
    }

    #[test]
    fn bare_json_calls_from_small_models_are_held_back_and_parsed() {
        let (shown, calls) = run(
            &["calculator"],
            &[
                "```json\n{\"name\": \"calcul",
                "ator\", \"arguments\": {\"expression\": \"1234 * 5678\"}}\n```",
            ],
        );
        assert_eq!(shown, "");
        assert_eq!(
            calls,
            [("calculator".to_owned(), r#"{"expression":"1234 * 5678"}"#.to_owned())]
        );
    }

    #[test]
    fn calls_in_made_up_wrapper_tags_show_no_markup() {
        let (shown, calls) = run(
            &["get_weather"],
            &[
                "<tools>\n{\"name\": \"get_weather\", ",
                "\"arguments\": {\"location\": \"Tokyo\"}}\n</tools>",
            ],
        );
        assert_eq!(shown, "");
        assert_eq!(calls.len(), 1);
    }

    #[test]
    fn tagged_calls_are_hidden_and_prose_streams() {
        let (shown, calls) = run(
            &["clock"],
            &[
                "Let me check. <tool_",
                "call>{\"name\": \"clock\", \"arguments\": {}}</tool_call>",
            ],
        );
        assert_eq!(shown, "Let me check.");
        assert_eq!(calls.len(), 1);
    }

    #[test]
    fn without_tools_everything_is_text() {
        let (shown, calls) = run(&[], &["{\"name\": \"clock\", \"arguments\": {}}"]);
        assert_eq!(shown, "{\"name\": \"clock\", \"arguments\": {}}");
        assert!(calls.is_empty());
    }
}
