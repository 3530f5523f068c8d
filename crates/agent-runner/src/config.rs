//! Limits and policies of a run ([`RunConfig`]), what every request
//! carries ([`ModelSettings`]), and both as one value ([`AgentConfig`]).

use std::time::Duration;

use agent_core::ToolChoice;
use serde::{Deserialize, Serialize};

/// How tools reach the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolProtocol {
    /// Native when the client supports it, the text protocol otherwise.
    #[default]
    Auto,
    /// Tool definitions in the request, structured calls in the reply.
    Native,
    /// Tools described in the system prompt, calls parsed from the reply text.
    Text,
    /// ReAct: Thought / Action / Action Input / Observation / Final Answer.
    React,
}

/// Budgets that end a run early with [`RunEnd::BudgetExceeded`](agent_core::RunEnd).
///
/// Tokens and cost are checked after every model call, and estimated before
/// each one: a call whose estimate (the previous call's input tokens, plus
/// the messages added since at four characters a token, plus the request's
/// `max_tokens`) does not fit in what is left is not made. Before the first
/// call only `max_tokens` counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Budget {
    /// Maximum input + output tokens over all model calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u64>,
    /// Maximum estimated cost in USD. Needs the model's price in the
    /// catalog: without one the budget cannot be enforced, which is logged
    /// as a warning when the run starts and said in the result's
    /// `stop_detail`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Maximum tool executions; a batch that would exceed it does not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u32>,
    /// Maximum wall-clock time of the run.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "duration_ms")]
    pub deadline: Option<Duration>,
}

/// The loop's policies. Missing fields deserialise to their defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunConfig {
    /// Model calls that may request tools before the answer is forced (default 10).
    pub max_iterations: u32,
    /// Consecutive iterations whose calls all failed before the run ends with
    /// an error (default 3).
    pub max_consecutive_failures: u32,
    /// Collapse identical calls of one reply into one (default on): it runs
    /// once and enters the history once; the record keeps every call.
    pub deduplicate_calls: bool,
    /// A reply that only repeats calls already answered in the run is not
    /// run: the model is asked once more with the calls made and the
    /// question restated, and a second such reply forces the answer
    /// (default on).
    #[serde(default = "default_reask_repeated_calls")]
    pub reask_repeated_calls: bool,
    /// At most this many calls of one reply run (default 16; 0 = no cap).
    /// Later calls are left out of the history and recorded as not run.
    #[serde(default = "default_max_calls_per_reply")]
    pub max_calls_per_reply: usize,
    /// Tools of one batch run at most this many at a time (default 8).
    pub max_concurrent_tools: usize,
    /// Tool choice of the first request; later requests use `auto` unless
    /// [`tool_choice_every_round`](Self::tool_choice_every_round) is set.
    pub tool_choice: ToolChoice,
    /// Keep [`tool_choice`](Self::tool_choice) for every request, not only
    /// the first (default off). With `required` and a
    /// [stop tool](Self::stop_at_tools) to answer through, every reply is a
    /// tool call: small local models then decode every reply under the
    /// tool-call grammar instead of answering from imagination.
    #[serde(default)]
    pub tool_choice_every_round: bool,
    /// Tools whose successful call ends the run, their result becoming the
    /// answer (default none): a `reply_to_user` tool makes answering a call
    /// like any other.
    #[serde(default)]
    pub stop_at_tools: Vec<String>,
    /// Native tool calling or the text protocol.
    pub tool_protocol: ToolProtocol,
    /// Budgets.
    pub budget: Budget,
    /// The longest tool result, in bytes, that enters the history (default
    /// 32 KiB; 0 = no limit). A longer one is cut at a character boundary
    /// and ends with a marker saying how much was left out: the history is
    /// resent on every iteration, so one huge result would cost every later
    /// request.
    #[serde(default = "default_max_tool_result_bytes")]
    pub max_tool_result_bytes: usize,
    /// Keeping the conversation within the model's context window.
    #[serde(default)]
    pub context: ContextPolicy,
    /// Check final answers against the turn's evidence (default off; the
    /// llama provider's applications turn it on).
    #[serde(default)]
    pub grounding: Grounding,
}

/// Whether a final answer is checked against the turn's evidence before it
/// is accepted ([`AgentRunResult::grounding`](agent_core::AgentRunResult)).
///
/// With [`On`](Self::On), every figure of the answer (numbers, prices,
/// dates, times, percentages, temperatures) must appear, in any usual
/// formatting, in a user message, the system prompt or a tool result
/// ([`crate::grounding`]); the answer must not repeat an instruction meant
/// for the model, and must mention a result of the calls made for it. A
/// faulty answer is re-asked once with a tool call required (when no call
/// was made), once with the results restated (when calls were made), and
/// is otherwise replaced by what the tools returned, or by "I could not
/// look that up.": an invented figure never reaches the user.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grounding {
    /// Answers are accepted as written.
    #[default]
    Off,
    /// Answers are checked, re-asked and, failing that, replaced.
    On,
}

/// When and how a run compacts its conversation to fit the model's context
/// window (see [`crate::context`] for the estimate and the steps).
///
/// Before each model call the request's size is estimated; above
/// [`compact_at`](Self::compact_at) of the window (less the request's
/// `max_tokens`), large tool results outside the
/// [recent turns](Self::keep_recent_turns) are elided, then, if that is not
/// enough, the oldest turns are summarised by the model. A provider error
/// saying the request is too long starts one compaction and one retry of the
/// call, window known or not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContextPolicy {
    /// Compaction and the retry after a context-length error (default on).
    pub enabled: bool,
    /// The model's context window in tokens (say a local model's `n_ctx`).
    /// When unset, the agent takes it from its catalog's
    /// [`ModelInfo::context_window`](agent_core::ModelInfo) for the model
    /// when a run starts; when neither knows it, nothing is compacted before
    /// a call, but a context-length error still is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_tokens: Option<u64>,
    /// The share of the window a request may fill, its `max_tokens`
    /// included, before it is compacted (default 0.8; values outside
    /// (0, 1] count as the default).
    pub compact_at: f64,
    /// Turns (a user message and everything up to the next one) kept as
    /// they are at the end of the conversation (default 4). Fewer are kept
    /// when they alone do not fit; the last user message and everything
    /// after it always are.
    pub keep_recent_turns: usize,
    /// Tool results longer than this many bytes, outside the recent turns,
    /// are the first to go: their content becomes a marker saying how long
    /// they were (default 1024).
    pub elide_results_over_bytes: usize,
    /// The most tokens a summary may take (default 1024; never more than a
    /// quarter of what a request may fill).
    pub summary_max_tokens: u32,
}

/// The default of [`ContextPolicy::compact_at`].
pub const DEFAULT_COMPACT_AT: f64 = 0.8;

impl Default for ContextPolicy {
    fn default() -> Self {
        Self {
            enabled: true,
            window_tokens: None,
            compact_at: DEFAULT_COMPACT_AT,
            keep_recent_turns: 4,
            elide_results_over_bytes: 1024,
            summary_max_tokens: 1024,
        }
    }
}

/// The default of [`RunConfig::max_tool_result_bytes`]: 32 KiB.
pub const DEFAULT_MAX_TOOL_RESULT_BYTES: usize = 32 * 1024;

/// The default of [`RunConfig::max_calls_per_reply`].
pub const DEFAULT_MAX_CALLS_PER_REPLY: usize = 16;

fn default_max_calls_per_reply() -> usize {
    DEFAULT_MAX_CALLS_PER_REPLY
}

fn default_reask_repeated_calls() -> bool {
    true
}

fn default_max_tool_result_bytes() -> usize {
    DEFAULT_MAX_TOOL_RESULT_BYTES
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            max_iterations: 10,
            max_consecutive_failures: 3,
            deduplicate_calls: true,
            reask_repeated_calls: true,
            max_calls_per_reply: DEFAULT_MAX_CALLS_PER_REPLY,
            max_concurrent_tools: 8,
            tool_choice: ToolChoice::Auto,
            tool_choice_every_round: false,
            stop_at_tools: Vec::new(),
            tool_protocol: ToolProtocol::Auto,
            budget: Budget::default(),
            max_tool_result_bytes: DEFAULT_MAX_TOOL_RESULT_BYTES,
            context: ContextPolicy::default(),
            grounding: Grounding::Off,
        }
    }
}

/// The former name of [`ModelSettings`] (every provider had a
/// `RequestOptions` too).
#[deprecated(
    since = "0.2.0",
    note = "renamed `ModelSettings`: every provider's body options were called `RequestOptions` too"
)]
pub type RequestOptions = ModelSettings;

/// What every model request of an agent carries besides the conversation
/// and the tools.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelSettings {
    /// Upper bound on generated tokens per model call (default: the
    /// provider's). With a token or cost budget, it is also what the next
    /// call is assumed to generate at most when the budget is checked
    /// before the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature, 0.0 to 2.0 (default: the provider's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Stop sequences.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Ask the provider to cache the stable prompt prefix (default off).
    pub prompt_caching: bool,
}

/// An agent's whole configuration as one serde value: the loop's policies
/// and what its requests carry. An application deserialises it (or builds
/// it from its own file format) and hands it to
/// [`AgentBuilder::agent_config`](crate::AgentBuilder::agent_config);
/// [`validate`](Self::validate) says which value is out of range.
///
/// ```
/// use agent_runner::AgentConfig;
///
/// let config: AgentConfig = serde_json::from_str(
///     r#"{"run": {"max_iterations": 4}, "request": {"temperature": 0.2}}"#,
/// )?;
/// assert_eq!(config.run.max_iterations, 4);
/// assert_eq!(config.run.max_concurrent_tools, 8); // the default
/// config.validate()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentConfig {
    /// The loop's policies.
    pub run: RunConfig,
    /// What every request carries.
    pub request: ModelSettings,
}

/// A value of an [`AgentConfig`] out of its range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid agent configuration: `{field}` {requirement}")]
pub struct InvalidConfig {
    /// The field's path in [`AgentConfig`], e.g. `run.max_iterations`.
    pub field: &'static str,
    /// What the value must be, e.g. `must be at least 1`.
    pub requirement: &'static str,
}

impl AgentConfig {
    /// Checks what the types cannot: counts that must be positive,
    /// temperature, cost and deadline ranges. The first bad value is the
    /// error.
    ///
    /// # Errors
    ///
    /// [`InvalidConfig`] naming the field and what it must be.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        let invalid = |field, requirement| Err(InvalidConfig { field, requirement });
        let (run, request, budget) = (&self.run, &self.request, &self.run.budget);
        if run.max_iterations == 0 {
            return invalid("run.max_iterations", "must be at least 1");
        }
        if run.max_concurrent_tools == 0 {
            return invalid("run.max_concurrent_tools", "must be at least 1");
        }
        if request.max_tokens == Some(0) {
            return invalid("request.max_tokens", "must be at least 1");
        }
        if request.temperature.is_some_and(|t| !(0.0..=2.0).contains(&t)) {
            return invalid("request.temperature", "must be between 0.0 and 2.0");
        }
        if budget
            .max_cost_usd
            .is_some_and(|cost| !(cost.is_finite() && cost >= 0.0))
        {
            return invalid("run.budget.max_cost_usd", "must be a non-negative number");
        }
        if budget.deadline.is_some_and(|deadline| deadline.is_zero()) {
            return invalid("run.budget.deadline", "must be a positive duration");
        }
        Ok(())
    }
}

mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[allow(clippy::ref_option)]
    pub fn serialize<S: Serializer>(value: &Option<Duration>, serializer: S) -> Result<S::Ok, S::Error> {
        value
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(deserializer)?.map(Duration::from_millis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_config_takes_the_defaults_for_the_rest() {
        let config: AgentConfig =
            serde_json::from_str(r#"{"run": {"budget": {"max_tool_calls": 3}}}"#).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.run.budget.max_tool_calls, Some(3));
        assert_eq!(config.run.max_iterations, RunConfig::default().max_iterations);
        assert_eq!(config.request, ModelSettings::default());
        let round_trip: AgentConfig =
            serde_json::from_value(serde_json::to_value(&config).unwrap_or_else(|e| panic!("{e}")))
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(round_trip, config);
    }

    #[test]
    fn out_of_range_values_are_named() {
        type Spoil = fn(&mut AgentConfig);
        let cases: [(Spoil, &str); 7] = [
            (|c| c.run.max_iterations = 0, "run.max_iterations"),
            (|c| c.run.max_concurrent_tools = 0, "run.max_concurrent_tools"),
            (|c| c.request.max_tokens = Some(0), "request.max_tokens"),
            (|c| c.request.temperature = Some(2.5), "request.temperature"),
            (|c| c.request.temperature = Some(f32::NAN), "request.temperature"),
            (|c| c.run.budget.max_cost_usd = Some(-1.0), "run.budget.max_cost_usd"),
            (|c| c.run.budget.deadline = Some(Duration::ZERO), "run.budget.deadline"),
        ];
        for (spoil, field) in cases {
            let mut config = AgentConfig::default();
            assert_eq!(config.validate(), Ok(()));
            spoil(&mut config);
            let error = config.validate().err();
            assert_eq!(error.as_ref().map(|e| e.field), Some(field), "{error:?}");
            assert!(error.is_some_and(|e| e.to_string().contains(field)));
        }
    }
}
