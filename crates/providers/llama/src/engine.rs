//! The inference engine: one thread that owns the model's context, runs
//! requests one at a time, reuses the KV cache across requests that share a
//! prefix, and streams decoded text back.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use agent_core::{CancellationToken, LlmError, LlmErrorKind};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::token::LlamaToken;
use tokio::sync::mpsc::UnboundedSender;

use crate::sampling::TokenSampler;

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
}

/// What the engine learned from the model file.
#[derive(Debug, Clone)]
pub(crate) struct ModelFacts {
    pub chat_template: Option<String>,
    pub bos_token: String,
    pub eos_token: String,
    pub context_size: u32,
    /// Token sequences of the tool-call opening, suppressed when tools are off.
    pub tool_call_opening: Vec<i32>,
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
    /// Apply the grammar from the first token (a call is required) instead
    /// of lazily from the first `<tool_call>`.
    pub grammar_from_start: bool,
    pub cancel: CancellationToken,
    pub out: UnboundedSender<Generated>,
}

/// What a job produces, in order: text pieces, then one `Done` or `Failed`.
#[derive(Debug)]
pub(crate) enum Generated {
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
    pub generated_tokens: u64,
    pub prompt_time: Duration,
    pub generation_time: Duration,
}

/// A handle to the engine thread. Dropping every handle ends the thread.
#[derive(Debug)]
pub(crate) struct Engine {
    jobs: mpsc::Sender<Job>,
    facts: ModelFacts,
}

impl Engine {
    /// Loads the model on a new thread and waits until it is ready.
    pub fn start(settings: EngineSettings) -> Result<Arc<Self>, LlmError> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (ready, ready_rx) = mpsc::channel::<Result<ModelFacts, LlmError>>();
        std::thread::Builder::new()
            .name("agentry-llama".to_owned())
            .spawn(move || worker(&settings, &inbox, &ready))
            .map_err(|error| {
                LlmError::new(
                    LlmErrorKind::Server,
                    format!("could not start the model thread: {error}"),
                )
            })?;
        let facts = ready_rx
            .recv()
            .map_err(|_| LlmError::new(LlmErrorKind::Server, "the model thread stopped while loading"))??;
        Ok(Arc::new(Self { jobs, facts }))
    }

    /// What the model file said.
    pub fn facts(&self) -> &ModelFacts {
        &self.facts
    }

    /// Queues a job; its output arrives on `job.out`.
    pub fn submit(&self, job: Job) -> Result<(), LlmError> {
        self.jobs
            .send(job)
            .map_err(|_| LlmError::new(LlmErrorKind::Server, "the model thread has stopped"))
    }
}

fn worker(settings: &EngineSettings, inbox: &mpsc::Receiver<Job>, ready: &mpsc::Sender<Result<ModelFacts, LlmError>>) {
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
    };
    while let Ok(job) = inbox.recv() {
        let out = job.out.clone();
        match session.run(&mut context, &job) {
            Ok(summary) => {
                let _ = out.send(Generated::Done(summary));
            }
            Err(error) => {
                let _ = out.send(Generated::Failed(error));
            }
        }
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
        .with_n_threads_batch(threads);
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
    }
}

/// The context's state between jobs.
struct Session<'m> {
    model: &'m LlamaModel,
    batch: LlamaBatch<'static>,
    batch_size: usize,
    /// The tokens whose keys and values are in the cache, in order.
    cached: Vec<LlamaToken>,
    tool_call_opening: Vec<i32>,
}

impl Session<'_> {
    fn run(&mut self, context: &mut LlamaContext<'_>, job: &Job) -> Result<Summary, LlmError> {
        let started = Instant::now();
        let model = self.model;
        let vocab = model.vocab();
        let tokens = vocab.tokenize(job.prompt.as_bytes(), vocab.should_add_bos(), true);
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
        }
        let prompt_time = started.elapsed();

        let mut sampler = TokenSampler::new(self.model, job, &self.tool_call_opening);
        let mut text = Text::new(&job.stop);
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
            let stop_hit = text.push(&vocab.token_to_piece(token, true, None), &job.out);
            self.batch.clear();
            let position = i32::try_from(self.cached.len()).unwrap_or(i32::MAX);
            self.batch.add(token, position, &[0], true).map_err(decode_error)?;
            context.decode(&mut self.batch).map_err(decode_error)?;
            self.cached.push(token);
            last_logits = 0;
            if stop_hit {
                break Finish::StopSequence;
            }
        };
        text.flush(&job.out);
        Ok(Summary {
            finish,
            prompt_tokens: tokens.len() as u64,
            reused_tokens: keep as u64,
            generated_tokens: generated,
            prompt_time,
            generation_time: generation_started.elapsed(),
        })
    }
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

fn decode_error(error: impl std::fmt::Display) -> LlmError {
    LlmError::new(
        LlmErrorKind::Server,
        format!("llama.cpp failed to evaluate the prompt: {error}"),
    )
}

/// Generated text: assembles UTF-8 across token boundaries, finds stop
/// sequences, and releases text only once it cannot be the start of one.
pub(crate) struct Text<'a> {
    stop: &'a [String],
    bytes: Vec<u8>,
    decoded: String,
    sent: usize,
}

impl<'a> Text<'a> {
    pub(crate) fn new(stop: &'a [String]) -> Self {
        Self {
            stop,
            bytes: Vec::new(),
            decoded: String::new(),
            sent: 0,
        }
    }

    /// Adds a token's bytes; sends what is safe; returns whether a stop
    /// sequence was produced (the text is then cut before it).
    pub(crate) fn push(&mut self, piece: &[u8], out: &UnboundedSender<Generated>) -> bool {
        self.bytes.extend_from_slice(piece);
        let valid = match std::str::from_utf8(&self.bytes) {
            Ok(_) => self.bytes.len(),
            Err(error) if error.error_len().is_some() => {
                // Invalid bytes (not a split character): replace and move on.
                let lossy = String::from_utf8_lossy(&self.bytes).into_owned();
                self.decoded.push_str(&lossy);
                self.bytes.clear();
                0
            }
            Err(error) => error.valid_up_to(),
        };
        if valid > 0 {
            let complete: Vec<u8> = self.bytes.drain(..valid).collect();
            self.decoded.push_str(&String::from_utf8_lossy(&complete));
        }
        // A stop sequence can only begin in what was held back, so the search
        // starts one stop length before the sent text, moved back to a
        // character boundary (that offset can fall inside a character).
        let mut search_from = self
            .sent
            .saturating_sub(self.stop.iter().map(String::len).max().unwrap_or(0));
        while !self.decoded.is_char_boundary(search_from) {
            search_from -= 1;
        }
        let hit = self
            .stop
            .iter()
            .filter(|stop| !stop.is_empty())
            .filter_map(|stop| {
                self.decoded[search_from..]
                    .find(stop.as_str())
                    .map(|at| search_from + at)
            })
            .min();
        if let Some(at) = hit {
            // Everything from the stop sequence on is dropped, including
            // the start of a character not yet complete.
            self.decoded.truncate(at);
            self.bytes.clear();
            self.send_up_to(self.decoded.len(), out);
            return true;
        }
        let held = self.stop_prefix_len();
        self.send_up_to(self.decoded.len() - held, out);
        false
    }

    /// Sends whatever is left.
    pub(crate) fn flush(&mut self, out: &UnboundedSender<Generated>) {
        if !self.bytes.is_empty() {
            let rest = String::from_utf8_lossy(&std::mem::take(&mut self.bytes)).into_owned();
            self.decoded.push_str(&rest);
        }
        self.send_up_to(self.decoded.len(), out);
    }

    /// Length of the longest end of the text that could begin a stop sequence.
    fn stop_prefix_len(&self) -> usize {
        let mut longest = 0;
        for stop in self.stop {
            for (end, _) in stop.char_indices().skip(1) {
                if end > longest && self.decoded.ends_with(&stop[..end]) {
                    longest = end;
                }
            }
        }
        longest
    }

    fn send_up_to(&mut self, end: usize, out: &UnboundedSender<Generated>) {
        let mut end = end.max(self.sent);
        while !self.decoded.is_char_boundary(end) {
            end -= 1;
        }
        if end > self.sent {
            let _ = out.send(Generated::Text(self.decoded[self.sent..end].to_owned()));
            self.sent = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(stop: &[String], pieces: &[&[u8]]) -> (Vec<String>, bool) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut text = Text::new(stop);
        let mut hit = false;
        for piece in pieces {
            if text.push(piece, &tx) {
                hit = true;
                break;
            }
        }
        text.flush(&tx);
        let mut out = Vec::new();
        while let Ok(Generated::Text(t)) = rx.try_recv() {
            out.push(t);
        }
        (out, hit)
    }

    #[test]
    fn a_character_split_across_tokens_is_never_emitted_broken() {
        let euro = "€".as_bytes(); // three bytes
        let (out, _) = collect(&[], &[b"price: ", &euro[..1], &euro[1..2], &euro[2..], b"5"]);
        assert_eq!(out.concat(), "price: €5");
        assert!(out.iter().all(|piece| !piece.contains('\u{fffd}')));
    }

    #[test]
    fn a_stop_search_window_starting_inside_a_multibyte_character_does_not_panic() {
        // After "éé" (4 bytes) is sent, the search for a 3-byte stop sequence
        // starts 3 bytes back: inside the first "é".
        let stop = vec!["abc".to_owned()];
        let (out, hit) = collect(&stop, &["éé".as_bytes(), b"x"]);
        assert!(!hit);
        assert_eq!(out.concat(), "ééx");
        let (out, hit) = collect(&stop, &["éé".as_bytes(), b"xab", b"cd"]);
        assert!(hit);
        assert_eq!(out.concat(), "ééx");
    }

    #[test]
    fn the_start_of_a_character_after_a_stop_sequence_is_not_flushed() {
        let stop = vec!["a".to_owned()];
        let e_acute = "é".as_bytes();
        let (out, hit) = collect(&stop, &[":€".as_bytes(), &[b'a', e_acute[0]]]);
        assert!(hit);
        assert_eq!(
            out.concat(),
            ":€",
            "nothing after the stop sequence, not even a replacement character"
        );
    }

    #[test]
    fn stop_sequences_cut_the_text_and_their_prefixes_are_held_back() {
        let stop = vec!["\nObservation:".to_owned()];
        let (out, hit) = collect(&stop, &[b"Action: x", b"\nObs", b"ervation: made up"]);
        assert!(hit);
        assert_eq!(out.concat(), "Action: x");
        let (out, hit) = collect(&stop, &[b"a\nOb", b"vious"]);
        assert!(!hit);
        assert_eq!(out.concat(), "a\nObvious");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Multi-byte text cut into arbitrary byte pieces, with multi-byte
        /// stop sequences: never a panic, and the output is the text up to
        /// the first stop sequence, exactly.
        #[test]
        fn push_matches_a_plain_search_on_any_split_of_multibyte_text(
            text in "[aé€😀\\nO:b]{0,40}",
            stops in proptest::collection::vec("[aé€😀\\nO:b]{1,4}", 0..3),
            cuts in proptest::collection::vec(proptest::prelude::any::<proptest::sample::Index>(), 0..10),
        ) {
            let bytes = text.as_bytes();
            let mut points: Vec<usize> = cuts.iter().map(|cut| cut.index(bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut pieces = Vec::new();
            let mut start = 0;
            for point in points {
                pieces.push(&bytes[start..point]);
                start = point;
            }
            pieces.push(&bytes[start..]);
            let (out, hit) = collect(&stops, &pieces);
            let first = stops.iter().filter_map(|stop| text.find(stop.as_str())).min();
            let expected = first.map_or(text.as_str(), |at| &text[..at]);
            proptest::prop_assert_eq!(out.concat(), expected);
            proptest::prop_assert_eq!(hit, first.is_some());
        }
    }
}
