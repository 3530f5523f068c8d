//! The [`LlmClient`] over the in-process engine.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use agent_core::{
    CancellationToken, Capabilities, ChatRequest, ChatResponse, EventStream, LlmClient, LlmError, LlmErrorKind,
    ResponseFormat, StopReason, StreamAccumulator, StreamEvent, ToolDefinition, Usage,
};
use agent_parse::{StreamingToolCallFilter, ToolCallParser};
use async_trait::async_trait;
use futures::StreamExt;
use tokio::sync::mpsc;

use crate::LlamaConfig;
use crate::choice::CallPlan;
use crate::engine::{Engine, EngineSettings, Finish, Generated, GrammarUse, Job, Summary};
use crate::models::{ModelStore, known_model};
use crate::template::ChatTemplate;

/// Engines already loaded in this process, by file and settings, so that
/// every client of the same model shares one copy of the weights.
static ENGINES: OnceLock<Mutex<HashMap<EngineSettings, Weak<Engine>>>> = OnceLock::new();

/// A local GGUF model run in-process by llama.cpp. Cheap to clone; clones
/// share the model, and their requests run one at a time.
#[derive(Clone)]
pub struct LlamaClient {
    /// The engine in use; replaced by a new one if its thread has ended.
    engine: Arc<Mutex<Arc<Engine>>>,
    settings: EngineSettings,
    context_size: u32,
    tagged_calls: bool,
    template: Arc<ChatTemplate>,
    model: String,
    config: LlamaConfig,
    next_call: Arc<AtomicU64>,
    grammars: Arc<Mutex<Option<CachedGrammar>>>,
    /// The grammar of the last response format seen: (schema, grammar).
    format_grammars: Arc<Mutex<Option<CachedGrammar>>>,
}

/// The grammar of the last tool set seen: (serialised tools, grammar).
type CachedGrammar = (String, Arc<str>);

impl std::fmt::Debug for LlamaClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlamaClient")
            .field("model", &self.model)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl LlamaClient {
    /// Loads the configured model (it must already be in the store or at
    /// `model_path`; see [`ModelStore::fetch`]). Blocking: takes about a
    /// second; call it from a blocking thread in async code.
    pub fn load(config: LlamaConfig) -> Result<Self, LlmError> {
        config.validate()?;
        let (path, name) = model_path(&config)?;
        let settings = EngineSettings {
            path: path.clone(),
            threads: config.threads(),
            context_size: config.context_size,
            batch_size: config.batch_size,
        };
        let engine = shared_engine(settings.clone())?;
        let source = engine.facts().chat_template.clone().ok_or_else(|| {
            LlmError::invalid_request(format!(
                "the model {name} ({}) has no chat template in its metadata; use a chat/instruct GGUF",
                path.display()
            ))
        })?;
        let template = ChatTemplate::new(&source, &engine.facts().bos_token, &engine.facts().eos_token)?
            .guarding(engine.facts().control_texts.clone());
        Ok(Self {
            context_size: engine.facts().context_size,
            tagged_calls: !engine.facts().tool_call_opening.is_empty(),
            engine: Arc::new(Mutex::new(engine)),
            settings,
            template: Arc::new(template),
            model: name,
            config,
            next_call: Arc::new(AtomicU64::new(1)),
            grammars: Arc::default(),
            format_grammars: Arc::default(),
        })
    }

    /// The prompt this client would send for `request`.
    pub fn render_prompt(&self, request: &ChatRequest) -> Result<String, LlmError> {
        self.template.render(request)
    }

    /// The context size in tokens.
    pub fn context_size(&self) -> u32 {
        self.context_size
    }

    /// The engine, started again if its thread has ended, so that one
    /// failure does not disable the model for the rest of the process.
    pub(crate) fn engine(&self) -> Result<Arc<Engine>, LlmError> {
        let mut engine = self.engine.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if engine.has_stopped() {
            tracing::warn!(model = %self.model, "the local model's engine had stopped; starting it again");
            *engine = shared_engine(self.settings.clone())?;
        }
        Ok(Arc::clone(&engine))
    }

    /// The tool-call grammar for `tools`, built once per tool set.
    fn grammar_for(&self, tools: &[ToolDefinition]) -> Option<Arc<str>> {
        if tools.is_empty() {
            return None;
        }
        let key = serde_json::to_string(tools).ok()?;
        let mut cache = self.grammars.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((cached_key, grammar)) = cache.as_ref()
            && *cached_key == key
        {
            return Some(Arc::clone(grammar));
        }
        match crate::grammar::tool_call_grammar(tools) {
            Ok(grammar) => {
                let grammar: Arc<str> = Arc::from(grammar);
                *cache = Some((key, Arc::clone(&grammar)));
                Some(grammar)
            }
            Err(error) => {
                tracing::warn!(%error, "no tool-call grammar for these tools; generating without it");
                None
            }
        }
    }

    /// The grammar of a reply in `format`, built once per schema.
    fn format_grammar(&self, format: &ResponseFormat) -> Result<Arc<str>, LlmError> {
        self.cached_format_grammar(format.schema.to_string(), || {
            crate::grammar::response_format_grammar(format)
        })
    }

    /// The grammar of a reply that is calls of `tools` or an answer in
    /// `format`, built once per tool set and schema.
    fn call_or_answer_grammar(&self, tools: &[ToolDefinition], format: &ResponseFormat) -> Result<Arc<str>, LlmError> {
        let tools_key = serde_json::to_string(tools).map_err(|error| LlmError::invalid_request(error.to_string()))?;
        self.cached_format_grammar(format!("{tools_key}\n{}", format.schema), || {
            crate::grammar::tool_call_or_answer_grammar(tools, format)
        })
    }

    /// The last format grammar, when it was built for `key`; else a new one.
    fn cached_format_grammar(
        &self,
        key: String,
        build: impl FnOnce() -> Result<String, LlmError>,
    ) -> Result<Arc<str>, LlmError> {
        let mut cache = self
            .format_grammars
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((cached_key, grammar)) = cache.as_ref()
            && *cached_key == key
        {
            return Ok(Arc::clone(grammar));
        }
        let grammar: Arc<str> = Arc::from(build()?);
        *cache = Some((key, Arc::clone(&grammar)));
        Ok(grammar)
    }

    fn job(
        &self,
        request: &ChatRequest,
        plan: &CallPlan,
        grammar: Option<Arc<str>>,
        grammar_use: GrammarUse,
        prefill: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<mpsc::UnboundedReceiver<Generated>, LlmError> {
        let mut prompt = self.template.render_fenced(request)?;
        if let Some(prefill) = prefill {
            prompt.push_str(prefill);
        }
        let (out, receiver) = mpsc::unbounded_channel();
        self.engine()?.submit(Job {
            prompt,
            max_tokens: request.max_tokens.unwrap_or(self.config.max_tokens),
            temperature: request.temperature.unwrap_or(0.0),
            seed: self.config.seed,
            stop: request.stop.clone(),
            suppress_tool_calls: plan.suppress_tool_calls,
            grammar,
            grammar_use,
            cancel: cancel.child_token(),
            out,
        })?;
        Ok(receiver)
    }

    /// How `request`'s tool choice is enforced on this model.
    fn plan(&self, request: &ChatRequest) -> Result<CallPlan, LlmError> {
        CallPlan::for_request(request, self.tagged_calls)
    }
}

/// `request` with its system prompt asking for answers in `format`: for a
/// reply that may be a tool call, so the model knows when the answer's
/// part of the grammar applies (or the format at all, should there be no
/// grammar for it).
fn with_format_instruction(request: &ChatRequest, format: &ResponseFormat) -> ChatRequest {
    let instruction = format!(
        "When you give your final answer (not a tool call), reply with only a JSON value, \
         without prose or code fence, matching this JSON Schema:\n{}",
        format.schema
    );
    let mut request = request.clone();
    request.system = Some(match request.system.take() {
        Some(system) if !system.is_empty() => format!("{system}\n\n{instruction}"),
        _ => instruction,
    });
    request
}

/// Where the model file is, and its display name.
fn model_path(config: &LlamaConfig) -> Result<(PathBuf, String), LlmError> {
    if let Some(path) = &config.model_path {
        let name = path
            .file_stem()
            .map_or_else(|| "model".to_owned(), |s| s.to_string_lossy().into_owned());
        return Ok((path.clone(), name));
    }
    let known = known_model(&config.model).ok_or_else(|| {
        LlmError::invalid_request(format!(
            "unknown local model `{}`; known: {}; or set `model_path`",
            config.model,
            crate::models::KNOWN_MODELS
                .iter()
                .map(|m| m.name)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    let store = config
        .models_dir
        .clone()
        .map_or_else(ModelStore::default_location, ModelStore::new);
    if !store.is_ready(known) {
        return Err(LlmError::invalid_request(format!(
            "the model `{}` is not downloaded yet; run `cargo xtask fetch-model {}` (or let `agentry` fetch it)",
            known.name, known.name
        )));
    }
    Ok((store.path_of(known), known.name.to_owned()))
}

fn shared_engine(settings: EngineSettings) -> Result<Arc<Engine>, LlmError> {
    let engines = ENGINES.get_or_init(Mutex::default);
    let mut engines = engines.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(engine) = engines
        .get(&settings)
        .and_then(Weak::upgrade)
        .filter(|engine| !engine.has_stopped())
    {
        return Ok(engine);
    }
    let engine = Engine::start(settings.clone())?;
    engines.insert(settings, Arc::downgrade(&engine));
    Ok(engine)
}

#[async_trait]
impl LlmClient for LlamaClient {
    fn provider(&self) -> &'static str {
        "llama"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            native_tools: true,
            parallel_tool_calls: true,
            streaming: true,
            prompt_caching: true,
            // Through a grammar from the schema (see `stream`).
            json_schema: true,
        }
    }

    async fn complete(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<ChatResponse, LlmError> {
        let mut events = self.stream(request, cancel).await?;
        let mut accumulator = StreamAccumulator::new();
        while let Some(event) = events.next().await {
            accumulator.push(event?)?;
        }
        accumulator.finish()
    }

    async fn stream(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<EventStream, LlmError> {
        let plan = self.plan(request)?;
        // A reply in a JSON-schema format is generated under a grammar from
        // the first token: the schema's when no call can be made (no tools,
        // or `tool_choice = none`); with callable tools, one that accepts
        // either calls or the answer in the format (a required call keeps
        // the call grammar alone).
        let format = request.response_format.as_ref();
        let answer_only = format.filter(|_| plan.callable.is_empty());
        let call_or_answer = format.filter(|_| !plan.callable.is_empty() && !plan.required);
        // With tools the model is also told the format in so many words.
        let described;
        let request = match format.filter(|_| !plan.callable.is_empty()) {
            Some(format) => {
                described = with_format_instruction(request, format);
                &described
            }
            None => request,
        };
        let call_or_answer = call_or_answer.and_then(|format| {
            self.call_or_answer_grammar(&plan.callable, format)
                .inspect_err(|error| tracing::warn!(%error, "the response format is not enforced on this request"))
                .ok()
        });
        let decide = (plan.decided_by_odds && self.config.call_threshold < 1.0).then_some(self.config.call_threshold);
        let (grammar, grammar_use) = if let Some(format) = answer_only {
            (Some(self.format_grammar(format)?), GrammarUse::FromStart)
        } else if plan.suppress_tool_calls {
            (Some(Arc::from(crate::grammar::NO_CALL_GRAMMAR)), GrammarUse::FromStart)
        } else if let Some(grammar) = call_or_answer {
            (Some(grammar), GrammarUse::FromStart)
        } else if plan.required {
            // A required call always runs under the grammar.
            (self.grammar_for(&plan.callable), GrammarUse::FromStart)
        } else if let Some(threshold) = decide
            && let Some(grammar) = self.grammar_for(&plan.callable)
        {
            let lazy = self.config.grammar;
            let tools = plan.callable_names().into();
            (Some(grammar), GrammarUse::Decide { threshold, lazy, tools })
        } else if self.config.grammar {
            (self.grammar_for(&plan.callable), GrammarUse::Lazy)
        } else {
            (None, GrammarUse::Lazy)
        };
        let prefill = plan.prefill.as_deref().filter(|_| grammar.is_none());
        let receiver = self.job(request, &plan, grammar, grammar_use, prefill, cancel)?;
        let mut calls = ToolCallExtractor::new(plan.callable_names());
        // The prefilled opening of a forced call is part of the reply.
        let opening = prefill.map(|prefill| calls.push(prefill)).unwrap_or_default();
        let state = Mapper {
            receiver,
            cancel: cancel.clone(),
            calls,
            opening,
            model: self.model.clone(),
            next_call: Arc::clone(&self.next_call),
            started: false,
            done: false,
        };
        let events = futures::stream::unfold(state, Mapper::next).flat_map(|batch| {
            let items: Vec<Result<StreamEvent, LlmError>> = match batch {
                Ok(events) => events.into_iter().map(Ok).collect(),
                Err(error) => vec![Err(error)],
            };
            futures::stream::iter(items)
        });
        Ok(Box::pin(events))
    }
}

/// Turns engine output into stream events.
struct Mapper {
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
    async fn next(mut self) -> Option<(Result<Vec<StreamEvent>, LlmError>, Self)> {
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
            Some(Generated::Text(text)) => Ok(self.calls.push(&text)),
            Some(Generated::Done(summary)) => {
                self.done = true;
                Ok(self.finish(summary))
            }
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

    fn finish(&mut self, summary: Summary) -> Vec<StreamEvent> {
        tracing::debug!(
            prompt_tokens = summary.prompt_tokens,
            reused_tokens = summary.reused_tokens,
            generated_tokens = summary.generated_tokens,
            prompt_ms = summary.prompt_time.as_millis() as u64,
            generation_ms = summary.generation_time.as_millis() as u64,
            "local generation finished"
        );
        let (mut events, calls) = self.calls.finish(summary.finish == Finish::MaxTokens);
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
    fn an_unenforced_format_is_described_in_the_system_prompt() {
        let format = ResponseFormat {
            name: "answer".into(),
            schema: serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            strict: false,
        };
        let mut request = ChatRequest::new(vec![agent_core::Message::user("hi")]);
        request.system = Some("Be brief.".into());
        let described = with_format_instruction(&request, &format);
        let system = described.system.expect("a system prompt");
        assert!(
            system.starts_with("Be brief.\n\nWhen you give your final answer"),
            "{system}"
        );
        assert!(system.ends_with(&format.schema.to_string()), "{system}");
        request.system = None;
        let described = with_format_instruction(&request, &format);
        assert!(described.system.expect("a system prompt").starts_with("When you give"));
    }

    #[test]
    fn without_tools_everything_is_text() {
        let (shown, calls) = run(&[], &["{\"name\": \"clock\", \"arguments\": {}}"]);
        assert_eq!(shown, "{\"name\": \"clock\", \"arguments\": {}}");
        assert!(calls.is_empty());
    }
}
