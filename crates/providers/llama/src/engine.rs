//! The inference engine: one thread that owns the model's context, runs
//! requests one at a time, reuses the KV cache across requests that share a
//! prefix, and streams decoded text back.

use std::num::NonZeroU32;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use agent_core::{CancellationToken, LlmError, LlmErrorKind, ModelProgress};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::token::LlamaToken;
use tokio::sync::mpsc::UnboundedSender;

use crate::echo::{CallLimits, CallWatch};
use crate::prompt_cache::{Identity, PromptCache};
use crate::sampling::TokenSampler;
use crate::special::{self, ControlTexts};
use crate::text::Text;

/// llama.cpp's backend may be initialised once per process; every engine shares it.
static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();

/// The process's llama.cpp backend, initialised on first use. Code that uses
/// `llama-cpp-2` directly next to this crate must take the backend from here:
/// llama.cpp can be initialised only once per process.
pub fn backend() -> Result<&'static LlamaBackend, LlmError> {
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|error| error.to_string())
        })
        .as_ref()
        .map_err(|error| LlmError::new(LlmErrorKind::Server, format!("llama.cpp failed to start: {error}")))
}

/// How to load a model and size its context.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct EngineSettings {
    pub path: PathBuf,
    pub threads: usize,
    pub context_size: u32,
    pub batch_size: u32,
    /// Where prompts' KV state is kept between processes; `None`: nowhere.
    pub prompt_cache: Option<DiskCacheSettings>,
}

/// The prompt cache on disk of an engine.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct DiskCacheSettings {
    pub dir: PathBuf,
    pub max_bytes: u64,
    /// The model file's SHA-256 (or, for a file of unknown digest, its
    /// path, size and modification time).
    pub model_identity: String,
}

/// A prompt is read from the disk cache only when that saves at least this
/// many tokens over what the engine's own cache holds.
const MIN_DISK_GAIN: usize = 64;
/// The state is saved to disk when it holds at least this many tokens the
/// last saved or loaded entry lacks.
const MIN_DISK_SAVE: usize = 64;

/// What the engine learned from the model file.
#[derive(Debug, Clone)]
pub(crate) struct ModelFacts {
    pub chat_template: Option<String>,
    pub bos_token: String,
    pub eos_token: String,
    pub context_size: u32,
    /// Token sequences of the tool-call opening, suppressed when tools are off.
    pub tool_call_opening: Vec<i32>,
    /// The texts of the control tokens, guarded in untrusted prompt text.
    pub control_texts: ControlTexts,
}

/// One generation request.
pub(crate) struct Job {
    pub prompt: String,
    pub max_tokens: u32,
    pub temperature: f32,
    pub seed: u32,
    pub stop: Vec<String>,
    /// Forbid the tool-call opening token (tool_choice = none).
    pub suppress_tool_calls: bool,
    /// A GBNF grammar for tool calls, so a started call always has
    /// schema-valid arguments.
    pub grammar: Option<Arc<str>>,
    /// When the grammar applies.
    pub grammar_use: GrammarUse,
    /// What ends a reply early once its calls are written (with a grammar).
    pub call_limits: CallLimits,
    pub cancel: CancellationToken,
    pub out: UnboundedSender<Generated>,
}

/// When a job's grammar applies.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum GrammarUse {
    /// From the first token: the reply is a call (or the requested format).
    FromStart,
    /// From the first call opening the model writes.
    Lazy,
    /// From the first token when the model's odds of starting a call of
    /// one of `tools` there are at least `threshold`; otherwise lazily
    /// (`lazy`) or not at all. Only with a grammar.
    Decide {
        /// The probability from which the call is taken.
        threshold: f32,
        /// Apply the grammar lazily when the call is not taken.
        lazy: bool,
        /// Names of the tools that may be called.
        tools: Arc<[String]>,
        /// The prompt with the conversation's newest user message alone
        /// (its earlier turns left out): the odds are also read there,
        /// and the call is taken when either clears the threshold, so
        /// earlier turns cannot talk the model out of a call the message
        /// needs. `None`: the odds of the whole prompt alone decide.
        alone: Option<Arc<str>>,
    },
}

/// What a job produces, in order: progress and text pieces, then one
/// `Done` or `Failed`.
#[derive(Debug)]
pub(crate) enum Generated {
    /// How far the job got: prompt tokens read, reply tokens written.
    Progress(ModelProgress),
    Text(String),
    Done(Summary),
    Failed(LlmError),
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    EndOfGeneration,
    MaxTokens,
    StopSequence,
}

/// The figures of one job.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Summary {
    pub finish: Finish,
    pub prompt_tokens: u64,
    pub reused_tokens: u64,
    /// Of `reused_tokens`, those loaded from the prompt cache on disk.
    pub loaded_tokens: u64,
    pub generated_tokens: u64,
    pub prompt_time: Duration,
    pub generation_time: Duration,
}

/// What the engine thread is asked to do.
enum Command {
    Run(Job),
    /// Counts the tokens of a prompt text, as a job would read it.
    Count(String, mpsc::Sender<usize>),
    /// Panics while running the job, as a bug in generation would.
    #[cfg(test)]
    PanicDuring(Job),
    /// Ends the thread by a panic outside any job.
    #[cfg(test)]
    Crash,
}

/// A handle to the engine thread. Dropping every handle ends the thread.
#[derive(Debug)]
pub(crate) struct Engine {
    commands: mpsc::Sender<Command>,
    facts: ModelFacts,
    stopped: Arc<AtomicBool>,
}

/// Sets its flag when dropped: when the engine thread ends, however it ends.
struct MarkStopped(Arc<AtomicBool>);

impl Drop for MarkStopped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

impl Engine {
    /// Loads the model on a new thread and waits until it is ready.
    pub fn start(settings: EngineSettings) -> Result<Arc<Self>, LlmError> {
        let (commands, inbox) = mpsc::channel::<Command>();
        let (ready, ready_rx) = mpsc::channel::<Result<ModelFacts, LlmError>>();
        let stopped = Arc::new(AtomicBool::new(false));
        let mark = MarkStopped(Arc::clone(&stopped));
        std::thread::Builder::new()
            .name("agentry-llama".to_owned())
            .spawn(move || {
                let _mark = mark;
                worker(&settings, &inbox, &ready);
            })
            .map_err(|error| {
                LlmError::new(
                    LlmErrorKind::Server,
                    format!("could not start the model thread: {error}"),
                )
            })?;
        let facts = ready_rx
            .recv()
            .map_err(|_| LlmError::new(LlmErrorKind::Server, "the model thread stopped while loading"))??;
        Ok(Arc::new(Self {
            commands,
            facts,
            stopped,
        }))
    }

    /// Whether the engine thread has ended (it cannot take jobs any more
    /// and must be started again).
    pub fn has_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// What the model file said.
    pub fn facts(&self) -> &ModelFacts {
        &self.facts
    }

    /// Queues a job; its output arrives on `job.out`.
    pub fn submit(&self, job: Job) -> Result<(), LlmError> {
        self.send(Command::Run(job))
    }

    /// The tokens of `prompt` as a job would read it (after the jobs
    /// queued before it). Blocking.
    pub fn count_tokens(&self, prompt: &str) -> Result<usize, LlmError> {
        let (reply, answer) = mpsc::channel();
        self.send(Command::Count(prompt.to_owned(), reply))?;
        answer
            .recv()
            .map_err(|_| LlmError::new(LlmErrorKind::Server, "the model thread stopped"))
    }

    fn send(&self, command: Command) -> Result<(), LlmError> {
        self.commands
            .send(command)
            .map_err(|_| LlmError::new(LlmErrorKind::Server, "the model thread has stopped"))
    }

    /// Queues a job during which the engine panics.
    #[cfg(test)]
    pub fn submit_panicking(&self, job: Job) -> Result<(), LlmError> {
        self.send(Command::PanicDuring(job))
    }

    /// Makes the engine thread end by a panic.
    #[cfg(test)]
    pub fn crash(&self) -> Result<(), LlmError> {
        self.send(Command::Crash)
    }
}

fn worker(
    settings: &EngineSettings,
    inbox: &mpsc::Receiver<Command>,
    ready: &mpsc::Sender<Result<ModelFacts, LlmError>>,
) {
    let loaded = load(settings);
    let (model, params) = match loaded {
        Ok(loaded) => loaded,
        Err(error) => {
            let _ = ready.send(Err(error));
            return;
        }
    };
    let Ok(backend) = backend() else {
        return;
    };
    let mut context = match model.new_context(backend, params) {
        Ok(context) => context,
        Err(error) => {
            let _ = ready.send(Err(LlmError::new(
                LlmErrorKind::Server,
                format!("could not create a context for {}: {error}", settings.path.display()),
            )));
            return;
        }
    };
    let facts = facts(&model, context.n_ctx());
    let _ = ready.send(Ok(facts.clone()));
    let mut session = Session {
        model: &model,
        batch: LlamaBatch::new(settings.batch_size as usize, 1),
        batch_size: settings.batch_size as usize,
        cached: Vec::new(),
        tool_call_opening: facts.tool_call_opening,
        bare_call_opening: model.vocab().tokenize(BARE_CALL_OPENING.as_bytes(), false, false),
        disk: settings
            .prompt_cache
            .as_ref()
            .and_then(|disk| open_disk_cache(disk, settings)),
        on_disk: Vec::new(),
    };
    while let Ok(command) = inbox.recv() {
        let (job, panics) = match command {
            Command::Run(job) => (job, false),
            Command::Count(prompt, reply) => {
                let vocab = model.vocab();
                let _ = reply.send(special::tokenize(&vocab, &prompt, vocab.should_add_bos()).len());
                continue;
            }
            #[cfg(test)]
            Command::PanicDuring(job) => (job, true),
            #[cfg(test)]
            Command::Crash => panic!("the engine thread was told to crash"),
        };
        // A panic in one job (a bug) fails that job, not the engine: the
        // cache, whose state is then unknown, starts over.
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            assert!(!panics, "a panic during generation, for a test");
            let summary = session.run(&mut context, &job)?;
            session.save_to_disk(&context);
            Ok(summary)
        }));
        let generated = match outcome {
            Ok(Ok(summary)) => Generated::Done(summary),
            Ok(Err(error)) => Generated::Failed(error),
            Err(panic) => {
                session.cached.clear();
                context.clear_kv_cache();
                let reason = panic
                    .downcast_ref::<&str>()
                    .map(|text| (*text).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown".to_owned());
                tracing::error!(%reason, "the model engine panicked during a request; its cache was reset");
                Generated::Failed(LlmError::new(
                    LlmErrorKind::Server,
                    format!("the local model failed during this request ({reason}); it is ready for the next one"),
                ))
            }
        };
        let _ = job.out.send(generated);
    }
}

fn load(settings: &EngineSettings) -> Result<(LlamaModel, LlamaContextParams), LlmError> {
    let backend = backend()?;
    if !Path::new(&settings.path).is_file() {
        return Err(LlmError::invalid_request(format!(
            "model file {} does not exist; run `cargo xtask fetch-model` or set `model_path`",
            settings.path.display()
        )));
    }
    let model = LlamaModel::load_from_file(backend, &settings.path, &LlamaModelParams::default())
        .map_err(|error| LlmError::invalid_request(format!("could not load {}: {error}", settings.path.display())))?;
    let threads = i32::try_from(settings.threads.max(1)).unwrap_or(1);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(settings.context_size))
        .with_n_batch(settings.batch_size)
        .with_n_ubatch(settings.batch_size)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        // Two sequences sharing one cache of `context_size` tokens: the
        // main one, and the aside where a call's odds are read on the
        // newest message alone.
        .with_n_seq_max(SEQUENCES)
        .with_kv_unified(true);
    Ok((model, params))
}

fn facts(model: &LlamaModel, context_size: u32) -> ModelFacts {
    let vocab = model.vocab();
    let piece = |token: LlamaToken| String::from_utf8_lossy(&vocab.token_to_piece(token, true, None)).into_owned();
    let opening = vocab.tokenize(b"<tool_call>", false, true);
    ModelFacts {
        chat_template: model.meta_val_str("tokenizer.chat_template").ok(),
        bos_token: piece(vocab.bos()),
        eos_token: piece(vocab.eos()),
        context_size,
        tool_call_opening: if opening.len() == 1 {
            vec![opening[0].0]
        } else {
            Vec::new()
        },
        control_texts: ControlTexts::of(&vocab),
    }
}

/// The prompt cache of `disk`, or `None` (after saying why) when its
/// folder cannot be used.
fn open_disk_cache(disk: &DiskCacheSettings, settings: &EngineSettings) -> Option<PromptCache> {
    let identity = Identity {
        model_sha256: disk.model_identity.clone(),
        context_size: settings.context_size,
        batch_size: settings.batch_size,
        sequences: SEQUENCES,
        bindings: BINDINGS.to_owned(),
    };
    PromptCache::open(&disk.dir, disk.max_bytes, identity)
        .inspect_err(|error| tracing::warn!(%error, "the prompt cache on disk is off"))
        .ok()
}

/// The llama.cpp bindings whose state files the cache holds.
const BINDINGS: &str = "llama-cpp-2 0.1.160";

/// The cache's sequences: the main one and the aside.
const SEQUENCES: u32 = 2;

/// The context's state between jobs.
struct Session<'m> {
    model: &'m LlamaModel,
    batch: LlamaBatch<'static>,
    batch_size: usize,
    /// The tokens whose keys and values are in the cache, in order.
    cached: Vec<LlamaToken>,
    tool_call_opening: Vec<i32>,
    /// [`BARE_CALL_OPENING`], tokenized.
    bare_call_opening: Vec<LlamaToken>,
    /// The prompt cache on disk, when on.
    disk: Option<PromptCache>,
    /// The tokens of the disk entry last loaded or saved.
    on_disk: Vec<i32>,
}

/// The cache sequence of the prompt and the reply.
const MAIN_SEQUENCE: i32 = 0;
/// The cache sequence where a call's odds are read on another prompt
/// ([`GrammarUse::Decide`]'s `alone`); emptied after each read.
const ASIDE_SEQUENCE: i32 = 1;

/// How small models open a call without the `<tool_call>` tag: bare JSON,
/// the tool's name next.
const BARE_CALL_OPENING: &str = r#"{"name": ""#;

impl Session<'_> {
    fn run(&mut self, context: &mut LlamaContext<'_>, job: &Job) -> Result<Summary, LlmError> {
        let started = Instant::now();
        let model = self.model;
        let vocab = model.vocab();
        let tokens = special::tokenize(&vocab, &job.prompt, vocab.should_add_bos());
        let n_ctx = context.n_ctx() as usize;
        if tokens.is_empty() {
            return Err(LlmError::invalid_request("the prompt is empty"));
        }
        if tokens.len() >= n_ctx {
            return Err(LlmError::new(
                LlmErrorKind::ContextLength,
                format!(
                    "the prompt has {} tokens but the context holds {n_ctx}; raise `context_size`",
                    tokens.len()
                ),
            ));
        }

        // Reuse the longest common prefix; at least the last token is evaluated
        // again so that there are logits to sample from.
        let mut keep = self.cached.iter().zip(&tokens).take_while(|(a, b)| a == b).count();
        keep = keep.min(tokens.len() - 1);
        if context
            .clear_kv_cache_seq(Some(0), u32::try_from(keep).ok(), None)
            .is_err()
        {
            keep = 0;
            context.clear_kv_cache();
        }
        self.cached.truncate(keep);
        let loaded = self.load_from_disk(context, &tokens, keep);
        if loaded > 0 {
            keep = loaded;
        }
        let total = tokens.len() as u64;
        let reading = |done: usize| {
            let _ = job.out.send(Generated::Progress(ModelProgress::ReadingPrompt {
                done: done as u64,
                total,
            }));
        };
        reading(keep);
        let mut last_logits = 0;
        for (chunk_index, chunk) in tokens[keep..].chunks(self.batch_size).enumerate() {
            if job.cancel.is_cancelled() {
                return Err(LlmError::cancelled().with_provider("llama"));
            }
            self.batch.clear();
            let offset = keep + chunk_index * self.batch_size;
            for (i, token) in chunk.iter().enumerate() {
                let position = i32::try_from(offset + i).unwrap_or(i32::MAX);
                let is_last = offset + i == tokens.len() - 1;
                self.batch.add(*token, position, &[0], is_last).map_err(decode_error)?;
            }
            context.decode(&mut self.batch).map_err(decode_error)?;
            self.cached.extend_from_slice(chunk);
            last_logits = self.batch.n_tokens() - 1;
            reading(self.cached.len());
        }
        let prompt_time = started.elapsed();
        let from_start = match &job.grammar_use {
            GrammarUse::FromStart => true,
            GrammarUse::Lazy => false,
            GrammarUse::Decide {
                threshold,
                tools,
                alone,
                ..
            } => {
                let alone = alone
                    .as_deref()
                    .map(|prompt| special::tokenize(&vocab, prompt, vocab.should_add_bos()));
                let odds = self.call_odds(context, tools, last_logits, alone.as_deref())?;
                tracing::debug!(odds, threshold, "odds of a tool call");
                last_logits = 0;
                odds >= *threshold
            }
        };

        let mut sampler = TokenSampler::new(self.model, job, &self.tool_call_opening, from_start);
        let mut text = Text::new(&job.stop);
        let mut calls = job.grammar.is_some().then(|| CallWatch::new(job.call_limits.clone()));
        let mut generated = 0u64;
        let generation_started = Instant::now();
        let finish = loop {
            if job.cancel.is_cancelled() {
                return Err(LlmError::cancelled().with_provider("llama"));
            }
            if generated >= u64::from(job.max_tokens) || self.cached.len() >= n_ctx {
                break Finish::MaxTokens;
            }
            let Some(token) = sampler.next(context, last_logits) else {
                break Finish::EndOfGeneration;
            };
            if ends_turn(&vocab, token, &self.tool_call_opening) {
                break Finish::EndOfGeneration;
            }
            generated += 1;
            if generated == 1 {
                tracing::debug!(ms = started.elapsed().as_millis() as u64, "first token of the reply");
            }
            let _ = job.out.send(Generated::Progress(ModelProgress::Writing {
                tokens: generated,
                elapsed_ms: u64::try_from(generation_started.elapsed().as_millis()).unwrap_or(u64::MAX),
            }));
            let piece = vocab.token_to_piece(token, true, None);
            let stop_hit = text.push(&piece, &job.out);
            let call_stop = calls.as_mut().and_then(|watch| watch.push(&piece));
            self.decode_one(context, token, self.cached.len(), MAIN_SEQUENCE)?;
            self.cached.push(token);
            last_logits = 0;
            if stop_hit {
                break Finish::StopSequence;
            }
            if let Some(reason) = call_stop {
                tracing::debug!(generated, ?reason, "the reply's calls are complete; it ends there");
                break Finish::EndOfGeneration;
            }
        };
        text.flush(&job.out);
        Ok(Summary {
            finish,
            prompt_tokens: tokens.len() as u64,
            reused_tokens: keep as u64,
            loaded_tokens: loaded as u64,
            generated_tokens: generated,
            prompt_time,
            generation_time: generation_started.elapsed(),
        })
    }
}

impl Session<'_> {
    /// Loads the disk entry sharing the most leading tokens with `tokens`
    /// when it holds at least [`MIN_DISK_GAIN`] more than the `keep` in
    /// the cache already, trimmed back to what the prompt shares (its last
    /// token left out, so that it is evaluated again for its logits).
    /// Returns the tokens now cached, or 0 when nothing was loaded (the
    /// cache then as it was, or empty after a failed load).
    fn load_from_disk(&mut self, context: &mut LlamaContext<'_>, tokens: &[LlamaToken], keep: usize) -> usize {
        let Some(disk) = &self.disk else {
            return 0;
        };
        let usable = tokens.len() - 1;
        if usable < keep + MIN_DISK_GAIN {
            return 0;
        }
        let prompt: Vec<i32> = tokens[..usable].iter().map(|token| token.0).collect();
        let Some(hit) = disk.best_match(&prompt, keep + MIN_DISK_GAIN) else {
            return 0;
        };
        let started = Instant::now();
        context.clear_kv_cache();
        self.cached.clear();
        let capacity = context.n_ctx() as usize;
        let loaded = context.state_seq_load_file(&hit.state, MAIN_SEQUENCE, capacity);
        let whole =
            matches!(&loaded, Ok((loaded, _)) if loaded.iter().map(|token| token.0).eq(hit.tokens.iter().copied()));
        let trimmed = whole
            && context
                .clear_kv_cache_seq(Some(0), u32::try_from(hit.shared).ok(), None)
                .is_ok();
        if !trimmed {
            tracing::warn!(state = %hit.state.display(), "a prompt cache entry did not load; the prompt is read instead");
            context.clear_kv_cache();
            return 0;
        }
        self.cached.extend_from_slice(&tokens[..hit.shared]);
        self.on_disk = hit.tokens;
        tracing::debug!(
            tokens = hit.shared,
            ms = started.elapsed().as_millis() as u64,
            "prompt read from the cache on disk"
        );
        hit.shared
    }

    /// Saves the cache to disk when it holds at least [`MIN_DISK_SAVE`]
    /// tokens that the entry last loaded or saved lacks. A failure is
    /// logged: the reply is not affected.
    fn save_to_disk(&mut self, context: &LlamaContext<'_>) {
        let Some(disk) = &mut self.disk else {
            return;
        };
        // Compared in place: most requests add too little to be saved.
        let saved_already = self
            .cached
            .iter()
            .zip(&self.on_disk)
            .take_while(|(token, on_disk)| token.0 == **on_disk)
            .count();
        if self.cached.len() < saved_already + MIN_DISK_SAVE {
            return;
        }
        let cached: Vec<i32> = self.cached.iter().map(|token| token.0).collect();
        let started = Instant::now();
        let tokens = &self.cached;
        let saved = disk.save(&cached, |path| {
            context
                .state_seq_save_file(path, MAIN_SEQUENCE, tokens)
                .map(|_| ())
                .map_err(|error| error.to_string())
        });
        match saved {
            Ok(()) => {
                tracing::debug!(
                    tokens = cached.len(),
                    ms = started.elapsed().as_millis() as u64,
                    "prompt saved to the cache on disk"
                );
                self.on_disk = cached;
            }
            Err(error) => tracing::warn!(%error, "the prompt was not saved to the cache on disk"),
        }
    }

    /// The probability that the model, whose next-token logits are at
    /// `index` of the last batch, starts its reply with a call of one of
    /// `tools` ([`Self::opening_odds`]). With `alone`, the tokens of the
    /// prompt holding only the newest user message, it is the larger of
    /// the odds after the whole prompt and after that one, read in a second
    /// sequence of the cache that shares the prompts' common start. The
    /// cache is left as it was, with the prompt's last token evaluated
    /// again so its logits are at index 0 of the last batch.
    fn call_odds(
        &mut self,
        context: &mut LlamaContext<'_>,
        tools: &[String],
        index: i32,
        alone: Option<&[LlamaToken]>,
    ) -> Result<f32, LlmError> {
        let prompt_end = self.cached.len();
        let mut odds = self.opening_odds(context, tools, index, MAIN_SEQUENCE, prompt_end)?;
        // Back to the prompt, without its last token, whose logits are
        // read again below.
        let last = prompt_end - 1;
        trim(context, MAIN_SEQUENCE, last)?;
        if let Some(alone) = alone.filter(|alone| !alone.is_empty() && *alone != self.cached.as_slice()) {
            let read = self.odds_alone(context, tools, alone, last);
            let cleared = context.clear_kv_cache_seq(u32::try_from(ASIDE_SEQUENCE).ok(), None, None);
            match read {
                Ok(alone_odds) => {
                    tracing::debug!(
                        odds,
                        alone_odds,
                        "odds of a tool call: whole prompt, newest message alone"
                    );
                    odds = odds.max(alone_odds);
                }
                Err(error) => {
                    tracing::warn!(%error, "the odds of a call on the newest message alone could not be read");
                }
            }
            if cleared.is_err() {
                self.cached.clear();
                context.clear_kv_cache();
                return Err(cache_error());
            }
        }
        let token = self.cached[last];
        self.decode_one(context, token, last, MAIN_SEQUENCE)?;
        Ok(odds)
    }

    /// The probability that the model, whose next-token logits are at
    /// `index` of the last batch, starts a reply at position `end` of
    /// sequence `sequence` with a call of one of `tools`: the
    /// `<tool_call>` token, or the bare JSON opening `{"name": "` followed
    /// by the first token of a tool's name (the form small models write),
    /// read by feeding the opening to the model after `end`.
    fn opening_odds(
        &mut self,
        context: &mut LlamaContext<'_>,
        tools: &[String],
        index: i32,
        sequence: i32,
        end: usize,
    ) -> Result<f32, LlmError> {
        let vocab = self.model.vocab();
        let tagged = probability_of(
            context,
            index,
            self.tool_call_opening.iter().map(|id| LlamaToken::new(*id)),
        );
        let names: std::collections::HashSet<LlamaToken> = tools
            .iter()
            .filter_map(|name| vocab.tokenize(name.as_bytes(), false, false).first().copied())
            .collect();
        let opening = self.bare_call_opening.clone();
        let mut bare = probability_of(context, index, opening.first().copied());
        for (i, token) in opening.iter().enumerate() {
            if bare <= 0.0 {
                break;
            }
            self.decode_one(context, *token, end + i, sequence)?;
            bare *= match opening.get(i + 1) {
                Some(following) => probability_of(context, 0, Some(*following)),
                None => probability_of(context, 0, names.iter().copied()),
            };
        }
        Ok(tagged + bare)
    }

    /// The odds of a call after `alone`, evaluated in the aside sequence:
    /// its start shared with the cached prompt (up to `shared_limit`
    /// tokens) is copied from the main sequence, the rest decoded.
    fn odds_alone(
        &mut self,
        context: &mut LlamaContext<'_>,
        tools: &[String],
        alone: &[LlamaToken],
        shared_limit: usize,
    ) -> Result<f32, LlmError> {
        let shared = self
            .cached
            .iter()
            .zip(alone)
            .take_while(|(a, b)| a == b)
            .count()
            .min(alone.len() - 1)
            .min(shared_limit);
        if shared > 0 {
            context
                .copy_kv_cache_seq(MAIN_SEQUENCE, ASIDE_SEQUENCE, Some(0), u32::try_from(shared).ok())
                .map_err(|_| cache_error())?;
        }
        let mut index = 0;
        for (chunk_index, chunk) in alone[shared..].chunks(self.batch_size).enumerate() {
            self.batch.clear();
            let offset = shared + chunk_index * self.batch_size;
            for (i, token) in chunk.iter().enumerate() {
                let position = i32::try_from(offset + i).unwrap_or(i32::MAX);
                let is_last = offset + i == alone.len() - 1;
                self.batch
                    .add(*token, position, &[ASIDE_SEQUENCE], is_last)
                    .map_err(decode_error)?;
            }
            context.decode(&mut self.batch).map_err(decode_error)?;
            index = self.batch.n_tokens() - 1;
        }
        self.opening_odds(context, tools, index, ASIDE_SEQUENCE, alone.len())
    }

    /// Evaluates `token` at `position` of `sequence`, with its logits at
    /// index 0.
    fn decode_one(
        &mut self,
        context: &mut LlamaContext<'_>,
        token: LlamaToken,
        position: usize,
        sequence: i32,
    ) -> Result<(), LlmError> {
        self.batch.clear();
        let position = i32::try_from(position).unwrap_or(i32::MAX);
        self.batch
            .add(token, position, &[sequence], true)
            .map_err(decode_error)?;
        context.decode(&mut self.batch).map_err(decode_error)
    }
}

/// The probability, by the softmax of the logits at `index` of the last
/// batch, that the next token is one of `tokens` (each counted once).
fn probability_of(context: &LlamaContext<'_>, index: i32, tokens: impl IntoIterator<Item = LlamaToken>) -> f32 {
    let logits = context.get_logits_ith(index);
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let total: f32 = logits.iter().map(|logit| (logit - max).exp()).sum();
    let wanted: std::collections::HashSet<LlamaToken> = tokens.into_iter().collect();
    let mass: f32 = wanted
        .iter()
        .filter_map(|token| logits.get(usize::try_from(token.0).ok()?))
        .map(|logit| (logit - max).exp())
        .sum();
    if total > 0.0 { mass / total } else { 0.0 }
}

/// Whether `token` ends the model's turn: an end-of-generation token, or
/// any other control token but the tool-call opening (a chat model that
/// writes `<|im_start|>` is starting the next message, which is not part of
/// its reply).
pub(crate) fn ends_turn(
    vocab: &llama_cpp_2::vocab::LlamaVocab<'_>,
    token: LlamaToken,
    tool_call_opening: &[i32],
) -> bool {
    vocab.is_eog(token) || (vocab.is_control(token) && !tool_call_opening.contains(&token.0))
}

/// Removes the cache of `sequence` from position `from` on.
fn trim(context: &mut LlamaContext<'_>, sequence: i32, from: usize) -> Result<(), LlmError> {
    let sequence = u32::try_from(sequence).ok();
    match context.clear_kv_cache_seq(sequence, u32::try_from(from).ok(), None) {
        Ok(true) => Ok(()),
        _ => Err(cache_error()),
    }
}

fn cache_error() -> LlmError {
    LlmError::new(LlmErrorKind::Server, "llama.cpp could not trim its cache").with_provider("llama")
}

fn decode_error(error: impl std::fmt::Display) -> LlmError {
    LlmError::new(
        LlmErrorKind::Server,
        format!("llama.cpp failed to evaluate the prompt: {error}"),
    )
}
