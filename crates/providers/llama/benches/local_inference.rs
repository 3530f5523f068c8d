//! `local_inference`: prompt tokens/s, generation tokens/s and time to first
//! token of the embedded 0.5B model on 2 threads, through Agentry's client
//! and through a minimal raw llama-cpp-2 loop over the same prompt, in the
//! same run. Each round uses a fresh prompt prefix so no side reuses a
//! cached prefix. Run: `cargo bench -p agent-provider-llama --bench local_inference`.

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use agent_core::{CancellationToken, ChatRequest, LlmClient, Message, StreamEvent};
use agent_provider_llama::models::{DEFAULT_MODEL, ModelStore, known_model};
use agent_provider_llama::{LlamaClient, LlamaConfig, backend};
use futures::StreamExt;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;

const THREADS: i32 = 2;
const CONTEXT: u32 = 4096;
const BATCH: u32 = 512;
const MAX_TOKENS: u32 = 96;
const ROUNDS: usize = 3;

#[derive(Debug, Clone, Copy)]
struct Figures {
    prompt_tokens: u64,
    generated: u64,
    first_token: Duration,
    total: Duration,
}

impl Figures {
    fn prompt_rate(&self) -> f64 {
        self.prompt_tokens as f64 / self.first_token.as_secs_f64()
    }

    fn generation_rate(&self) -> f64 {
        (self.generated.saturating_sub(1)) as f64 / self.total.saturating_sub(self.first_token).as_secs_f64()
    }
}

fn request(round: usize) -> ChatRequest {
    let mut request = ChatRequest::new(vec![Message::user(
        "Explain in a few paragraphs how a hash map works, including collisions, load factor and resizing.",
    )])
    .with_system(format!(
        "Round {round}. You are a patient teacher who writes clear, complete explanations."
    ));
    request.max_tokens = Some(MAX_TOKENS);
    request.temperature = Some(0.0);
    request
}

fn agentry(client: &LlamaClient, runtime: &tokio::runtime::Runtime, round: usize) -> Figures {
    runtime.block_on(async {
        let started = Instant::now();
        let mut first = None;
        let mut usage = None;
        let mut events = client
            .stream(&request(round), &CancellationToken::new())
            .await
            .expect("stream");
        while let Some(event) = events.next().await {
            match event.expect("event") {
                StreamEvent::TextDelta { .. } if first.is_none() => first = Some(started.elapsed()),
                StreamEvent::Usage { usage: u } => usage = Some(u),
                _ => {}
            }
        }
        let usage = usage.expect("usage");
        Figures {
            prompt_tokens: usage.input_tokens,
            generated: usage.output_tokens,
            first_token: first.expect("some text"),
            total: started.elapsed(),
        }
    })
}

fn raw(model: &LlamaModel, prompt: &str) -> Figures {
    let backend = backend().expect("backend");
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(CONTEXT))
        .with_n_batch(BATCH)
        .with_n_ubatch(BATCH)
        .with_n_threads(THREADS)
        .with_n_threads_batch(THREADS);
    let mut context = model.new_context(backend, params).expect("context");
    let started = Instant::now();
    let vocab = model.vocab();
    let tokens = vocab.tokenize(prompt.as_bytes(), vocab.should_add_bos(), true);
    let mut batch = LlamaBatch::new(BATCH as usize, 1);
    let mut last = 0;
    for (chunk_index, chunk) in tokens.chunks(BATCH as usize).enumerate() {
        batch.clear();
        for (i, token) in chunk.iter().enumerate() {
            let position = chunk_index * BATCH as usize + i;
            batch
                .add(
                    *token,
                    i32::try_from(position).expect("position"),
                    &[0],
                    position == tokens.len() - 1,
                )
                .expect("add");
        }
        context.decode(&mut batch).expect("decode");
        last = batch.n_tokens() - 1;
    }
    let mut sampler = LlamaSampler::chain_simple([LlamaSampler::greedy()]);
    let mut first = None;
    let mut generated = 0u64;
    let mut position = tokens.len();
    let mut text = Vec::new();
    while generated < u64::from(MAX_TOKENS) {
        let token = sampler.sample(&context, last);
        sampler.accept(token);
        if vocab.is_eog(token) {
            break;
        }
        text.extend(vocab.token_to_piece(token, true, None));
        if first.is_none() {
            first = Some(started.elapsed());
        }
        generated += 1;
        batch.clear();
        batch
            .add(token, i32::try_from(position).expect("position"), &[0], true)
            .expect("add");
        context.decode(&mut batch).expect("decode");
        position += 1;
        last = 0;
    }
    Figures {
        prompt_tokens: tokens.len() as u64,
        generated,
        first_token: first.expect("a token"),
        total: started.elapsed(),
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let store = ModelStore::default_location();
    let Some(known) = known_model(DEFAULT_MODEL).filter(|m| store.is_ready(m)) else {
        eprintln!("local_inference: the model is not fetched; run `cargo xtask fetch-model`");
        return;
    };
    let config = LlamaConfig {
        threads: Some(THREADS as usize),
        context_size: CONTEXT,
        batch_size: BATCH,
        ..LlamaConfig::default()
    };
    let client = LlamaClient::load(config).expect("load");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let model = LlamaModel::load_from_file(
        backend().expect("backend"),
        store.path_of(known),
        &LlamaModelParams::default(),
    )
    .expect("raw model");
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let prompt = client.render_prompt(&request(20 + round)).expect("prompt");
        theirs.push(raw(&model, &prompt));
        ours.push(agentry(&client, &runtime, 10 + round));
    }
    let report = |name: &str, figures: &[Figures]| {
        let prompt = median(figures.iter().map(Figures::prompt_rate).collect());
        let generation = median(figures.iter().map(Figures::generation_rate).collect());
        let ttft = median(figures.iter().map(|f| f.first_token.as_secs_f64() * 1000.0).collect());
        println!(
            "{name:<18} prompt {prompt:7.1} tok/s   generation {generation:6.1} tok/s   first token {ttft:7.0} ms   ({} prompt tokens, {} generated)",
            figures[0].prompt_tokens, figures[0].generated
        );
        (prompt, generation, ttft)
    };
    println!("local_inference: {DEFAULT_MODEL}, {THREADS} threads, median of {ROUNDS} rounds");
    let (raw_prompt, raw_generation, raw_ttft) = report("raw llama-cpp-2", &theirs);
    let (our_prompt, our_generation, our_ttft) = report("agentry", &ours);
    println!(
        "agentry / raw:     prompt {:.3}x   generation {:.3}x   first token {:.3}x",
        our_prompt / raw_prompt,
        our_generation / raw_generation,
        our_ttft / raw_ttft
    );
}
