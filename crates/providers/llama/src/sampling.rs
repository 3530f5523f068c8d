//! Choosing each generated token: greedy or seeded sampling, the ban on the
//! tool-call opening, and the tool-call grammar.

use llama_cpp_2::GrammarError;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;

use crate::engine::{GrammarUse, Job};

/// The samplers of one job.
///
/// Checking the grammar against every token of the vocabulary (150k for
/// Qwen) is costly, so, as llama.cpp's own `common_sampler` does, a token is
/// first chosen without the grammar and only checked against it; the whole
/// vocabulary is filtered only when that token is not allowed. Under greedy
/// decoding the result is the same token.
pub(crate) struct TokenSampler {
    /// Bans and the choice (greedy or seeded sampling), in order.
    chain: LlamaSampler,
    grammar: Option<LlamaSampler>,
}

/// The grammar sampler: from the first token, or lazy, starting when the
/// output opens a call in one of the forms of
/// [`TRIGGER_PATTERNS`](crate::grammar::TRIGGER_PATTERNS) or with one of the
/// `opening` tokens.
fn grammar_sampler(
    model: &LlamaModel,
    grammar: &str,
    from_start: bool,
    opening: &[LlamaToken],
) -> Result<LlamaSampler, GrammarError> {
    if from_start {
        LlamaSampler::grammar(model, grammar, "root")
    } else {
        let patterns: Vec<String> = crate::grammar::TRIGGER_PATTERNS
            .iter()
            .map(|pattern| (*pattern).to_owned())
            .collect();
        LlamaSampler::grammar_lazy_patterns(model, grammar, "root", &patterns, opening)
    }
}

impl TokenSampler {
    /// The samplers for `job`. `tool_call_opening`: the token(s) that open a
    /// tool call (banned when the job suppresses calls; the lazy grammar's
    /// trigger).
    /// `from_start`: the grammar applies from the first token (else lazily,
    /// if the job's [`GrammarUse`] allows).
    pub fn new(model: &LlamaModel, job: &Job, tool_call_opening: &[i32], from_start: bool) -> Self {
        let opening: Vec<LlamaToken> = tool_call_opening.iter().map(|id| LlamaToken::new(*id)).collect();
        let mut chain = Vec::new();
        if job.suppress_tool_calls && !opening.is_empty() {
            let biases: Vec<LlamaLogitBias> = opening
                .iter()
                .map(|token| LlamaLogitBias::new(*token, f32::NEG_INFINITY))
                .collect();
            chain.push(LlamaSampler::logit_bias(model.n_vocab(), &biases));
        }
        if job.temperature <= 0.0 {
            chain.push(LlamaSampler::greedy());
        } else {
            chain.push(LlamaSampler::top_k(40));
            chain.push(LlamaSampler::top_p(0.95, 1));
            chain.push(LlamaSampler::min_p(0.05, 1));
            chain.push(LlamaSampler::temp(job.temperature));
            chain.push(LlamaSampler::dist(job.seed));
        }
        let lazy = matches!(
            job.grammar_use,
            GrammarUse::Lazy | GrammarUse::Decide { lazy: true, .. }
        );
        let grammar = job
            .grammar
            .as_deref()
            .filter(|_| from_start || lazy)
            .and_then(|grammar| {
                grammar_sampler(model, grammar, from_start, &opening)
                    .inspect_err(
                        |error| tracing::warn!(%error, "the tool-call grammar was rejected; generating without it"),
                    )
                    .ok()
            });
        Self {
            chain: LlamaSampler::chain_simple(chain),
            grammar,
        }
    }

    /// The next token from the logits at `index` of the last batch, accepted
    /// into every sampler's state; `None` when no token is allowed (the
    /// generation must end).
    pub fn next(&mut self, context: &LlamaContext<'_>, index: i32) -> Option<LlamaToken> {
        let Some(grammar) = &mut self.grammar else {
            // `sample` applies the chain and accepts the token.
            return Some(self.chain.sample(context, index));
        };
        let mut candidates = LlamaTokenDataArray::from_iter(context.candidates_ith(index), false);
        candidates.apply_sampler(&mut self.chain);
        let unconstrained = candidates
            .selected_token()
            .filter(|token| grammar_allows(grammar, *token));
        let token = if let Some(token) = unconstrained {
            token
        } else {
            let mut candidates = LlamaTokenDataArray::from_iter(context.candidates_ith(index), false);
            candidates.apply_sampler(grammar);
            candidates.apply_sampler(&mut self.chain);
            let token = candidates.selected_token()?;
            // Everything may have been ruled out; never accept a banned token.
            let logit = candidates
                .data
                .iter()
                .find(|data| data.id() == token)
                .map(LlamaTokenData::logit);
            if !logit.is_some_and(f32::is_finite) {
                return None;
            }
            token
        };
        grammar.accept(token);
        self.chain.accept(token);
        Some(token)
    }
}

/// Whether `grammar`, in its current state, allows `token` next.
fn grammar_allows(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut single = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
    single.apply_sampler(grammar);
    single.data.first().is_some_and(|data| data.logit().is_finite())
}

#[cfg(test)]
pub(crate) mod tests {
    use agent_core::ToolDefinition;
    use llama_cpp_2::model::params::LlamaModelParams;
    use serde_json::json;

    use super::*;
    use crate::models::{DEFAULT_MODEL, ModelStore, known_model};

    /// Whether the default model is in the store; `false` (after saying
    /// so) when it is not, unless `AGENTRY_REQUIRE_MODEL` is set: then this
    /// fails.
    pub(crate) fn model_is_fetched() -> bool {
        let store = ModelStore::default_location();
        if known_model(DEFAULT_MODEL).is_some_and(|known| store.is_ready(known)) {
            return true;
        }
        assert!(
            std::env::var_os("AGENTRY_REQUIRE_MODEL").is_none(),
            "the model {DEFAULT_MODEL} is not in the store; run `cargo xtask fetch-model`"
        );
        agent_testing::report_skip!("the model is not fetched (run `cargo xtask fetch-model`)");
        false
    }

    /// The default model, loaded, if [`model_is_fetched`].
    pub(crate) fn fetched_model() -> Option<LlamaModel> {
        if !model_is_fetched() {
            return None;
        }
        let store = ModelStore::default_location();
        let known = known_model(DEFAULT_MODEL)?;
        let backend = crate::engine::backend().expect("backend");
        Some(
            LlamaModel::load_from_file(backend, store.path_of(known), &LlamaModelParams::default())
                .expect("the model loads"),
        )
    }

    /// A tool with one required argument and no other.
    fn weather_tool() -> ToolDefinition {
        ToolDefinition::new(
            "get_weather",
            "Weather.",
            json!({"type": "object", "properties": {"location": {"type": "string"}},
                   "required": ["location"], "additionalProperties": false}),
        )
    }

    #[test]
    fn llama_cpp_accepts_the_tool_call_grammar_eager_and_lazy() {
        let Some(model) = fetched_model() else { return };
        let tools = [weather_tool()];
        let grammar = crate::grammar::tool_call_grammar(&tools).expect("grammar");
        grammar_sampler(&model, &grammar, true, &[]).expect("the eager grammar");
        let opening = model.vocab().tokenize(b"<tool_call>", false, true);
        grammar_sampler(&model, &grammar, false, &opening).expect("the lazy grammar and its patterns");
    }

    /// Whether `grammar` (from the first token) accepts `text`, token by
    /// token, and then lets the reply end.
    fn accepts_then_ends(model: &LlamaModel, grammar: &str, text: &str) -> bool {
        let mut sampler = grammar_sampler(model, grammar, true, &[]).expect("the grammar");
        for token in model.vocab().tokenize(text.as_bytes(), false, false) {
            if !grammar_allows(&mut sampler, token) {
                return false;
            }
            sampler.accept(token);
        }
        let end = model.vocab().tokenize(b"<|im_end|>", false, true);
        end.len() == 1 && grammar_allows(&mut sampler, end[0])
    }

    #[test]
    fn a_call_grammar_reply_may_end_after_a_call_and_its_line_break() {
        let Some(model) = fetched_model() else { return };
        let tools = [weather_tool()];
        let grammar = crate::grammar::tool_call_grammar(&tools).expect("grammar");
        let call = r#"{"name": "get_weather", "arguments": {"location": "Tokyo"}}"#;
        assert!(accepts_then_ends(&model, &grammar, call));
        // Models end a call with a line break before they stop.
        assert!(accepts_then_ends(&model, &grammar, &format!("{call}\n")));
        assert!(accepts_then_ends(&model, &grammar, &format!("{call}\n{call}\n")));
        assert!(accepts_then_ends(
            &model,
            &grammar,
            &format!("<tool_call>\n{call}\n</tool_call>\n")
        ));
        // Parallel calls as a JSON array, bare or fenced and pretty-printed.
        assert!(accepts_then_ends(&model, &grammar, &format!("[{call}, {call}]")));
        assert!(accepts_then_ends(
            &model,
            &grammar,
            &format!("```json\n[\n    {call},\n    {call}\n]\n```")
        ));
        assert!(!accepts_then_ends(&model, &grammar, "[]"));
        // A half-written call may not end.
        assert!(!accepts_then_ends(&model, &grammar, &format!("{call}\n{{\"name\"")));
    }

    #[test]
    fn a_reply_that_may_not_call_a_tool_may_not_open_with_json() {
        let Some(model) = fetched_model() else { return };
        let grammar = crate::grammar::NO_CALL_GRAMMAR;
        assert!(accepts_then_ends(&model, grammar, "It is 12 °C in Paris."));
        assert!(accepts_then_ends(
            &model,
            grammar,
            "\nThe results: {\"a\": 1} and more\n"
        ));
        assert!(accepts_then_ends(&model, grammar, ""));
        assert!(!accepts_then_ends(
            &model,
            grammar,
            r#"{"name": "get_weather", "arguments": {}}"#
        ));
        assert!(!accepts_then_ends(&model, grammar, "\n {\"name\""));
        assert!(!accepts_then_ends(
            &model,
            grammar,
            "```json\n{\"name\": \"get_weather\"}\n```"
        ));
        assert!(!accepts_then_ends(&model, grammar, "```\n {\"name\""));
        assert!(!accepts_then_ends(&model, grammar, "[{\"name\": \"get_weather\"}]"));
        assert!(!accepts_then_ends(&model, grammar, "```json\n[\n  {\"name\""));
        assert!(accepts_then_ends(&model, grammar, "```python\nprint(1)\n```"));
        assert!(accepts_then_ends(&model, grammar, "`x` is a variable."));
    }

    #[test]
    fn llama_cpp_accepts_a_response_format_grammar_with_refs() {
        let Some(model) = fetched_model() else { return };
        let format = agent_core::ResponseFormat {
            name: "report".into(),
            schema: json!({
                "type": "object",
                "properties": {
                    "kind": {"enum": ["a", "b"]},
                    "inner": {"$ref": "#/$defs/Inner"}
                },
                "required": ["kind", "inner"],
                "$defs": {"Inner": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}
            }),
            strict: false,
        };
        let grammar = crate::grammar::response_format_grammar(&format).expect("grammar");
        grammar_sampler(&model, &grammar, true, &[]).expect("the response grammar");
        let tools = [ToolDefinition::new(
            "clock",
            "Time.",
            json!({"type": "object", "properties": {}}),
        )];
        let grammar = crate::grammar::tool_call_or_answer_grammar(&tools, &format).expect("grammar");
        grammar_sampler(&model, &grammar, true, &[]).expect("the call-or-answer grammar");
    }

    #[test]
    fn control_tokens_but_the_call_opening_end_the_turn() {
        let Some(model) = fetched_model() else { return };
        let vocab = model.vocab();
        let single = |text: &str| {
            let tokens = vocab.tokenize(text.as_bytes(), false, true);
            assert_eq!(tokens.len(), 1, "{text}: {tokens:?}");
            tokens[0]
        };
        let opening = [single("<tool_call>").0];
        assert!(crate::engine::ends_turn(&vocab, single("<|im_start|>"), &opening));
        assert!(crate::engine::ends_turn(&vocab, single("<|im_end|>"), &opening));
        assert!(!crate::engine::ends_turn(&vocab, single("<tool_call>"), &opening));
        assert!(!crate::engine::ends_turn(&vocab, single("Hello"), &opening));
    }
}
