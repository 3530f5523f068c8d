//! The server's own memory per run in flight, to the byte: dhat's counting
//! allocator, the server in this process, 1,000 runs started by raw TCP
//! clients (a few hundred bytes each, so that nearly all that is counted is
//! the server's) and held at a model that answers when told to.
//!
//! ```text
//! cargo bench -p agent-server --bench in_flight_memory
//! ```
//!
//! What a run costs while it waits for the model: its HTTP connection
//! (hyper's buffers), the request's handler, the run's task and state, its
//! entry in the run registry and, with a session, its store lock. Not
//! counted: the model's own HTTP connection, which depends on the provider
//! (`serve_load` in agent-app measures whole processes).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_core::{CancellationToken, Capabilities, ChatRequest, ChatResponse, LlmClient, LlmError};
use agent_runner::Agent;
use agent_server::{ApiKeys, Server, hash_key};
use agent_store::InMemoryStore;
use async_trait::async_trait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

/// dhat's allocator counts the bytes allocated and not yet freed.
#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

const RUNS: usize = 1_000;
const KEY: &str = "memory-bench-key";

/// A model that counts the requests it got and answers each once the gate
/// opens.
struct HeldModel {
    waiting: AtomicUsize,
    gate: watch::Receiver<bool>,
}

#[async_trait]
impl LlmClient for HeldModel {
    fn provider(&self) -> &'static str {
        "held"
    }

    fn model(&self) -> &'static str {
        "held-1"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    async fn complete(&self, _request: &ChatRequest, _cancel: &CancellationToken) -> Result<ChatResponse, LlmError> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let mut gate = self.gate.clone();
        let _ = gate.wait_for(|open| *open).await;
        Ok(agent_testing::response::text("Done."))
    }
}

fn live() -> isize {
    dhat::HeapStats::get().curr_bytes.cast_signed()
}

/// One run request over a raw socket; the socket is kept open until the
/// answer comes.
async fn run_over_tcp(address: std::net::SocketAddr, body: String) -> usize {
    let mut socket = tokio::net::TcpStream::connect(address)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let request = format!(
        "POST /v1/runs HTTP/1.1\r\nhost: bench\r\nauthorization: Bearer {KEY}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    socket
        .write_all(request.as_bytes())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut answer = Vec::new();
    let _ = socket.read_to_end(&mut answer).await;
    answer.len()
}

/// How the runs are started.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Each client waits for its run's record: its connection stays open.
    Waiting,
    /// `"wait": false`: the connection closes at the 202.
    Background,
    /// Waiting, each run in a session of its own.
    WaitingInSessions,
}

async fn measure(mode: Mode) {
    let sessions = mode == Mode::WaitingInSessions;
    let (open, gate) = watch::channel(false);
    let model = Arc::new(HeldModel {
        waiting: AtomicUsize::new(0),
        gate,
    });
    let agent = Agent::builder(model.clone()).build();
    let store = Arc::new(InMemoryStore::new());
    let keys = ApiKeys::from_hashes([hash_key(KEY)]).unwrap_or_else(|e| panic!("{e}"));
    let server = Server::new(agent)
        .api_keys(keys)
        .store(store)
        .max_runs_per_key(RUNS * 2)
        .requests_per_minute(None);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let address = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(server.serve(listener, std::future::pending()));

    let mut bodies = Vec::with_capacity(RUNS);
    for i in 0..RUNS {
        let session = if sessions {
            let http = reqwest::Client::new();
            let created: serde_json::Value = http
                .post(format!("http://{address}/v1/sessions"))
                .bearer_auth(KEY)
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .json()
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            format!(r#","session":"{}""#, created["id"].as_str().unwrap_or_default())
        } else {
            String::new()
        };
        let wait = if mode == Mode::Background {
            r#","wait":false"#
        } else {
            ""
        };
        bodies.push(format!(r#"{{"prompt":"Run number {i}, please."{session}{wait}}}"#));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = live();
    let clients: Vec<_> = bodies
        .into_iter()
        .map(|body| tokio::spawn(run_over_tcp(address, body)))
        .collect();
    while model.waiting.load(Ordering::SeqCst) < RUNS {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let during = live();
    open.send_replace(true);
    for client in clients {
        let bytes = client.await.unwrap_or_else(|e| panic!("{e}"));
        assert!(bytes > 0, "every run answered");
    }
    let how = match mode {
        Mode::Waiting => "each with its client's connection open",
        Mode::Background => "started with \"wait\": false, connections closed",
        Mode::WaitingInSessions => "each in a session, with its client's connection open",
    };
    if mode == Mode::Background {
        // Their records are kept for a while as ended runs: not in flight.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "{RUNS} runs in flight, {how}: {:.1} KiB of heap each ({} bytes in all, raw TCP clients included)",
        (during - before) as f64 / RUNS as f64 / 1024.0,
        during - before
    );
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    for mode in [Mode::Background, Mode::Waiting, Mode::WaitingInSessions] {
        runtime.block_on(measure(mode));
    }
}
