//! Token and cost budgets: what a run has spent, checked after every model
//! call, and what the next call will at least take, checked before it is
//! made.
//!
//! # The estimate of the next call
//!
//! - **Input**: the previous call's input tokens (as the provider reported
//!   them) plus the messages added to the history since it was sent (the
//!   model's reply, the tool results, a forced-answer instruction), counted
//!   as one token per [`CHARS_PER_TOKEN`] characters of text, tool names and
//!   arguments. Before the first call there are no figures, and the input is
//!   taken as 0: a first call is never refused for the size of its history.
//! - **Output**: the request's `max_tokens`, the most the call may generate;
//!   nothing when unset.
//! - **Cost** (when the model's price is known): the input at the cheapest
//!   input rate (cached, when the catalog gives one) plus the output at the
//!   output rate.
//!
//! The input side errs low (four characters per token suits English prose;
//! JSON, code and most other languages take more tokens), so a call is
//! refused only when its input plus `max_tokens` cannot fit in what is left.

use std::sync::Arc;

use agent_core::{ChatRequest, Message, Pricing, Usage};

use crate::Budget;

/// Characters counted as one token when sizing messages the model has not
/// been sent yet.
pub(crate) const CHARS_PER_TOKEN: u64 = 4;

/// The least the next model call is expected to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Estimate {
    /// Input tokens: 0 before the first call.
    pub input_tokens: u64,
    /// The request's `max_tokens`, when set.
    pub max_output_tokens: Option<u64>,
}

impl Estimate {
    /// The next call's estimate, from the previous call's input tokens
    /// (`None` before the first call), the messages added since it was sent
    /// and the request's `max_tokens`.
    pub(crate) fn next_call(previous_input: Option<u64>, new_messages: &[Message], max_tokens: Option<u32>) -> Self {
        Self {
            input_tokens: previous_input.map_or(0, |tokens| tokens.saturating_add(approximate_tokens(new_messages))),
            max_output_tokens: max_tokens.map(u64::from),
        }
    }

    fn tokens(self) -> u64 {
        self.input_tokens.saturating_add(self.max_output_tokens.unwrap_or(0))
    }

    fn cost(self, pricing: &Pricing) -> f64 {
        let input_rate = pricing
            .cached_input_per_million
            .map_or(pricing.input_per_million, |cached| {
                cached.min(pricing.input_per_million)
            });
        (self.input_tokens as f64 * input_rate
            + self.max_output_tokens.unwrap_or(0) as f64 * pricing.output_per_million)
            / 1_000_000.0
    }
}

/// Why the run must stop now, having spent `usage` and `cost_usd` (`None`:
/// unknown) against `budget`.
pub(crate) fn spent_over(budget: &Budget, usage: Usage, cost_usd: Option<f64>) -> Option<String> {
    if let Some(max) = budget.max_total_tokens
        && usage.total_tokens() > max
    {
        return Some(format!(
            "used {} tokens, over the budget of {max}",
            usage.total_tokens()
        ));
    }
    if let (Some(max), Some(cost)) = (budget.max_cost_usd, cost_usd)
        && cost > max
    {
        return Some(format!("spent ${cost:.6}, over the budget of ${max:.6}"));
    }
    None
}

/// Why the next call must not be made: its `estimate` does not fit in what
/// is left of `budget` after `usage` and `cost_usd`. The cost is checked
/// only when `pricing` and the cost so far are known.
pub(crate) fn next_call_over(
    budget: &Budget,
    usage: Usage,
    cost_usd: Option<f64>,
    pricing: Option<&Pricing>,
    estimate: Estimate,
) -> Option<String> {
    if let Some(max) = budget.max_total_tokens {
        let left = max.saturating_sub(usage.total_tokens());
        let wanted = estimate.tokens();
        if wanted > left {
            let what = match estimate.max_output_tokens {
                Some(output) => format!(
                    "{wanted} tokens ({} input + up to {output} output)",
                    estimate.input_tokens
                ),
                None => format!("{wanted} input tokens"),
            };
            return Some(format!(
                "the next model call would exceed the token budget: estimated at {what}, with {left} of {max} left"
            ));
        }
    }
    if let (Some(max), Some(spent), Some(pricing)) = (budget.max_cost_usd, cost_usd, pricing) {
        let left = (max - spent).max(0.0);
        let wanted = estimate.cost(pricing);
        if wanted > left {
            let tokens = match estimate.max_output_tokens {
                Some(output) => format!("{} input + up to {output} output tokens", estimate.input_tokens),
                None => format!("{} input tokens", estimate.input_tokens),
            };
            return Some(format!(
                "the next model call would exceed the cost budget: estimated at ${wanted:.6} ({tokens}), \
                 with ${left:.6} of ${max:.6} left"
            ));
        }
    }
    None
}

/// Says that `budget`'s cost limit was not enforced, when it has one and the
/// cost is unknown (`model` has no price).
pub(crate) fn unenforced_cost_note(budget: &Budget, cost_usd: Option<f64>, model: &str) -> Option<String> {
    match (budget.max_cost_usd, cost_usd) {
        (Some(max), None) => Some(format!(
            "the cost budget of ${max:.6} was not enforced: no price is known for the model `{model}`"
        )),
        _ => None,
    }
}

/// The tokens `messages` take at least: their text, tool names and
/// arguments, one token per [`CHARS_PER_TOKEN`] characters.
pub(crate) fn approximate_tokens(messages: &[Message]) -> u64 {
    messages.iter().map(message_chars).sum::<u64>() / CHARS_PER_TOKEN
}

/// The characters `message` is sized by: its text, and the names and
/// arguments of its tool calls.
pub(crate) fn message_chars(message: &Message) -> u64 {
    let chars = match message {
        Message::System { content } | Message::User { content, .. } => content.chars().count(),
        Message::Assistant(reply) => {
            reply.content.chars().count()
                + reply
                    .tool_calls
                    .iter()
                    .map(|call| {
                        let arguments = match &call.raw_arguments {
                            Some(raw) => raw.chars().count(),
                            None => json_chars(&call.arguments),
                        };
                        call.name.chars().count() + arguments
                    })
                    .sum::<usize>()
        }
        Message::Tool(result) => result.content.chars().count(),
    };
    chars as u64
}

/// The characters of what a request sends besides its messages: the system
/// prompt and each tool's name, description and parameter schema (as JSON).
pub(crate) fn fixed_chars(request: &ChatRequest) -> u64 {
    fixed_chars_with(request, &mut SchemaChars::default())
}

/// [`fixed_chars`], with the schemas' sizes taken from `known` (and the
/// new ones added to it).
pub(crate) fn fixed_chars_with(request: &ChatRequest, known: &mut SchemaChars) -> u64 {
    let system = request.system.as_deref().map_or(0, |system| system.chars().count());
    let tools: usize = request
        .tools
        .iter()
        .map(|tool| tool.name.chars().count() + tool.description.chars().count() + known.of(&tool.input_schema))
        .sum();
    (system + tools) as u64
}

/// The JSON sizes of the tool schemas a run has sized, by schema: the same
/// (shared) schemas go into every request of a run, so each is written out
/// to be counted once, not at every model call. Holding the `Arc`s keeps a
/// known schema from being freed and another taking its address.
#[derive(Debug, Clone, Default)]
pub(crate) struct SchemaChars(Vec<(Arc<serde_json::Value>, usize)>);

impl SchemaChars {
    /// The characters of `schema` as compact JSON.
    pub(crate) fn of(&mut self, schema: &Arc<serde_json::Value>) -> usize {
        if let Some((_, chars)) = self.0.iter().find(|(known, _)| Arc::ptr_eq(known, schema)) {
            return *chars;
        }
        let chars = json_chars(schema);
        self.0.push((Arc::clone(schema), chars));
        chars
    }

    /// How many schemas have been sized.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// A cache compares equal to any other: it holds nothing a run decides on.
impl PartialEq for SchemaChars {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The characters of `value` written as compact JSON, counted as it is
/// written instead of building the text: sizing a request allocates nothing.
pub(crate) fn json_chars(value: &serde_json::Value) -> usize {
    /// Counts the characters of the UTF-8 it is given (every byte that does
    /// not continue a character).
    struct CharCounter(usize);
    impl std::io::Write for CharCounter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.iter().filter(|&&byte| byte & 0xC0 != 0x80).count();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = CharCounter(0);
    // Writing a `Value` cannot fail, and the counter never does.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

#[cfg(test)]
mod tests {
    use agent_core::{AssistantMessage, ToolCall, ToolDefinition, ToolResult};
    use serde_json::json;

    use super::*;

    #[test]
    fn a_schema_is_sized_once_per_run_and_a_new_one_is_sized_again() {
        let weather = ToolDefinition::new(
            "get_weather",
            "Weather.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        );
        let mut request = ChatRequest::new(vec![Message::user("hi")]).with_tools(vec![weather.clone()]);
        let mut known = SchemaChars::default();
        let first = fixed_chars_with(&request, &mut known);
        assert_eq!(first, fixed_chars(&request), "the memo gives the same size");
        assert_eq!(fixed_chars_with(&request, &mut known), first);
        assert_eq!(known.len(), 1, "the same schema is not sized twice");
        // Another schema (even with the same name) is sized on its own.
        request.tools = vec![ToolDefinition::new(
            "get_weather",
            "Weather.",
            json!({"type": "object"}),
        )]
        .into();
        let second = fixed_chars_with(&request, &mut known);
        assert_eq!(second, fixed_chars(&request));
        assert!(second < first, "{second} < {first}");
        assert_eq!(known.len(), 2);
    }

    fn tokens(max: u64) -> Budget {
        Budget {
            max_total_tokens: Some(max),
            ..Budget::default()
        }
    }

    #[test]
    fn json_is_sized_in_characters_as_written_without_building_it() {
        for value in [
            json!({"city": "Zürich", "n": [1, 2.5, null, true], "nested": {"quote": "a\"b", "emoji": "🙂"}}),
            json!("plain"),
            json!(12),
            json!({}),
        ] {
            assert_eq!(json_chars(&value), value.to_string().chars().count(), "{value}");
        }
    }

    #[test]
    fn messages_are_sized_by_their_text_names_and_arguments() {
        let messages = [
            Message::user("abcd"),
            Message::Assistant(AssistantMessage::with_tool_calls(
                "éé",
                vec![ToolCall::new("id-not-counted", "echo", json!({"n": 1}))],
            )),
            Message::tool(ToolResult::success("id", "echo", "{\"n\":1}")),
            Message::system("xyz"),
        ];
        // 4 + (2 + 4 + 7) + 7 + 3 = 27 characters.
        assert_eq!(approximate_tokens(&messages), 6);
        assert_eq!(approximate_tokens(&[]), 0);
    }

    #[test]
    fn before_the_first_call_only_max_tokens_counts() {
        let history = [Message::user("z".repeat(10_000))];
        let first = Estimate::next_call(None, &history, Some(100));
        assert_eq!(
            first,
            Estimate {
                input_tokens: 0,
                max_output_tokens: Some(100)
            }
        );
        assert_eq!(next_call_over(&tokens(100), Usage::default(), None, None, first), None);
        assert!(next_call_over(&tokens(99), Usage::default(), None, None, first).is_some());
        let unbounded = Estimate::next_call(None, &history, None);
        assert_eq!(
            next_call_over(&tokens(0), Usage::default(), None, None, unbounded),
            None
        );
    }

    #[test]
    fn a_call_that_fits_exactly_is_made() {
        let estimate = Estimate::next_call(Some(500), &[Message::user("abcdefgh")], Some(98));
        assert_eq!(estimate.tokens(), 600);
        assert_eq!(
            next_call_over(&tokens(1000), Usage::new(350, 50), None, None, estimate),
            None
        );
        assert_eq!(
            next_call_over(&tokens(1000), Usage::new(350, 51), None, None, estimate).as_deref(),
            Some(
                "the next model call would exceed the token budget: estimated at 600 tokens \
                 (502 input + up to 98 output), with 599 of 1000 left"
            )
        );
    }

    #[test]
    fn the_cost_estimate_prices_input_at_the_cheapest_input_rate() {
        let pricing = Pricing {
            input_per_million: 10.0,
            output_per_million: 20.0,
            cached_input_per_million: Some(1.0),
            cache_write_per_million: None,
        };
        let estimate = Estimate {
            input_tokens: 100_000,
            max_output_tokens: Some(10_000),
        };
        assert!((estimate.cost(&pricing) - 0.3).abs() < 1e-12);
        let budget = Budget {
            max_cost_usd: Some(1.0),
            ..Budget::default()
        };
        assert_eq!(
            next_call_over(&budget, Usage::default(), Some(0.7), Some(&pricing), estimate),
            None
        );
        assert!(next_call_over(&budget, Usage::default(), Some(0.71), Some(&pricing), estimate).is_some());
        // Without a price or a cost so far, there is nothing to check.
        assert_eq!(
            next_call_over(&budget, Usage::default(), Some(0.99), None, estimate),
            None
        );
        assert_eq!(
            next_call_over(&budget, Usage::default(), None, Some(&pricing), estimate),
            None
        );
    }

    #[test]
    fn the_note_is_given_only_for_a_cost_budget_without_a_cost() {
        let budget = Budget {
            max_cost_usd: Some(0.5),
            ..Budget::default()
        };
        assert!(unenforced_cost_note(&budget, None, "m").is_some_and(|note| note.contains("`m`")));
        assert_eq!(unenforced_cost_note(&budget, Some(0.1), "m"), None);
        assert_eq!(unenforced_cost_note(&Budget::default(), None, "m"), None);
    }
}
