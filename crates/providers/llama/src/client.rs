//! The [`LlmClient`] over the in-process engine.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use agent_core::{
    AnsweredCalls, CancellationToken, Capabilities, ChatRequest, ChatResponse, EventStream, LlmClient, LlmError,
    Message, ResponseFormat, StreamAccumulator, StreamEvent, ToolDefinition,
};
use async_trait::async_trait;
use futures::StreamExt;
use tokio::sync::mpsc;

use crate::LlamaConfig;
use crate::choice::CallPlan;
use crate::echo::CallLimits;
use crate::engine::{DiskCacheSettings, Engine, EngineSettings, Generated, GrammarUse, Job};
use crate::models::{ModelStore, known_model};
use crate::reply::Mapper;
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
        let (path, name, identity) = model_path(&config)?;
        let settings = EngineSettings {
            path: path.clone(),
            threads: config.threads(),
            context_size: config.context_size,
            batch_size: config.batch_size,
            prompt_cache: config.prompt_cache.then(|| DiskCacheSettings {
                dir: config.prompt_cache_dir(),
                max_bytes: config.prompt_cache_mb.saturating_mul(1 << 20),
                model_identity: identity,
            }),
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

    /// The tokens of the prompt this client would send for `request`.
    /// Blocking (it waits for the request running, if any).
    pub fn count_prompt_tokens(&self, request: &ChatRequest) -> Result<usize, LlmError> {
        let prompt = self.template.render_fenced(request)?;
        self.engine()?.count_tokens(&prompt)
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
            call_limits: CallLimits {
                tools: plan.callable_names(),
                answered: Arc::new(AnsweredCalls::in_request(request)),
                max_calls: request.max_tool_calls.and_then(|max| usize::try_from(max).ok()),
            },
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

/// Where the model file is, its display name, and what identifies its
/// weights for the prompt cache (see [`file_identity`]).
fn model_path(config: &LlamaConfig) -> Result<(PathBuf, String, String), LlmError> {
    if let Some(path) = &config.model_path {
        let name = path
            .file_stem()
            .map_or_else(|| "model".to_owned(), |s| s.to_string_lossy().into_owned());
        return Ok((path.clone(), name, file_identity(path)));
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
    Ok((store.path_of(known), known.name.to_owned(), known.sha256.to_owned()))
}

/// What identifies the weights of a model file Agentry did not fetch: the
/// SHA-256 its store marker (`NAME.gguf.sha256`) records when there is one,
/// else its absolute path, size and modification time (hashing the whole
/// file at every start would cost seconds).
fn file_identity(path: &std::path::Path) -> String {
    let recorded = std::fs::read_to_string(path.with_extension("gguf.sha256"))
        .ok()
        .map(|text| text.trim().to_ascii_lowercase())
        .filter(|digest| digest.len() == 64 && digest.bytes().all(|byte| byte.is_ascii_hexdigit()));
    if let Some(digest) = recorded {
        return digest;
    }
    let absolute = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let metadata = std::fs::metadata(path).ok();
    let modified = metadata
        .as_ref()
        .and_then(|metadata| metadata.modified().ok())
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |since| since.as_nanos());
    format!(
        "file {} {} {modified}",
        absolute.display(),
        metadata.map_or(0, |metadata| metadata.len())
    )
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
            // Through a grammar from the schema (see `stream`), which admits
            // a tool call or the answer: the format goes with tools too.
            json_schema: true,
            format_with_tools: true,
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
            let alone = match newest_message_alone(request).filter(|_| self.config.newest_message_odds) {
                Some(alone) => Some(Arc::from(self.template.render_fenced(&alone)?)),
                None => None,
            };
            (
                Some(grammar),
                GrammarUse::Decide {
                    threshold,
                    lazy,
                    tools,
                    alone,
                },
            )
        } else if self.config.grammar {
            (self.grammar_for(&plan.callable), GrammarUse::Lazy)
        } else {
            (None, GrammarUse::Lazy)
        };
        let prefill = plan.prefill.as_deref().filter(|_| grammar.is_none());
        let receiver = self.job(request, &plan, grammar, grammar_use, prefill, cancel)?;
        let state = Mapper::new(
            receiver,
            cancel.clone(),
            plan.callable_names(),
            prefill,
            self.model.clone(),
            Arc::clone(&self.next_call),
        );
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

/// `request` with its newest user message as its only turn (the system
/// messages before it kept), or `None` when it has no earlier turn to
/// leave out.
fn newest_message_alone(request: &ChatRequest) -> Option<ChatRequest> {
    let newest = request
        .messages
        .iter()
        .rposition(|message| matches!(message, Message::User { .. }))?;
    let earlier_turns = request.messages[..newest]
        .iter()
        .any(|message| !matches!(message, Message::System { .. }));
    if !earlier_turns {
        return None;
    }
    let mut alone = request.clone();
    alone.messages = request.messages[..newest]
        .iter()
        .filter(|message| matches!(message, Message::System { .. }))
        .chain(&request.messages[newest..])
        .cloned()
        .collect();
    Some(alone)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn_of(messages: Vec<Message>) -> ChatRequest {
        let mut request = ChatRequest::new(messages);
        request.system = Some("You help travellers.".to_owned());
        request
    }

    #[test]
    fn the_newest_message_alone_keeps_the_system_messages_and_drops_earlier_turns() {
        let request = turn_of(vec![
            Message::system("Be brief."),
            Message::user("hi, what can you do?"),
            Message::assistant("I can look up the weather."),
            Message::user("and the weather in Oslo?"),
        ]);
        let alone = newest_message_alone(&request).expect("an earlier turn to leave out");
        assert_eq!(
            alone.messages,
            [Message::system("Be brief."), Message::user("and the weather in Oslo?")]
        );
        assert_eq!(alone.system, request.system);
        assert_eq!(alone.tools, request.tools);
    }

    #[test]
    fn a_first_message_has_nothing_to_leave_out() {
        assert_eq!(
            newest_message_alone(&turn_of(vec![Message::user("weather in Oslo?")])),
            None
        );
        assert_eq!(
            newest_message_alone(&turn_of(vec![Message::system("Be brief."), Message::user("weather?")])),
            None
        );
        assert_eq!(newest_message_alone(&turn_of(Vec::new())), None);
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
}
