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
use agent_tools::{Json, ToolBox, ToolSet, TypedTool};
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

fn registry() -> ToolBox {
    let tool = TypedTool::new(
        "get_weather",
        "Current weather for a city.",
        |args: WeatherArgs, _: ToolContext| async move {
            let _ = &args.location;
            Ok::<_, ToolError>(Json(weather(args.unit.as_ref())))
        },
    );
    let registry = ToolBox::new();
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

/// What a careful hand-written client does: typed request structs that
/// borrow the conversation, the tool list serialised from one value made
/// at start, typed responses, and the tool run inline. The lean side of
/// the comparison, as an outside harness would write it.
struct Bare {
    http: reqwest::Client,
    url: reqwest::Url,
    tools: Value,
}

#[derive(serde::Serialize)]
struct BareRequest<'a> {
    model: &'a str,
    messages: &'a [BareMessage<'a>],
    tools: &'a Value,
    tool_choice: &'static str,
}

#[derive(serde::Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum BareMessage<'a> {
    System { content: &'a str },
    User { content: &'a str },
    Assistant { tool_calls: &'a [BareCall] },
    Tool { tool_call_id: &'a str, content: &'a str },
}

#[derive(serde::Deserialize)]
struct BareResponse {
    choices: Vec<BareChoice>,
}

#[derive(serde::Deserialize)]
struct BareChoice {
    message: BareReply,
}

#[derive(serde::Deserialize)]
struct BareReply {
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<BareCall>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct BareCall {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    function: BareFunction,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct BareFunction {
    name: String,
    arguments: String,
}

/// One bare POST: the request as a hand-written client sends it, the
/// whole reply body back.
async fn bare_exchange(http: &reqwest::Client, url: &reqwest::Url, body: impl Into<reqwest::Body>) -> Bytes {
    let response = http
        .post(url.clone())
        .bearer_auth(KEY)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    response.bytes().await.unwrap_or_else(|error| panic!("{error}"))
}

/// The bare client's tool list: the registry's definitions as one JSON
/// value, made once.
fn bare_tools(registry: &dyn agent_core::ToolRegistry) -> Value {
    Value::Array(
        registry
            .definitions()
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name, "description": tool.description, "parameters": tool.input_schema}})
            })
            .collect(),
    )
}

impl Bare {
    fn new(address: SocketAddr, tools: Value) -> Self {
        let url = format!("http://{address}/v1/chat/completions");
        Self {
            http: reqwest::Client::new(),
            url: reqwest::Url::parse(&url).unwrap_or_else(|error| panic!("{error}")),
            tools,
        }
    }

    async fn post(&self, messages: &[BareMessage<'_>]) -> BareReply {
        let request = BareRequest {
            model: MODEL,
            messages,
            tools: &self.tools,
            tool_choice: "auto",
        };
        let bytes = serde_json::to_vec(&request).unwrap_or_else(|error| panic!("{error}"));
        let bytes = bare_exchange(&self.http, &self.url, bytes).await;
        let response: BareResponse = serde_json::from_slice(&bytes).unwrap_or_else(|error| panic!("{error}"));
        match response.choices.into_iter().next() {
            Some(choice) => choice.message,
            None => panic!("no choice in the reply"),
        }
    }

    async fn turn(&self) -> String {
        let mut messages = vec![
            BareMessage::System { content: SYSTEM },
            BareMessage::User { content: QUESTION },
        ];
        let first = self.post(&messages).await;
        let Some(call) = first.tool_calls.first() else {
            panic!("no tool call in the first reply");
        };
        let arguments: WeatherArgs =
            serde_json::from_str(&call.function.arguments).unwrap_or_else(|error| panic!("{error}"));
        let result = serde_json::to_string(&weather(arguments.unit.as_ref())).unwrap_or_else(|error| panic!("{error}"));
        messages.push(BareMessage::Assistant {
            tool_calls: &first.tool_calls,
        });
        messages.push(BareMessage::Tool {
            tool_call_id: &call.id,
            content: &result,
        });
        match self.post(&messages).await.content {
            Some(text) => text,
            None => panic!("no final text in the second reply"),
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

/// Allocations, reallocations and bytes per turn, and the mean time of one.
fn per_turn<F: FnMut()>(turns: usize, mut turn: F) -> (f64, f64, f64, f64) {
    let region = Region::new(GLOBAL);
    let started = Instant::now();
    for _ in 0..turns {
        turn();
    }
    let elapsed = started.elapsed();
    let stats = region.change();
    let n = turns as f64;
    (
        stats.allocations as f64 / n,
        stats.reallocations as f64 / n,
        stats.bytes_allocated as f64 / n,
        elapsed.as_secs_f64() * 1e6 / n,
    )
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// The turn's two requests as the runner sends them: the question, then
/// the question, the tool call and its result.
fn requests(registry: &dyn agent_core::ToolRegistry) -> (ChatRequest, ChatRequest) {
    let first = ChatRequest::new(vec![Message::user(QUESTION)])
        .with_system(SYSTEM)
        .with_tools(registry.definitions());
    let call = parse_response(TOOL_CALL_RESPONSE.as_bytes()).unwrap_or_else(|error| panic!("{error}"));
    let mut second = first.clone();
    second.messages.push(Message::Assistant(call.message.clone()));
    second.messages.push(Message::tool(agent_core::ToolResult::success(
        call.message.tool_calls[0].id.clone(),
        "get_weather",
        r#"{"temp_c":21.0,"sky":"sunny"}"#,
    )));
    (first, second)
}

/// The adapter's share of a turn: both bodies built, both replies parsed.
fn map_turn(first: &ChatRequest, second: &ChatRequest, options: &BodyOptions) {
    let a = build_request_body(first, options).map(|body| body.len());
    let b = parse_response(TOOL_CALL_RESPONSE.as_bytes()).map(|r| r.message.tool_calls.len());
    let c = build_request_body(second, options).map(|body| body.len());
    let d = parse_response(ANSWER_RESPONSE.as_bytes()).map(|r| r.message.content.len());
    assert!(a.is_ok() && b.is_ok() && c.is_ok() && d.is_ok());
}

/// Rounds of the timing comparison, and turns of each side in a round.
const ROUNDS: usize = 5;
const TURNS_PER_ROUND: usize = 1000;

/// The median time of `TURNS_PER_ROUND` turns of one side.
fn round_median(mut turn: impl FnMut()) -> Duration {
    let mut samples = Vec::with_capacity(TURNS_PER_ROUND);
    for _ in 0..TURNS_PER_ROUND {
        let started = Instant::now();
        turn();
        samples.push(started.elapsed());
    }
    median(&mut samples)
}

fn report(runtime: &Runtime, address: SocketAddr, agent: &Agent, bare: &Bare, context: &ToolContext) {
    // Alternating rounds: each side's median in every round, the side that
    // goes first alternating, and the median of the rounds' ratios.
    let mut ratios = Vec::with_capacity(ROUNDS);
    let (mut ours_all, mut theirs_all) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let agentry_round = || round_median(|| drop(runtime.block_on(agentry_turn(agent, context))));
        let bare_round = || round_median(|| drop(runtime.block_on(bare.turn())));
        let (ours, theirs) = if round % 2 == 0 {
            let ours = agentry_round();
            (ours, bare_round())
        } else {
            let theirs = bare_round();
            (agentry_round(), theirs)
        };
        println!(
            "  round {}: Agentry {:>7.1} µs, bare {:>7.1} µs, ratio {:.3}",
            round + 1,
            ours.as_secs_f64() * 1e6,
            theirs.as_secs_f64() * 1e6,
            ours.as_secs_f64() / theirs.as_secs_f64()
        );
        ratios.push(ours.as_secs_f64() / theirs.as_secs_f64());
        ours_all.push(ours);
        theirs_all.push(theirs);
    }
    ratios.sort_by(f64::total_cmp);
    let ratio = ratios[ratios.len() / 2];
    let (ours, theirs) = (median(&mut ours_all), median(&mut theirs_all));

    let agentry_allocs = per_turn(1000, || {
        runtime.block_on(agentry_turn(agent, context));
    });
    let bare_allocs = per_turn(1000, || {
        runtime.block_on(bare.turn());
    });

    // Breakdown of Agentry's turn.
    let options = BodyOptions::new(MODEL);
    let (first, second) = requests(agent.registry().as_ref());
    let mapper = per_turn(1000, || map_turn(&first, &second, &options));
    let first_body = Bytes::from(build_request_body(&first, &options).unwrap_or_default());
    let second_body = Bytes::from(build_request_body(&second, &options).unwrap_or_default());
    let http = HttpClient::new("openai", HttpConfig::default())
        .unwrap_or_else(|error| panic!("{error}"))
        .with_auth(AuthHeader::bearer(SecretString::new(KEY)));
    // Parsed once, as the provider does.
    let url = agent_http::parse_url(&format!("http://{address}/v1/chat/completions"))
        .unwrap_or_else(|error| panic!("{error}"));
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
                bare_exchange(&bare.http, &bare.url, body.clone()).await;
            }
        });
    });
    let call = parse_response(TOOL_CALL_RESPONSE.as_bytes()).unwrap_or_else(|error| panic!("{error}"));
    let answer = parse_response(ANSWER_RESPONSE.as_bytes()).unwrap_or_else(|error| panic!("{error}"));
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
    println!("agent_turn summary (medians of {ROUNDS} alternating rounds of {TURNS_PER_ROUND} turns each):");
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
    println!("  ratio Agentry/bare, median of the rounds: {ratio:.3} (target <= 1.10); allocations target < 150");
    println!("  breakdown of Agentry's turn (2 requests): allocations, mean µs");
    println!(
        "    adapter mapping (2 bodies built, 2 responses parsed) {:>6.1} {:>7.1} µs",
        mapper.0, mapper.3
    );
    println!(
        "    agent-http transport (2 post_json)                   {:>6.1} {:>7.1} µs",
        http_only.0, http_only.3
    );
    println!(
        "    runner + registry + tool (instant client)            {:>6.1} {:>7.1} µs",
        runner_only.0, runner_only.3
    );
    println!(
        "      of which registry.execute + tool                   {:>6.1} {:>7.1} µs",
        registry_only.0, registry_only.3
    );
    println!(
        "    bare reqwest transport alone (2 posts)               {:>6.1} {:>7.1} µs",
        bare_http_only.0, bare_http_only.3
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
    let bare = Bare::new(address, bare_tools(agent.registry().as_ref()));
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

/// `AGENT_TURN_PROFILE=agentry|runner|bare|mapper|client|http|bare-http
/// [AGENT_TURN_COUNT=N]` runs only that many turns of one side or one part
/// (no criterion), for profilers (`perf record`, heaptrack,
/// `valgrind --tool=dhat`).
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
    if mode == "mapper" {
        let (first, second) = requests(&registry());
        let options = BodyOptions::new(MODEL);
        let region = Region::new(GLOBAL);
        for _ in 0..turns {
            map_turn(&first, &second, &options);
        }
        let stats = region.change();
        println!(
            "mapper: {:.1} allocations per turn over {turns} turns",
            stats.allocations as f64 / turns as f64
        );
        return;
    }
    if mode == "client" {
        let (first, second) = requests(&registry());
        let mut config = OpenAiConfig::openai(MODEL).with_api_key(KEY);
        config.base_url = Some(format!("http://{address}/v1"));
        let client = OpenAiClient::new(config).unwrap_or_else(|error| panic!("{error}"));
        let cancel = CancellationToken::new();
        for _ in 0..turns {
            runtime.block_on(async {
                for request in [&first, &second] {
                    assert!(client.complete(request, &cancel).await.is_ok());
                }
            });
        }
        return;
    }
    if mode == "http" || mode == "bare-http" {
        let (first, second) = requests(&registry());
        let options = BodyOptions::new(MODEL);
        let bodies = [
            Bytes::from(build_request_body(&first, &options).unwrap_or_default()),
            Bytes::from(build_request_body(&second, &options).unwrap_or_default()),
        ];
        let http = HttpClient::new("openai", HttpConfig::default())
            .unwrap_or_else(|error| panic!("{error}"))
            .with_auth(AuthHeader::bearer(SecretString::new(KEY)));
        let url = agent_http::parse_url(&format!("http://{address}/v1/chat/completions"))
            .unwrap_or_else(|error| panic!("{error}"));
        let bare = reqwest::Client::new();
        let cancel = CancellationToken::new();
        for _ in 0..turns {
            runtime.block_on(async {
                for body in &bodies {
                    let ok = if mode == "http" {
                        http.post_json(&url, &[], body.clone(), &cancel).await.is_ok()
                    } else {
                        !bare_exchange(&bare, &url, body.clone()).await.is_empty()
                    };
                    assert!(ok);
                }
            });
        }
        return;
    }
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
    let bare = Bare::new(address, bare_tools(&registry()));
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
