//! The progress line: one line on stderr that says what the model is doing
//! while nothing else shows it — waiting for the provider's answer, a local
//! model reading the prompt, then writing — cleared as soon as the model's
//! text is printed, a tool runs (its spinner is [`Console`]'s) or the run
//! ends. It lives in the console's [`MultiProgress`], so text written
//! through the console (which suspends the bars) never runs into it.
//!
//! [`Console`]: super::Console

use std::time::Duration;

use agent_core::{AgentEvent, ModelProgress};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::count;

/// What the model is doing, as the progress line shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// A request went to the provider and nothing came back yet.
    Waiting,
    /// The provider reported how far the model got.
    Model(ModelProgress),
}

/// Below this much generation time a rate says nothing yet.
const RATE_AFTER_MS: u64 = 500;

/// The progress line's text in `phase`, for a request to `provider`'s
/// `model` (either may be unknown: empty). The waiting time is not part of
/// it: the line's own clock shows it, counting on between events.
pub(crate) fn phase_text(phase: Phase, provider: &str, model: &str) -> String {
    match phase {
        Phase::Waiting => match (provider.is_empty(), model.is_empty()) {
            (true, _) => "waiting for the model".to_owned(),
            (false, true) => format!("waiting for {provider}"),
            (false, false) => format!("waiting for {provider} ({model})"),
        },
        Phase::Model(ModelProgress::ReadingPrompt { done, total }) => {
            format!("reading the prompt {}/{total} tokens", done.min(total))
        }
        Phase::Model(ModelProgress::Writing { tokens, elapsed_ms }) => match tokens_per_second(tokens, elapsed_ms) {
            Some(rate) => format!("writing {}, {rate:.1} tokens/s", count(tokens, "token")),
            None => format!("writing {}", count(tokens, "token")),
        },
        Phase::Model(_) => "the model is working".to_owned(),
    }
}

/// The writing rate, once there is enough time to tell.
pub(crate) fn tokens_per_second(tokens: u64, elapsed_ms: u64) -> Option<f64> {
    (elapsed_ms >= RATE_AFTER_MS).then(|| tokens as f64 * 1000.0 / elapsed_ms as f64)
}

/// Which of the line's styles `phase` has; its clock restarts when this changes.
fn kind(phase: Phase) -> u8 {
    match phase {
        Phase::Waiting => 0,
        Phase::Model(ModelProgress::ReadingPrompt { .. }) => 1,
        Phase::Model(ModelProgress::Writing { .. }) => 2,
        Phase::Model(_) => 3,
    }
}

/// The progress line of the runs a console shows.
pub(crate) struct PhaseLine {
    multi: MultiProgress,
    bar: Option<ProgressBar>,
    /// The phase shown, when one is.
    shown: Option<Phase>,
    /// Who is asked (from the run's `RunStarted`).
    provider: String,
    model: String,
    /// The current request's text is being printed: the line stays away
    /// until the next request.
    text_started: bool,
}

impl PhaseLine {
    /// A line shown among `multi`'s bars.
    pub(crate) fn new(multi: MultiProgress) -> Self {
        Self {
            multi,
            bar: None,
            shown: None,
            provider: String::new(),
            model: String::new(),
            text_started: false,
        }
    }

    /// The phase shown, if any.
    #[cfg(test)]
    pub(crate) fn shown(&self) -> Option<Phase> {
        self.shown
    }

    /// Follows `event`; `text_printed` says whether the console prints the
    /// model's text (a printed text ends the line for the request).
    pub(crate) fn event(&mut self, event: &AgentEvent, text_printed: bool) {
        match event {
            AgentEvent::RunStarted { provider, model, .. } => {
                provider.clone_into(&mut self.provider);
                model.clone_into(&mut self.model);
            }
            AgentEvent::ModelRequestStarted { .. } => {
                self.text_started = false;
                self.show(Phase::Waiting);
            }
            AgentEvent::ModelProgress { progress } if !self.text_started => self.show(Phase::Model(*progress)),
            AgentEvent::TextDelta { text } if text_printed && !text.is_empty() => {
                self.text_started = true;
                self.clear();
            }
            AgentEvent::ModelRequestFinished { .. }
            | AgentEvent::ToolCallRequested { .. }
            | AgentEvent::ApprovalRequested { .. }
            | AgentEvent::ToolStarted { .. }
            | AgentEvent::Error { .. }
            | AgentEvent::RunFinished { .. } => self.clear(),
            _ => {}
        }
    }

    fn show(&mut self, phase: Phase) {
        let restyle = self.shown.is_none_or(|shown| kind(shown) != kind(phase));
        let message = phase_text(phase, &self.provider, &self.model);
        let style = |bar: &ProgressBar| {
            // The time of a wait, or of reading a long prompt (a batch can
            // take many seconds on a CPU), counts on by itself; writing
            // shows its rate instead.
            let template = if matches!(phase, Phase::Model(ModelProgress::Writing { .. })) {
                "  {spinner} {msg}"
            } else {
                "  {spinner} {msg} {elapsed}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style);
            }
            bar.reset_elapsed();
        };
        if let Some(bar) = &self.bar {
            if restyle {
                style(bar);
            }
            bar.set_message(message);
        } else {
            // Styled before it is drawn (hidden until it is one of
            // `multi`'s): no bare spinner flashes first.
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
            style(&bar);
            bar.set_message(message);
            let bar = self.multi.add(bar);
            bar.enable_steady_tick(Duration::from_millis(100));
            self.bar = Some(bar);
        }
        self.shown = Some(phase);
    }

    /// Takes the line off the screen.
    pub(crate) fn clear(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
            self.multi.remove(&bar);
        }
        self.shown = None;
    }
}

impl Drop for PhaseLine {
    /// A line left up (a run that ended without its last event) goes too.
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use agent_core::{StopReason, ToolChoice, Usage};

    use super::*;

    fn writing(tokens: u64, elapsed_ms: u64) -> Phase {
        Phase::Model(ModelProgress::Writing { tokens, elapsed_ms })
    }

    #[test]
    fn each_phase_reads_as_a_short_line() {
        assert_eq!(
            phase_text(Phase::Waiting, "openai", "gpt-4o-mini"),
            "waiting for openai (gpt-4o-mini)"
        );
        assert_eq!(phase_text(Phase::Waiting, "ollama", ""), "waiting for ollama");
        assert_eq!(phase_text(Phase::Waiting, "", ""), "waiting for the model");
        let reading = Phase::Model(ModelProgress::ReadingPrompt { done: 512, total: 2045 });
        assert_eq!(phase_text(reading, "llama", "m"), "reading the prompt 512/2045 tokens");
        assert_eq!(
            phase_text(writing(37, 3000), "llama", "m"),
            "writing 37 tokens, 12.3 tokens/s"
        );
        // Too early for a rate; one token is one.
        assert_eq!(phase_text(writing(1, 20), "llama", "m"), "writing 1 token");
        assert_eq!(phase_text(writing(4, 499), "llama", "m"), "writing 4 tokens");
    }

    #[test]
    fn the_rate_waits_for_half_a_second_of_writing() {
        assert_eq!(tokens_per_second(10, 0), None);
        assert_eq!(tokens_per_second(10, 499), None);
        assert_eq!(tokens_per_second(10, 500), Some(20.0));
        assert_eq!(tokens_per_second(0, 1000), Some(0.0));
    }

    fn line() -> PhaseLine {
        PhaseLine::new(MultiProgress::with_draw_target(ProgressDrawTarget::hidden()))
    }

    fn started() -> AgentEvent {
        AgentEvent::ModelRequestStarted {
            iteration: 1,
            tool_choice: ToolChoice::Auto,
        }
    }

    fn progress(phase: Phase) -> AgentEvent {
        let Phase::Model(progress) = phase else {
            panic!("not a model phase")
        };
        AgentEvent::ModelProgress { progress }
    }

    #[test]
    fn the_line_follows_a_request_until_its_text_is_printed() {
        let mut line = line();
        line.event(
            &AgentEvent::RunStarted {
                agent: "a".into(),
                provider: "llama".into(),
                model: "qwen".into(),
            },
            true,
        );
        assert_eq!(line.shown(), None);
        line.event(&started(), true);
        assert_eq!(line.shown(), Some(Phase::Waiting));
        let reading = Phase::Model(ModelProgress::ReadingPrompt { done: 10, total: 20 });
        line.event(&progress(reading), true);
        assert_eq!(line.shown(), Some(reading));
        line.event(&progress(writing(1, 0)), true);
        line.event(&AgentEvent::TextDelta { text: String::new() }, true);
        assert_eq!(line.shown(), Some(writing(1, 0)), "empty text changes nothing");
        line.event(&AgentEvent::TextDelta { text: "Hi".into() }, true);
        assert_eq!(line.shown(), None);
        // The model goes on writing, but its text is on the screen now.
        line.event(&progress(writing(9, 400)), true);
        assert_eq!(line.shown(), None);
        // The next request shows again.
        line.event(&started(), true);
        assert_eq!(line.shown(), Some(Phase::Waiting));
        line.event(&progress(writing(2, 100)), true);
        line.event(
            &AgentEvent::ModelRequestFinished {
                iteration: 2,
                usage: Usage::default(),
                cost_usd: None,
                stop_reason: StopReason::EndTurn,
                duration_ms: 5,
            },
            true,
        );
        assert_eq!(line.shown(), None);
    }

    #[test]
    fn text_that_is_not_printed_leaves_the_line_up_until_the_request_ends() {
        let mut line = line();
        line.event(&started(), false);
        line.event(&progress(writing(3, 100)), false);
        line.event(&AgentEvent::TextDelta { text: "Hi".into() }, false);
        line.event(&progress(writing(4, 200)), false);
        assert_eq!(line.shown(), Some(writing(4, 200)));
        line.event(
            &AgentEvent::Error {
                message: "the model failed".into(),
            },
            false,
        );
        assert_eq!(line.shown(), None);
        line.event(&started(), false);
        line.event(
            &AgentEvent::ToolStarted {
                call_id: "c".into(),
                name: "t".into(),
            },
            false,
        );
        assert_eq!(line.shown(), None, "a tool's spinner takes over");
    }
}
