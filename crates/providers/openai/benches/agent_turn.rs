//! `agent_turn`: one full agent turn through agent-runner + the OpenAI
//! adapter (request with one tool, the model's tool call, the tool, the
//! second request, the final text) against an in-process loopback HTTP
//! server, next to a bare reqwest + serde_json client doing the same two
//! requests and running the same tool inline, in the same run.
//!
//! Besides criterion's timings it prints, for both sides, the median of
//! interleaved turns and the allocations per turn (counted by `stats_alloc`'s
//! instrumented global allocator), and a breakdown of Agentry's turn into the
//! adapter's mapping, the HTTP layer and the runner with the registry.
//!
//! The mock server answers from prebuilt responses without allocating per
//! request (checked and printed as "server only"), so the counts are the
//! clients' own.

use std::alloc::System;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{
    CancellationToken, Capabilities, ChatRequest, ChatResponse, LlmClient, LlmError, Message, ToolContext, ToolError,
};
use agent_http::{AuthHeader, HttpClient, HttpConfig, SecretString};
use agent_provider_openai::mapper::{BodyOptions, build_request_body, parse_response};
use agent_provider_openai::{OpenAiClient, OpenAiConfig};
use agent_runner::Agent;
use agent_testing::loopback::{CannedServer, json_response};
use agent_tools::{Json, Registry, ToolSet, TypedTool};
use async_trait::async_trait;
use bytes::Bytes;
use criterion::{Criterion, criterion_group};
use serde_json::{Value, json};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const MODEL: &str = "gpt-4o-mini";
const SYSTEM: &str = "You are a travel assistant.";
const QUESTION: &str = "What's the weather in Tokyo?";
const KEY: &str = "sk-bench-key";

const TOOL_CALL_RESPONSE: &str = r#"{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion","created":1741569952,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_9pYzGRYyX1QvYkOq2cEo8Bru","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Tokyo\",\"unit\":\"celsius\"}"}}],"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_06737a9306"}"#;

const ANSWER_RESPONSE: &str = r#"{"id":"chatcmpl-B9MBtDw1aAfQ3gbsjT0qlNqDcTnD1","object":"chat.completion","created":1741569953,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"It is 21 °C and sunny in Tokyo.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":121,"completion_tokens":11,"total_tokens":132,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_06737a9306"}"#;

// ---------------------------------------------------------------- mock server

/// The loopback server both sides talk to: a request whose body holds a
/// tool result gets the final answer, any other the tool call. It allocates
/// nothing per request.
fn start_server(runtime: &Runtime) -> SocketAddr {
    runtime
        .block_on(CannedServer::start(
            json_response(TOOL_CALL_RESPONSE),
            json_response(ANSWER_RESPONSE),
            br#""role":"tool""#,
        ))
        .unwrap_or_else(|error| panic!("{error}"))
        .address()
}

// ---------------------------------------------------------------- the tool

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// Arguments of `get_weather`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WeatherArgs {
    /// City name.
    location: String,
    /// Temperature unit.
    unit: Option<Unit>,
}

#[derive(serde::Serialize)]
struct Weather {
    temp_c: f64,
    sky: &'static str,
}

fn weather(unit: Option<&Unit>) -> Weather {
    Weather {
        temp_c: match unit {
            Some(Unit::Fahrenheit) => 69.8,
            _ => 21.0,
        },
        sky: "sunny",
    }
}

fn registry() -> Registry {
    let tool = TypedTool::new(
        "get_weather",
        "Current weather for a city.",
        |args: WeatherArgs, _: ToolContext| async move {
            let _ = &args.location;
            Ok::<_, ToolError>(Json(weather(args.unit.as_ref())))
        },
    );
    let registry = Registry::new();
    if let Err(error) = registry.register(Arc::new(ToolSet::new("travel", "Travel tools").tool(tool)), true) {
        panic!("{error}");
    }
    registry
}

// ---------------------------------------------------------------- Agentry side

fn agentry(address: SocketAddr) -> Agent {
    let mut config = OpenAiConfig::openai(MODEL).with_api_key(KEY);
    config.base_url = Some(format!("http://{address}/v1"));
    let client = OpenAiClient::new(config).unwrap_or_else(|error| panic!("{error}"));
    Agent::builder(Arc::new(client))
        .name("bench")
        .system_prompt(SYSTEM)
        .tools(Arc::new(registry()))
        .build()
}

async fn agentry_turn(agent: &Agent, context: &ToolContext) -> String {
    match agent.run(QUESTION).context(context.clone()).await {
        Ok(result) if result.tool_calls.len() == 1 => result.response,
        other => panic!("unexpected Agentry run: {other:?}"),
    }
}

// ---------------------------------------------------------------- bare side

/// What a hand-written client does: serde_json values in, Values out.
struct Bare {
    http: reqwest::Client,
    url: String,
    tools: Value,
}

impl Bare {
    fn new(address: SocketAddr, tools: Value) -> Self {
        Self {
            http: reqwest::Client::new(),
            url: format!("http://{address}/v1/chat/completions"),
            tools,
        }
    }

    async fn post(&self, body: &Value) -> Value {
        let bytes = serde_json::to_vec(body).unwrap_or_else(|error| panic!("{error}"));
        let response = self
            .http
            .post(&self.url)
            .bearer_auth(KEY)
            .header("content-type", "application/json")
            .body(bytes)
            .send()
            .await
            .unwrap_or_else(|error| panic!("{error}"));
        let bytes = response.bytes().await.unwrap_or_else(|error| panic!("{error}"));
        serde_json::from_slice(&bytes).unwrap_or_else(|error| panic!("{error}"))
    }

    async fn turn(&self) -> String {
        let mut messages = vec![
            json!({"role": "system", "content": SYSTEM}),
            json!({"role": "user", "content": QUESTION}),
        ];
        let first = self
            .post(&json!({"model": MODEL, "messages": messages, "tools": self.tools.clone(), "tool_choice": "auto"}))
            .await;
        let message = &first["choices"][0]["message"];
        let call = &message["tool_calls"][0];
        let arguments: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap_or("{}"))
            .unwrap_or_else(|error| panic!("{error}"));
        let unit = match arguments["unit"].as_str() {
            Some("fahrenheit") => Some(Unit::Fahrenheit),
            Some(_) => Some(Unit::Celsius),
            None => None,
        };
        let result = serde_json::to_string(&weather(unit.as_ref())).unwrap_or_else(|error| panic!("{error}"));
        messages.push(json!({"role": "assistant", "tool_calls": message["tool_calls"].clone()}));
        messages.push(json!({"role": "tool", "tool_call_id": call["id"].clone(), "content": result}));
        let second = self
            .post(&json!({"model": MODEL, "messages": messages, "tools": self.tools.clone(), "tool_choice": "auto"}))
            .await;
        match second["choices"][0]["message"]["content"].as_str() {
            Some(text) => text.to_owned(),
            None => panic!("no final text: {second}"),
        }
    }
}

// ---------------------------------------------------------------- breakdown helpers

/// The runner and registry alone: answers instantly from parsed responses.
struct InstantClient {
    call: ChatResponse,
    answer: ChatResponse,
}

#[async_trait]
impl LlmClient for InstantClient {
    fn provider(&self) -> &'static str {
        "openai"
    }
    fn model(&self) -> &'static str {
        MODEL
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            native_tools: true,
            parallel_tool_calls: true,
            streaming: true,
            ..Capabilities::default()
        }
    }
    async fn complete(&self, request: &ChatRequest, _: &CancellationToken) -> Result<ChatResponse, LlmError> {
        Ok(if request.has_tool_blocks() {
            self.answer.clone()
        } else {
            self.call.clone()
        })
    }
}

/// A raw keep-alive HTTP client that does not allocate, to show what the
/// server itself allocates per request.
async fn raw_requests(address: SocketAddr, count: usize) -> usize {
    let mut socket = TcpStream::connect(address)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let _ = socket.set_nodelay(true);
    let body = br#"{"messages":[{"role":"user","content":"hi"}]}"#;
    let mut request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {address}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    let expected = json_response(TOOL_CALL_RESPONSE).len();
    let mut buffer = vec![0u8; 64 * 1024];
    let region = Region::new(GLOBAL);
    for _ in 0..count {
        socket
            .write_all(&request)
            .await
            .unwrap_or_else(|error| panic!("{error}"));
        let mut read = 0;
        while read < expected {
            match socket.read(&mut buffer[read..]).await {
                Ok(0) | Err(_) => panic!("server closed"),
                Ok(n) => read += n,
            }
        }
    }
    region.change().allocations
}

fn per_turn<F: FnMut()>(turns: usize, mut turn: F) -> (f64, f64, f64) {
    let region = Region::new(GLOBAL);
    for _ in 0..turns {
        turn();
    }
    let stats = region.change();
    let n = turns as f64;
    (
        stats.allocations as f64 / n,
        stats.reallocations as f64 / n,
        stats.bytes_allocated as f64 / n,
    )
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn report(runtime: &Runtime, address: SocketAddr, agent: &Agent, bare: &Bare, context: &ToolContext) {
    const TURNS: usize = 2000;
    // Interleaved wall-clock medians.
    let (mut ours, mut theirs) = (Vec::with_capacity(TURNS), Vec::with_capacity(TURNS));
    for _ in 0..TURNS {
        let started = Instant::now();
        runtime.block_on(agentry_turn(agent, context));
        ours.push(started.elapsed());
        let started = Instant::now();
        runtime.block_on(bare.turn());
        theirs.push(started.elapsed());
    }
    let (ours, theirs) = (median(&mut ours), median(&mut theirs));

    let agentry_allocs = per_turn(1000, || {
        runtime.block_on(agentry_turn(agent, context));
    });
    let bare_allocs = per_turn(1000, || {
        runtime.block_on(bare.turn());
    });

    // Breakdown of Agentry's turn.
    let options = BodyOptions::new(MODEL);
    let definitions = agent.registry().definitions();
    let first = ChatRequest::new(vec![Message::user(QUESTION)])
        .with_system(SYSTEM)
        .with_tools(definitions);
    let call = parse_response(TOOL_CALL_RESPONSE.as_bytes()).unwrap_or_else(|error| panic!("{error}"));
    let answer = parse_response(ANSWER_RESPONSE.as_bytes()).unwrap_or_else(|error| panic!("{error}"));
    let mut second = first.clone();
    second.messages.push(Message::Assistant(call.message.clone()));
    second.messages.push(Message::tool(agent_core::ToolResult::success(
        call.message.tool_calls[0].id.clone(),
        "get_weather",
        r#"{"temp_c":21.0,"sky":"sunny"}"#,
    )));
    let mapper = per_turn(1000, || {
        let a = build_request_body(&first, &options).map(|body| body.len());
        let b = parse_response(TOOL_CALL_RESPONSE.as_bytes()).map(|r| r.message.tool_calls.len());
        let c = build_request_body(&second, &options).map(|body| body.len());
        let d = parse_response(ANSWER_RESPONSE.as_bytes()).map(|r| r.message.content.len());
        assert!(a.is_ok() && b.is_ok() && c.is_ok() && d.is_ok());
    });
    let first_body = Bytes::from(build_request_body(&first, &options).unwrap_or_default());
    let second_body = Bytes::from(build_request_body(&second, &options).unwrap_or_default());
    let http = HttpClient::new("openai", HttpConfig::default())
        .unwrap_or_else(|error| panic!("{error}"))
        .with_auth(AuthHeader::bearer(SecretString::new(KEY)));
    let url = format!("http://{address}/v1/chat/completions");
    let cancel = CancellationToken::new();
    let http_only = per_turn(1000, || {
        runtime.block_on(async {
            let a = http.post_json(&url, &[], first_body.clone(), &cancel).await;
            let b = http.post_json(&url, &[], second_body.clone(), &cancel).await;
            assert!(a.is_ok() && b.is_ok());
        });
    });
    let bare_http_only = per_turn(1000, || {
        runtime.block_on(async {
            for body in [&first_body, &second_body] {
                let response = bare
                    .http
                    .post(&bare.url)
                    .bearer_auth(KEY)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await
                    .unwrap_or_else(|error| panic!("{error}"));
                assert!(response.bytes().await.is_ok());
            }
        });
    });
    let instant = Agent::builder(Arc::new(InstantClient { call, answer }))
        .name("bench")
        .system_prompt(SYSTEM)
        .tools(Arc::clone(agent.registry()))
        .build();
    let runner_only = per_turn(1000, || {
        runtime.block_on(agentry_turn(&instant, context));
    });
    let registry = Arc::clone(agent.registry());
    let arguments = json!({"location": "Tokyo", "unit": "celsius"});
    let registry_only = per_turn(1000, || {
        runtime.block_on(async {
            assert!(
                registry
                    .execute("get_weather", &arguments, context)
                    .await
                    .outcome
                    .is_ok()
            );
        });
    });
    let server_only = runtime.block_on(raw_requests(address, 1000)) as f64 / 1000.0;

    println!();
    println!("agent_turn summary ({TURNS} interleaved turns each, medians):");
    println!(
        "  Agentry      median {:>8.1} µs   {:>6.1} allocs/turn ({:.1} reallocs, {:.0} bytes)",
        ours.as_secs_f64() * 1e6,
        agentry_allocs.0,
        agentry_allocs.1,
        agentry_allocs.2
    );
    println!(
        "  bare reqwest median {:>8.1} µs   {:>6.1} allocs/turn ({:.1} reallocs, {:.0} bytes)",
        theirs.as_secs_f64() * 1e6,
        bare_allocs.0,
        bare_allocs.1,
        bare_allocs.2
    );
    println!(
        "  ratio Agentry/bare: {:.3} (target <= 1.15); allocations target < 250",
        ours.as_secs_f64() / theirs.as_secs_f64()
    );
    println!("  breakdown of Agentry's allocations per turn (2 requests):");
    println!(
        "    adapter mapping (2 bodies built, 2 responses parsed) {:>6.1}",
        mapper.0
    );
    println!(
        "    agent-http transport (2 post_json)                   {:>6.1}",
        http_only.0
    );
    println!(
        "    runner + registry + tool (instant client)            {:>6.1}",
        runner_only.0
    );
    println!(
        "      of which registry.execute + tool                   {:>6.1}",
        registry_only.0
    );
    println!(
        "    bare reqwest transport alone (2 posts)               {:>6.1}",
        bare_http_only.0
    );
    println!("    mock server alone, per request                       {server_only:>6.1}");
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|error| panic!("{error}"));
    let address = start_server(&runtime);

    let agent = agentry(address);
    let tools = Value::Array(
        agent
            .registry()
            .definitions()
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name, "description": tool.description, "parameters": tool.input_schema}})
            })
            .collect(),
    );
    let bare = Bare::new(address, tools);
    let context = ToolContext::new();

    // Both sides must get the same answer.
    let ours = runtime.block_on(agentry_turn(&agent, &context));
    let theirs = runtime.block_on(bare.turn());
    assert_eq!(ours, theirs);

    let mut group = c.benchmark_group("agent_turn");
    group.bench_function("agentry", |b| {
        b.to_async(&runtime).iter(|| agentry_turn(&agent, &context));
    });
    group.bench_function("bare_reqwest", |b| {
        b.to_async(&runtime).iter(|| bare.turn());
    });
    group.finish();

    // `cargo test --benches` runs each benchmark once; the summary is for real runs.
    if std::env::args().any(|arg| arg == "--bench") {
        report(&runtime, address, &agent, &bare, &context);
    }
}

/// `AGENT_TURN_PROFILE=agentry|runner|bare [AGENT_TURN_COUNT=N]` runs only
/// that many turns of one side (no criterion), for heap profilers such as
/// heaptrack or `valgrind --tool=dhat`.
fn profile(mode: &str) {
    let turns: usize = std::env::var("AGENT_TURN_COUNT")
        .ok()
        .and_then(|count| count.parse().ok())
        .unwrap_or(10_000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|error| panic!("{error}"));
    let address = start_server(&runtime);
    let context = ToolContext::new();
    let agent = match mode {
        "runner" => {
            let call = parse_response(TOOL_CALL_RESPONSE.as_bytes()).unwrap_or_else(|error| panic!("{error}"));
            let answer = parse_response(ANSWER_RESPONSE.as_bytes()).unwrap_or_else(|error| panic!("{error}"));
            Agent::builder(Arc::new(InstantClient { call, answer }))
                .name("bench")
                .system_prompt(SYSTEM)
                .tools(Arc::new(registry()))
                .build()
        }
        _ => agentry(address),
    };
    let bare = Bare::new(address, json!([]));
    let region = Region::new(GLOBAL);
    for _ in 0..turns {
        if mode == "bare" {
            runtime.block_on(bare.turn());
        } else {
            runtime.block_on(agentry_turn(&agent, &context));
        }
    }
    let stats = region.change();
    println!(
        "{mode}: {:.1} allocations per turn over {turns} turns",
        stats.allocations as f64 / turns as f64
    );
}

criterion_group!(benches, bench);

fn main() {
    if let Ok(mode) = std::env::var("AGENT_TURN_PROFILE") {
        profile(&mode);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
