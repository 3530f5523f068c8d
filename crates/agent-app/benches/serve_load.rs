//! Load on `agentry serve`: two instances on one PostgreSQL database (a
//! throwaway cluster), 1,000 concurrent runs against a mock OpenAI model
//! that answers after 50 ms on loopback.
//!
//! ```text
//! cargo bench -p agent-app --bench serve_load --no-default-features --features openai
//! ```
//!
//! It prints:
//! - memory per in-flight run: both instances' resident memory with 1,000
//!   runs (started with `"wait": false`) waiting for the model, less what
//!   they used idle, per run;
//! - throughput and the latency of 1,000 concurrent runs, each on the
//!   instance that did not create its session (p50, p99, and the same less
//!   the model's 50 ms: what Agentry adds);
//! - the latency of 200 runs one at a time, less the model's 50 ms;
//! - messages lost or duplicated: every session must hold exactly its
//!   turns afterwards.
//!
//! Needs PostgreSQL's `initdb` and `pg_ctl` (Debian's `postgresql`); the
//! figures go in the closing notes, not in a timed test.

mod serve_support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent_store_postgres::testing::TempCluster;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::watch;

use serve_support::{Instance, last_prompt, ms, percentile, sse_answer};

const RUNS: usize = 1_000;
/// Runs timed one at a time.
const SEQUENTIAL_RUNS: usize = 200;
const MODEL_LATENCY: Duration = Duration::from_millis(50);
const KEY: &str = "load-bench-key";

/// The mock model: answers every request after [`MODEL_LATENCY`], once the
/// gate is open, with a stream saying which prompt it answered.
#[derive(Clone)]
struct Model {
    received: Arc<AtomicUsize>,
    gate: watch::Receiver<bool>,
}

async fn complete(State(model): State<Model>, body: axum::body::Bytes) -> Response {
    model.received.fetch_add(1, Ordering::SeqCst);
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let mut gate = model.gate.clone();
    let _ = gate.wait_for(|open| *open).await;
    tokio::time::sleep(MODEL_LATENCY).await;
    let text = sse_answer(&format!("answer: {}", last_prompt(&request)));
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(text))
        .unwrap_or_default()
}

fn start_instance(dir: &Path, store_url: &str, model: &str) -> Instance {
    let config = format!(
        "[tools]\nenabled = []\n[serve]\napi_keys = [\"{}\"]\nmax_runs_per_key = {}\nrequests_per_minute = 0\n\
         [store]\nurl = \"{store_url}\"\n",
        agent_server::hash_key(KEY),
        RUNS * 2
    );
    Instance::start(dir, &config, model)
}

async fn post_json(http: &reqwest::Client, url: String, body: Value) -> Value {
    answer_json(http.post(url).json(&body)).await
}

async fn get_json(http: &reqwest::Client, url: &str) -> Value {
    answer_json(http.get(url)).await
}

/// The JSON answer of `request`, sent with the key; it must succeed.
async fn answer_json(request: reqwest::RequestBuilder) -> Value {
    let response = request.bearer_auth(KEY).send().await.unwrap_or_else(|e| panic!("{e}"));
    let status = response.status();
    let body: Value = response.json().await.unwrap_or_default();
    assert!(status.is_success(), "{status}: {body}");
    body
}

/// Runs `prompt(i)` in session `i` for every session at once, each on the
/// instance that did not create it; the latency of each.
async fn run_all(http: &reqwest::Client, instances: &[Instance], sessions: &[String], prompt: &str) -> Vec<Duration> {
    let runs = sessions.iter().enumerate().map(|(i, session)| {
        let url = format!("{}/v1/runs", instances[(i + 1) % 2].base);
        let body = json!({"prompt": format!("{prompt} {i}"), "session": session});
        async move {
            let started = Instant::now();
            let record = post_json(http, url, body).await;
            assert_eq!(record["stop_reason"], "completed", "{record}");
            started.elapsed()
        }
    });
    futures::future::join_all(runs).await
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    runtime.block_on(bench());
}

async fn bench() {
    let cluster = match TempCluster::start() {
        Ok(Some(cluster)) => cluster,
        Ok(None) => {
            eprintln!("serve_load: skipped, PostgreSQL is not installed");
            return;
        }
        Err(error) => panic!("{error}"),
    };
    let store_url = cluster
        .create_database("agentry")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (open, gate) = watch::channel(true);
    let model = Model {
        received: Arc::new(AtomicUsize::new(0)),
        gate,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let model_url = format!("http://{}", listener.local_addr().unwrap_or_else(|e| panic!("{e}")));
    let router = Router::new()
        .route("/v1/chat/completions", post(complete))
        .with_state(model.clone());
    tokio::spawn(async move { axum::serve(listener, router).await });

    let dirs = [(); 2].map(|()| tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")));
    let instances: Vec<Instance> = dirs
        .iter()
        .map(|dir| start_instance(dir.path(), &store_url, &model_url))
        .collect();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(RUNS)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));

    // Sessions, created alternately on each instance.
    let sessions: Vec<String> = futures::stream::iter(0..RUNS)
        .map(|i| {
            let url = format!("{}/v1/sessions", instances[i % 2].base);
            let http = &http;
            async move {
                post_json(http, url, json!({})).await["id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            }
        })
        .buffered(64)
        .collect()
        .await;

    // Memory: 1,000 runs started with `"wait": false` (their requests
    // answered, their connections closed) waiting for the model, against
    // the idle instances.
    let idle: u64 = instances.iter().map(Instance::rss_kib).sum();
    open.send_replace(false);
    futures::stream::iter(sessions.iter().enumerate())
        .map(|(i, session)| {
            let base = &instances[(i + 1) % 2].base;
            let body = json!({"prompt": format!("hold {i}"), "session": session, "wait": false});
            let http = &http;
            async move { post_json(http, format!("{base}/v1/runs"), body).await }
        })
        .buffered(64)
        .collect::<Vec<Value>>()
        .await;
    while model.received.load(Ordering::SeqCst) < RUNS {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let busy: u64 = instances.iter().map(Instance::rss_kib).sum();
    open.send_replace(true);
    // Each held run ends: its turn is stored in its session. (Only the
    // newest ended runs of a key keep their record, so the sessions tell.)
    for (i, session) in sessions.iter().enumerate() {
        let url = format!("{}/v1/sessions/{session}", instances[i % 2].base);
        while get_json(&http, &url).await["message_count"].as_u64().unwrap_or(0) < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    println!(
        "memory: {idle} KiB idle, {busy} KiB with {RUNS} runs in flight (two instances, each run waiting for the model \
         on its own HTTP/1.1 connection): {:.1} KiB per in-flight run",
        (busy.saturating_sub(idle)) as f64 / RUNS as f64
    );

    // Latency and throughput.
    let started = Instant::now();
    let mut latencies = run_all(&http, &instances, &sessions, "run").await;
    let wall = started.elapsed();
    latencies.sort_unstable();
    let (p50, p99) = (percentile(&latencies, 0.50), percentile(&latencies, 0.99));
    println!(
        "throughput: {RUNS} concurrent runs in {:.0} ms = {:.0} runs/s",
        ms(wall),
        RUNS as f64 / wall.as_secs_f64()
    );
    println!(
        "latency: p50 {:.1} ms, p99 {:.1} ms; added by Agentry over the model's {} ms: p50 {:.1} ms, p99 {:.1} ms",
        ms(p50),
        ms(p99),
        MODEL_LATENCY.as_millis(),
        ms(p50.saturating_sub(MODEL_LATENCY)),
        ms(p99.saturating_sub(MODEL_LATENCY))
    );

    // One run at a time: the latency Agentry adds without queueing (a
    // third turn of the first sessions, on the instance that created them).
    let mut alone = Vec::with_capacity(SEQUENTIAL_RUNS);
    for (i, session) in sessions.iter().enumerate().take(SEQUENTIAL_RUNS) {
        let url = format!("{}/v1/runs", instances[i % 2].base);
        let started = Instant::now();
        let record = post_json(&http, url, json!({"prompt": format!("alone {i}"), "session": session})).await;
        alone.push(started.elapsed());
        assert_eq!(record["stop_reason"], "completed", "{record}");
    }
    alone.sort_unstable();
    let (p50, p99) = (percentile(&alone, 0.50), percentile(&alone, 0.99));
    println!(
        "latency, one run at a time ({SEQUENTIAL_RUNS} runs): p50 {:.1} ms, p99 {:.1} ms; added by Agentry over the \
         model's {} ms: p50 {:.1} ms, p99 {:.1} ms",
        ms(p50),
        ms(p99),
        MODEL_LATENCY.as_millis(),
        ms(p50.saturating_sub(MODEL_LATENCY)),
        ms(p99.saturating_sub(MODEL_LATENCY))
    );

    // Every session holds exactly its turns, each once, in order.
    let problems: Vec<String> = futures::stream::iter(sessions.iter().enumerate())
        .map(|(i, session)| {
            let url = format!("{}/v1/sessions/{session}", instances[i % 2].base);
            let http = &http;
            async move {
                let shown = get_json(http, &url).await;
                let texts: Vec<&str> = shown["messages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|m| m["content"].as_str())
                    .collect();
                let mut expected = vec![
                    format!("hold {i}"),
                    format!("answer: hold {i}"),
                    format!("run {i}"),
                    format!("answer: run {i}"),
                ];
                if i < SEQUENTIAL_RUNS {
                    expected.extend([format!("alone {i}"), format!("answer: alone {i}")]);
                }
                (texts != expected).then(|| format!("{session}: {texts:?}"))
            }
        })
        .buffer_unordered(64)
        .filter_map(|problem| async move { problem })
        .collect()
        .await;
    println!(
        "messages: {} sessions checked, {} with lost or duplicated messages",
        sessions.len(),
        problems.len()
    );
    for problem in problems.iter().take(5) {
        println!("  {problem}");
    }
    assert!(problems.is_empty());
}
