//! [`Console`]: renders a run's [`AgentEvent`]s for people — text as it
//! arrives, each tool call with its arguments, a spinner while it runs, its
//! result or error in brief — and, on a terminal, the progress line of what
//! the model is doing (the `progress` module).

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_core::{AgentEvent, GroundingAction, GroundingFault, RunEnd, ToolChoice};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

mod progress;

use progress::PhaseLine;

/// Where text and notes go, and whether tools get spinners.
pub struct Console {
    out: Box<dyn Write + Send>,
    notes: Option<Box<dyn Write + Send>>,
    /// Whether events are written out at all (not for a progress-only console).
    renders: bool,
    spinners: Option<MultiProgress>,
    running: HashMap<String, ProgressBar>,
    /// What the model is doing, when the spinners are on a terminal.
    phase: Option<PhaseLine>,
    at_line_start: bool,
    text_seen: bool,
    text_prefix: Option<String>,
    prefix_due: bool,
    /// The next model request is a grounding re-ask with the results
    /// restated (tools off, but not a forced final answer).
    restating: bool,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console")
            .field("spinners", &self.spinners.is_some())
            .finish_non_exhaustive()
    }
}

impl Console {
    /// A console writing everything to `out`, without spinners.
    pub fn new(out: impl Write + Send + 'static) -> Self {
        Self {
            out: Box::new(out),
            notes: None,
            renders: true,
            spinners: None,
            running: HashMap::new(),
            phase: None,
            at_line_start: true,
            text_seen: false,
            text_prefix: None,
            prefix_due: false,
            restating: false,
        }
    }

    /// Standard output, with spinners on stderr when it is a terminal.
    pub fn stdout() -> Self {
        Self::new(io::stdout()).with_spinners()
    }

    /// A console that writes nothing and only shows, on stderr when it is
    /// a terminal, the progress line and the tools' spinners: for a run
    /// printed once it ends (`run` without `--stream`, or with `--json`).
    pub fn progress_only() -> Self {
        Self {
            renders: false,
            ..Self::new(io::sink())
        }
        .with_spinners()
    }

    /// Tool calls and notes go to `notes` instead (e.g. stderr, so that
    /// stdout carries only the answer).
    pub fn with_notes(mut self, notes: impl Write + Send + 'static) -> Self {
        self.notes = Some(Box::new(notes));
        self
    }

    /// A spinner on stderr while each tool runs, and the progress line of
    /// what the model is doing (waiting for the provider, reading the
    /// prompt, writing) until its text shows: all hidden when stderr is not
    /// a terminal.
    pub fn with_spinners(mut self) -> Self {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        self.phase = (!multi.is_hidden()).then(|| PhaseLine::new(multi.clone()));
        self.spinners = Some(multi);
        self
    }

    /// Starts the model's text with `prefix` (e.g. `assistant> `): at the
    /// start of a run and again after tool lines.
    pub fn with_text_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.text_prefix = Some(prefix.into());
        self
    }

    /// Writes `text` to the output as is.
    pub fn write_text(&mut self, text: &str) -> io::Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        let out = &mut self.out;
        suspend(self.spinners.as_ref(), || {
            out.write_all(text.as_bytes())?;
            out.flush()
        })?;
        self.at_line_start = text.ends_with('\n');
        Ok(())
    }

    /// Writes a whole line to the output, starting a new line first if needed.
    pub fn line(&mut self, text: &str) -> io::Result<()> {
        self.end_line()?;
        self.write_text(&format!("{text}\n"))
    }

    /// Writes a line to the notes (the output when there are none).
    pub fn note(&mut self, text: &str) -> io::Result<()> {
        self.prefix_due = true;
        if self.notes.is_none() {
            return self.line(text);
        }
        self.end_line()?;
        if let Some(notes) = &mut self.notes {
            suspend(self.spinners.as_ref(), || {
                writeln!(notes, "{text}")?;
                notes.flush()
            })?;
        }
        Ok(())
    }

    /// Ends the current line of text, if one is open.
    pub fn end_line(&mut self) -> io::Result<()> {
        if self.at_line_start {
            return Ok(());
        }
        self.write_text("\n")
    }

    /// Whether text arrived since the last [`begin`](Self::begin).
    pub fn text_seen(&self) -> bool {
        self.text_seen
    }

    /// Starts a new run.
    pub fn begin(&mut self) {
        self.text_seen = false;
        self.prefix_due = true;
    }

    /// Renders one event.
    pub fn event(&mut self, event: &AgentEvent) -> io::Result<()> {
        self.show_progress(event);
        if !self.renders {
            return Ok(());
        }
        match event {
            AgentEvent::SceneEntered { scene, .. } => self.note(&format!("  ⇢ scene {scene}")),
            AgentEvent::TextDelta { text } => {
                self.text_seen = true;
                if self.prefix_due && !text.is_empty() {
                    self.prefix_due = false;
                    if let Some(prefix) = self.text_prefix.clone() {
                        self.end_line()?;
                        self.write_text(&prefix)?;
                    }
                }
                self.write_text(text)
            }
            AgentEvent::ToolCallRequested { call, .. } => {
                let arguments = brief(&call.arguments_text(), 160);
                self.note(&format!("  → {} {arguments}", call.name))
            }
            AgentEvent::ToolCompleted {
                name,
                result,
                is_error,
                duration_ms,
                ..
            } => {
                if *is_error {
                    self.note(&format!("  ✗ {name} failed: {}", brief(result, 200)))
                } else {
                    self.note(&format!("  ✓ {name} → {} ({duration_ms} ms)", brief(result, 160)))
                }
            }
            AgentEvent::LoopDetected { .. } => {
                self.note("  ↺ the model went round the same tool calls: asking it for a final answer")
            }
            AgentEvent::CallsRepeated { tools, .. } => self.note(&format!(
                "  ↺ the model called {} again, already answered: asking it once more with the question",
                tools.join(", ")
            )),
            AgentEvent::AnswerUngrounded {
                ungrounded,
                faults,
                action,
                ..
            } => {
                self.restating = *action == GroundingAction::ReaskedWithResults;
                self.note(&grounding_note(faults, ungrounded, *action))
            }
            AgentEvent::ModelRequestStarted {
                tool_choice: ToolChoice::None,
                ..
            } if std::mem::take(&mut self.restating) => Ok(()),
            AgentEvent::ModelRequestStarted {
                iteration,
                tool_choice: ToolChoice::None,
            } if *iteration > 1 => self.note("  … no more tool calls: asking the model for its final answer"),
            AgentEvent::Error { message } => self.note(&format!("  ! {message}")),
            AgentEvent::RunFinished { .. } => self.end_line(),
            _ => Ok(()),
        }
    }

    /// The transient part of an event: the progress line and the tools'
    /// spinners (shown whether or not the console writes anything).
    fn show_progress(&mut self, event: &AgentEvent) {
        if let Some(phase) = &mut self.phase {
            phase.event(event, self.renders);
        }
        match event {
            AgentEvent::ToolStarted { call_id, name } => {
                if let Some(multi) = &self.spinners {
                    let spinner = multi.add(ProgressBar::new_spinner());
                    if let Ok(style) = ProgressStyle::with_template("    {spinner} {msg} {elapsed}") {
                        spinner.set_style(style);
                    }
                    spinner.set_message(format!("running {name}"));
                    spinner.enable_steady_tick(Duration::from_millis(100));
                    self.running.insert(call_id.clone(), spinner);
                }
            }
            AgentEvent::ToolCompleted { call_id, .. } => {
                if let Some(spinner) = self.running.remove(call_id) {
                    spinner.finish_and_clear();
                    if let Some(multi) = &self.spinners {
                        multi.remove(&spinner);
                    }
                }
            }
            AgentEvent::RunFinished { .. } => self.clear_spinners(),
            _ => {}
        }
    }

    /// Whether the console writes the run's text and notes (a
    /// [`progress_only`](Self::progress_only) one does not).
    pub fn renders(&self) -> bool {
        self.renders
    }

    /// Removes the progress line and any spinner left running (a cancelled
    /// run, a question to the user, the end of a turn).
    pub fn clear_spinners(&mut self) {
        if let Some(phase) = &mut self.phase {
            phase.clear();
        }
        for (_, spinner) in self.running.drain() {
            spinner.finish_and_clear();
            if let Some(multi) = &self.spinners {
                multi.remove(&spinner);
            }
        }
    }
}

fn suspend<R>(spinners: Option<&MultiProgress>, f: impl FnOnce() -> R) -> R {
    match spinners {
        Some(multi) => multi.suspend(f),
        None => f(),
    }
}

/// The note of a grounding re-ask or replacement: what was wrong with the
/// answer and what happens now.
pub fn grounding_note(faults: &[GroundingFault], ungrounded: &[String], action: GroundingAction) -> String {
    let mut problems: Vec<String> = Vec::new();
    for fault in faults {
        problems.push(match fault {
            GroundingFault::UngroundedFigures => {
                format!("{} in no tool result or message", brief(&ungrounded.join(", "), 80))
            }
            GroundingFault::EchoedInstruction => "it repeats an instruction meant for the model".to_owned(),
            GroundingFault::IgnoredResults => "it mentions none of the tool results".to_owned(),
            GroundingFault::WroteACall => "it writes a tool call instead of an answer".to_owned(),
            GroundingFault::RawResult => "it copies a tool result's raw data".to_owned(),
            GroundingFault::NoAnswer => "it says nothing".to_owned(),
            GroundingFault::OmittedResults => "it leaves out some tool results".to_owned(),
        });
    }
    if action == GroundingAction::Completed {
        return format!(
            "  + the answer {}: adding what they returned",
            problems.join("; ").trim_start_matches("it ")
        );
    }
    let next = match action {
        GroundingAction::ReaskedForCall => "asking the model again, with a tool call",
        GroundingAction::ReaskedWithResults => "asking the model again, with the tool results",
        GroundingAction::Replaced => "answering with what the tools returned instead",
        GroundingAction::Completed => "adding what they returned",
    };
    format!("  ⚠ answer not grounded ({}): {next}", problems.join("; "))
}

/// `text` on one line, cut to about `max` characters with `…`.
pub fn brief(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// `n` and `noun`, plural unless `n` is 1: "1 tool call", "3 tool calls".
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A one-line description of why a run stopped, for anything but `completed`.
pub fn stop_note(cause: RunEnd, detail: Option<&str>) -> Option<String> {
    if cause == RunEnd::Completed {
        return None;
    }
    if let Some(detail) = detail.filter(|detail| !detail.is_empty()) {
        return Some(format!("[stop: {} — {detail}]", cause.as_str()));
    }
    let text = match cause {
        RunEnd::Completed => return None,
        RunEnd::MaxTokens => "the answer was cut off at the token limit; it is incomplete".to_owned(),
        RunEnd::MaxIterations => "the iteration limit was reached; the answer was forced".to_owned(),
        RunEnd::LoopDetected => "the model repeated itself; the answer was forced".to_owned(),
        RunEnd::BudgetExceeded => "a budget ran out".to_owned(),
        RunEnd::Cancelled => "cancelled".to_owned(),
        RunEnd::Error => "the run failed".to_owned(),
        RunEnd::AwaitingApproval => "tool calls wait for the user's approval".to_owned(),
        RunEnd::Guardrail => "a guardrail stopped the run".to_owned(),
    };
    Some(format!("[stop: {} — {text}]", cause.as_str()))
}

/// An in-memory writer that can be read back, for tests and embedders.
#[derive(Debug, Clone, Default)]
pub struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl SharedBuffer {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Everything written so far, as text.
    pub fn contents(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_are_singular_only_for_one() {
        assert_eq!(super::count(1u32, "tool call"), "1 tool call");
        assert_eq!(super::count(0u32, "tool call"), "0 tool calls");
        assert_eq!(super::count(2u64, "iteration"), "2 iterations");
    }

    use agent_core::ToolCall;
    use serde_json::{Map, json};

    use super::*;

    #[test]
    fn text_tools_and_results_are_rendered_in_order() {
        let buffer = SharedBuffer::new();
        let mut console = Console::new(buffer.clone());
        let events = [
            AgentEvent::TextDelta {
                text: "Let me check".into(),
            },
            AgentEvent::ToolCallRequested {
                iteration: 1,
                call: ToolCall::new("c1", "get_weather", json!({"location": "Tokyo"})),
            },
            AgentEvent::ToolStarted {
                call_id: "c1".into(),
                name: "get_weather".into(),
            },
            AgentEvent::ToolCompleted {
                call_id: "c1".into(),
                name: "get_weather".into(),
                result: "{\"temperature\": 21}".into(),
                is_error: false,
                duration_ms: 2,
                attributes: Map::new(),
            },
            AgentEvent::ToolCompleted {
                call_id: "c2".into(),
                name: "divide_by_secret_number".into(),
                result: "division by zero".into(),
                is_error: true,
                duration_ms: 0,
                attributes: Map::new(),
            },
            AgentEvent::TextDelta {
                text: "It is 21°C.".into(),
            },
        ];
        for event in &events {
            console.event(event).unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(
            buffer.contents(),
            "Let me check\n  → get_weather {\"location\":\"Tokyo\"}\n  ✓ get_weather → {\"temperature\": 21} (2 ms)\n  \
             ✗ divide_by_secret_number failed: division by zero\nIt is 21°C."
        );
        assert!(console.text_seen());
    }

    #[test]
    fn notes_can_go_elsewhere() {
        let out = SharedBuffer::new();
        let notes = SharedBuffer::new();
        let mut console = Console::new(out.clone()).with_notes(notes.clone());
        console.write_text("answer").unwrap_or_else(|e| panic!("{e}"));
        console.note("  → tool").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.contents(), "answer\n");
        assert_eq!(notes.contents(), "  → tool\n");
    }

    #[test]
    fn a_grounding_note_says_what_was_wrong_and_what_happens_now() {
        let note = grounding_note(
            &[GroundingFault::UngroundedFigures, GroundingFault::IgnoredResults],
            &["22 °C".to_owned(), "$100".to_owned()],
            GroundingAction::ReaskedForCall,
        );
        assert_eq!(
            note,
            "  ⚠ answer not grounded (22 °C, $100 in no tool result or message; it mentions none of the tool results): asking the model again, with a tool call"
        );
        assert_eq!(
            grounding_note(&[GroundingFault::OmittedResults], &[], GroundingAction::Completed),
            "  + the answer leaves out some tool results: adding what they returned"
        );
        let replaced = grounding_note(&[GroundingFault::EchoedInstruction], &[], GroundingAction::Replaced);
        assert!(
            replaced.ends_with("answering with what the tools returned instead"),
            "{replaced}"
        );
    }

    #[test]
    fn a_repeated_call_is_noted() {
        let notes = SharedBuffer::new();
        let mut console = Console::new(SharedBuffer::new()).with_notes(notes.clone());
        let event = AgentEvent::CallsRepeated {
            iteration: 2,
            tools: vec!["get_weather".to_owned()],
        };
        console.event(&event).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            notes.contents(),
            "  ↺ the model called get_weather again, already answered: asking it once more with the question\n"
        );
    }

    #[test]
    fn brief_flattens_and_cuts_on_characters() {
        assert_eq!(brief("a\n  b", 10), "a b");
        assert_eq!(brief("ééééé", 3), "ééé…");
        assert_eq!(stop_note(RunEnd::Completed, None), None);
        assert!(stop_note(RunEnd::MaxIterations, None).is_some_and(|n| n.contains("max_iterations")));
        assert!(stop_note(RunEnd::MaxTokens, None).is_some_and(|n| n.contains("max_tokens") && n.contains("cut off")));
    }
}
