//! A soak of `agentry serve` (issue 34, item 4): two instances on one
//! PostgreSQL database (a throwaway cluster), a mock OpenAI model that
//! fails 5% of its calls (500) and drips 5% of its answers (a few bytes
//! every 20 ms), and clients of two keys that for ten minutes create
//! sessions, run turns, follow runs' events, disconnect mid-stream, cancel
//! runs, and try to read the other key's sessions and runs.
//!
//! ```text
//! cargo bench -p agent-app --bench serve_soak --no-default-features --features openai,serve,postgres,sqlite
//! AGENTRY_SOAK_SECS=60 cargo bench ...   # a shorter soak
//! ```
//!
//! It prints the instances' resident memory and open files before the load,
//! after a warm-up of a tenth as long (the pools and caches warm; a minute
//! of the ten) and at the end; the
//! latency of awaited runs (p50, p99, max); what the clients did; and the
//! three counts that must be 0: messages lost or duplicated (each session
//! checked against the turns its client saw end, before it is deleted and
//! at the end), reads of another key's session or run that did not get
//! 404, and unexpected answers. It fails when one of them is not 0, when
//! memory grew 10% or more after the warm-up, or when the open files do
//! not come back to the warm baseline.

mod serve_support;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use agent_store_postgres::testing::TempCluster;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};

use serve_support::{Instance, last_prompt, ms, percentile, sse_answer};

const KEYS: [&str; 2] = ["soak-key-a", "soak-key-b"];
const WORKERS: u64 = 12;
const TURNS_PER_SESSION: u64 = 10;
const DEFAULT_SECS: u64 = 600;
const MODEL_LATENCY: Duration = Duration::from_millis(30);
const DRIP_PIECE: usize = 24;
const DRIP_EVERY: Duration = Duration::from_millis(20);

/// splitmix64: the soak's only randomness, from fixed seeds.
fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A seeded sequence of numbers.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, sides: u64) -> u64 {
        self.0 = mix(self.0);
        self.0 % sides
    }
}

/// The mock model's counters.
#[derive(Default)]
struct Model {
    calls: AtomicU64,
    failed: AtomicU64,
    dripped: AtomicU64,
}

fn answer(prompt: &str) -> String {
    format!("answer: {prompt}")
}

async fn complete(State(model): State<Arc<Model>>, body: Bytes) -> Response {
    let call = model.calls.fetch_add(1, Ordering::Relaxed);
    let roll = mix(call ^ 0x50AC) % 100;
    if roll < 5 {
        model.failed.fetch_add(1, Ordering::Relaxed);
        return Response::builder()
            .status(500)
            .header("content-type", "application/json")
            .body(Body::from(
                r#"{"error":{"message":"the mock failed","type":"server_error"}}"#,
            ))
            .unwrap_or_default();
    }
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let text = sse_answer(&answer(&last_prompt(&request)));
    let body = if roll < 10 {
        model.dripped.fetch_add(1, Ordering::Relaxed);
        let pieces: Vec<Bytes> = text
            .into_bytes()
            .chunks(DRIP_PIECE)
            .map(Bytes::copy_from_slice)
            .collect();
        Body::from_stream(futures::stream::iter(pieces).then(|piece| async move {
            tokio::time::sleep(DRIP_EVERY).await;
            Ok::<_, std::convert::Infallible>(piece)
        }))
    } else {
        tokio::time::sleep(MODEL_LATENCY).await;
        Body::from(text)
    };
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(body)
        .unwrap_or_default()
}

/// What the clients did and saw.
#[derive(Default)]
struct Tally {
    awaited: Vec<Duration>,
    counts: HashMap<&'static str, u64>,
    /// Sessions whose messages were not the turns their client saw end.
    lost_or_duplicated: Vec<String>,
    /// Reads of another key's session or run that did not answer 404.
    cross_key_reads: Vec<String>,
    /// Answers no client expects (a status, a broken body).
    unexpected: Vec<String>,
}

/// What every client shares.
struct Soak {
    instances: [String; 2],
    http: reqwest::Client,
    tally: Mutex<Tally>,
    /// Live sessions and runs by key index, for the cross-key probes.
    sessions: Mutex<Vec<(usize, usize, String)>>,
    runs: Mutex<Vec<(usize, usize, String)>>,
}

impl Soak {
    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn count(&self, what: &'static str) {
        *self.tally().counts.entry(what).or_default() += 1;
    }

    fn unexpected(&self, what: String) {
        let mut tally = self.tally();
        if tally.unexpected.len() < 20 {
            eprintln!("serve_soak: unexpected: {what}");
        }
        tally.unexpected.push(what);
    }
}

/// One client: key `KEYS[worker % 2]`, sessions of a few turns each, until
/// `deadline`.
async fn client(soak: Arc<Soak>, worker: u64, deadline: Instant) {
    let key_index = usize::try_from(worker % 2).unwrap_or(0);
    let key = KEYS[key_index];
    let mut dice = Dice(mix(worker + 1));
    let mut session_number = 0;
    while Instant::now() < deadline {
        let home = usize::try_from(dice.roll(2)).unwrap_or(0);
        let created = soak
            .http
            .post(format!("{}/v1/sessions", soak.instances[home]))
            .bearer_auth(key)
            .send()
            .await;
        let id = match created {
            Ok(response) if response.status() == StatusCode::CREATED => {
                let body: Value = response.json().await.unwrap_or_default();
                body["id"].as_str().unwrap_or_default().to_owned()
            }
            other => {
                soak.unexpected(format!("creating a session: {other:?}"));
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        lock(&soak.sessions).push((key_index, home, id.clone()));
        let mut session = Session {
            soak: &soak,
            key,
            id: id.clone(),
            expected: Vec::new(),
        };
        for turn in 0..TURNS_PER_SESSION {
            if Instant::now() >= deadline {
                break;
            }
            let prompt = format!("w{worker} s{session_number} t{turn}");
            let instance = usize::try_from(dice.roll(2)).unwrap_or(0);
            match dice.roll(100) {
                0..55 => session.awaited(instance, &prompt).await,
                55..70 => session.followed(instance, &prompt, Follow::ToTheEnd, &mut dice).await,
                70..80 => session.followed(instance, &prompt, Follow::Disconnect, &mut dice).await,
                80..90 => session.followed(instance, &prompt, Follow::Cancel, &mut dice).await,
                90..95 => chat_stream_dropped(&soak, key, instance, &prompt).await,
                _ => cross_key_probe(&soak, key_index, &mut dice).await,
            }
        }
        session.check("before deleting it").await;
        lock(&soak.sessions).retain(|(_, _, known)| *known != id);
        match soak
            .http
            .delete(format!("{}/v1/sessions/{id}", soak.instances[home]))
            .bearer_auth(key)
            .send()
            .await
        {
            Ok(response) if response.status() == StatusCode::NO_CONTENT => soak.count("sessions deleted"),
            other => soak.unexpected(format!("deleting {id}: {other:?}")),
        }
        session_number += 1;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How a client follows a run started with `"wait": false`.
#[derive(Clone, Copy)]
enum Follow {
    /// Reads its events to the end.
    ToTheEnd,
    /// Reads the first events, then closes the connection.
    Disconnect,
    /// Cancels it after a moment.
    Cancel,
}

/// A session and the messages its client knows it holds.
struct Session<'a> {
    soak: &'a Soak,
    key: &'static str,
    id: String,
    expected: Vec<(String, String)>,
}

impl Session<'_> {
    /// A run awaited (`POST /v1/runs`, its record as the answer).
    async fn awaited(&mut self, instance: usize, prompt: &str) {
        let started = Instant::now();
        let response = self
            .soak
            .http
            .post(format!("{}/v1/runs", self.soak.instances[instance]))
            .bearer_auth(self.key)
            .json(&json!({"prompt": prompt, "session": self.id}))
            .send()
            .await;
        let response = match response {
            Ok(response) => response,
            Err(error) => return self.soak.unexpected(format!("POST /v1/runs: {error}")),
        };
        let status = response.status();
        let record: Value = response.json().await.unwrap_or_default();
        if status == StatusCode::OK && record["stop_reason"] == "completed" {
            self.soak.tally().awaited.push(started.elapsed());
            self.soak.count("runs awaited, completed");
            self.ended(prompt, &record);
        } else if status == StatusCode::BAD_GATEWAY {
            // The model failed past its retries: a typed error, nothing kept.
            self.soak
                .count("runs awaited, failed (the model's 500s past the retries)");
            self.resync(prompt).await;
        } else {
            self.soak
                .unexpected(format!("POST /v1/runs answered {status}: {record}"));
            self.resync(prompt).await;
        }
    }

    /// A run started with `"wait": false` and followed as `follow` says.
    async fn followed(&mut self, instance: usize, prompt: &str, follow: Follow, dice: &mut Dice) {
        let base = &self.soak.instances[instance];
        let started = self
            .soak
            .http
            .post(format!("{base}/v1/runs"))
            .bearer_auth(self.key)
            .json(&json!({"prompt": prompt, "session": self.id, "wait": false}))
            .send()
            .await;
        let run = match started {
            Ok(response) if response.status() == StatusCode::ACCEPTED => {
                let body: Value = response.json().await.unwrap_or_default();
                body["id"].as_str().unwrap_or_default().to_owned()
            }
            other => return self.soak.unexpected(format!("POST /v1/runs (no wait): {other:?}")),
        };
        let key_index = KEYS.iter().position(|key| *key == self.key).unwrap_or(0);
        {
            let mut runs = lock(&self.soak.runs);
            runs.push((key_index, instance, run.clone()));
            if runs.len() > 64 {
                runs.remove(0);
            }
        }
        match follow {
            Follow::ToTheEnd | Follow::Disconnect => {
                let events = self
                    .soak
                    .http
                    .get(format!("{base}/v1/runs/{run}/events"))
                    .bearer_auth(self.key)
                    .send()
                    .await;
                match events {
                    Ok(mut response) if response.status() == StatusCode::OK => {
                        if let Follow::Disconnect = follow {
                            let _ = response.chunk().await;
                            drop(response);
                            self.soak.count("event streams left mid-stream");
                        } else {
                            while let Ok(Some(_)) = response.chunk().await {}
                            self.soak.count("event streams read to the end");
                        }
                    }
                    other => self.soak.unexpected(format!("GET events of {run}: {other:?}")),
                }
            }
            Follow::Cancel => {
                tokio::time::sleep(Duration::from_millis(dice.roll(80))).await;
                match self
                    .soak
                    .http
                    .post(format!("{base}/v1/runs/{run}/cancel"))
                    .bearer_auth(self.key)
                    .send()
                    .await
                {
                    Ok(response) if response.status().is_success() => self.soak.count("runs cancelled"),
                    other => self.soak.unexpected(format!("cancelling {run}: {other:?}")),
                }
            }
        }
        // The run's end, from its record.
        loop {
            let polled = self
                .soak
                .http
                .get(format!("{base}/v1/runs/{run}"))
                .bearer_auth(self.key)
                .send()
                .await;
            let body: Value = match polled {
                Ok(response) if response.status() == StatusCode::OK => response.json().await.unwrap_or_default(),
                other => return self.soak.unexpected(format!("GET /v1/runs/{run}: {other:?}")),
            };
            if body["status"] == "ended" {
                let record = &body["record"];
                if record["stop_reason"] == "completed" {
                    self.ended(prompt, record);
                } else {
                    self.resync(prompt).await;
                }
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A run that completed: its prompt and answer are the session's next
    /// two messages.
    fn ended(&mut self, prompt: &str, record: &Value) {
        if record["response"] != json!(answer(prompt)) {
            self.soak
                .unexpected(format!("the answer to {prompt} was {}", record["response"]));
        }
        self.expected.push(("user".to_owned(), prompt.to_owned()));
        self.expected.push(("assistant".to_owned(), answer(prompt)));
    }

    /// After a run that did not complete: the session holds what it held,
    /// then at most what the run kept (its prompt once, no other turn).
    async fn resync(&mut self, prompt: &str) {
        let Some(stored) = self.stored().await else { return };
        let whole = stored.starts_with(&self.expected) && {
            let kept = &stored[self.expected.len()..];
            let prompts = kept.iter().filter(|(role, _)| role == "user").count();
            kept.is_empty() || (kept[0].0 == "user" && kept[0].1 == prompt && prompts == 1)
        };
        if !whole {
            self.lost(&format!("after {prompt}, which did not complete"), &stored);
        }
        self.expected = stored;
    }

    /// Checks the session holds exactly the messages its client expects.
    async fn check(&mut self, when: &str) {
        let Some(stored) = self.stored().await else { return };
        if stored == self.expected {
            self.soak.count("sessions checked whole");
        } else {
            self.lost(when, &stored);
        }
    }

    fn lost(&self, when: &str, stored: &[(String, String)]) {
        let message = format!("{} {when}: expected {:?}, stored {:?}", self.id, self.expected, stored);
        eprintln!("serve_soak: lost or duplicated: {message}");
        self.soak.tally().lost_or_duplicated.push(message);
    }

    /// The session's messages (role, text), read from either instance.
    async fn stored(&self) -> Option<Vec<(String, String)>> {
        let base = &self.soak.instances[self.expected.len() % 2];
        let shown = self
            .soak
            .http
            .get(format!("{base}/v1/sessions/{}", self.id))
            .bearer_auth(self.key)
            .send()
            .await;
        let body: Value = match shown {
            Ok(response) if response.status() == StatusCode::OK => response.json().await.unwrap_or_default(),
            other => {
                self.soak.unexpected(format!("GET /v1/sessions/{}: {other:?}", self.id));
                return None;
            }
        };
        Some(
            body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|message| {
                    (
                        message["role"].as_str().unwrap_or_default().to_owned(),
                        message["content"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect(),
        )
    }
}

/// `/v1/chat/completions` streamed, left after its first chunk.
async fn chat_stream_dropped(soak: &Soak, key: &str, instance: usize, prompt: &str) {
    let response = soak
        .http
        .post(format!("{}/v1/chat/completions", soak.instances[instance]))
        .bearer_auth(key)
        .json(&json!({"model": "agentry", "stream": true, "messages": [{"role": "user", "content": prompt}]}))
        .send()
        .await;
    match response {
        Ok(mut response) if response.status() == StatusCode::OK => {
            let _ = response.chunk().await;
            soak.count("chat completion streams left mid-stream");
        }
        other => soak.unexpected(format!("POST /v1/chat/completions: {other:?}")),
    }
}

/// Reads a session and a run of the other key with this one: 404 each.
async fn cross_key_probe(soak: &Soak, key_index: usize, dice: &mut Dice) {
    let key = KEYS[key_index];
    let pick = |items: &Mutex<Vec<(usize, usize, String)>>, dice: &mut Dice| {
        let items = lock(items);
        let others: Vec<&(usize, usize, String)> = items.iter().filter(|(owner, _, _)| *owner != key_index).collect();
        let count = u64::try_from(others.len()).unwrap_or(0);
        (count > 0).then(|| others[usize::try_from(dice.roll(count)).unwrap_or(0)].clone())
    };
    let targets = [
        pick(&soak.sessions, dice).map(|(_, instance, id)| format!("{}/v1/sessions/{id}", soak.instances[instance])),
        pick(&soak.runs, dice).map(|(_, instance, id)| format!("{}/v1/runs/{id}", soak.instances[instance])),
    ];
    for url in targets.into_iter().flatten() {
        match soak.http.get(&url).bearer_auth(key).send().await {
            Ok(response) if response.status() == StatusCode::NOT_FOUND => {
                soak.count("reads of another key's items (404)");
            }
            Ok(response) => {
                let status = response.status();
                soak.tally()
                    .cross_key_reads
                    .push(format!("GET {url} with the other key: {status}"));
            }
            Err(error) => soak.unexpected(format!("GET {url}: {error}")),
        }
    }
}

/// Both instances' resident memory (KiB) and open files.
fn held(instances: &[Instance]) -> (u64, usize) {
    (
        instances.iter().map(Instance::rss_kib).sum(),
        instances.iter().map(Instance::open_files).sum(),
    )
}

fn client_http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs the clients against `instances` until `deadline`.
async fn load(instances: &[Instance], http: reqwest::Client, deadline: Instant) -> Tally {
    let soak = Arc::new(Soak {
        instances: [instances[0].base.clone(), instances[1].base.clone()],
        http,
        tally: Mutex::new(Tally::default()),
        sessions: Mutex::new(Vec::new()),
        runs: Mutex::new(Vec::new()),
    });
    let clients: Vec<_> = (0..WORKERS)
        .map(|worker| tokio::spawn(client(Arc::clone(&soak), worker, deadline)))
        .collect();
    for client in clients {
        if let Err(error) = client.await {
            panic!("a client failed: {error}");
        }
    }
    let soak = Arc::into_inner(soak).unwrap_or_else(|| panic!("the clients are done"));
    soak.tally.into_inner().unwrap_or_else(PoisonError::into_inner)
}

/// Waits (up to two minutes) for the open files to come back to `baseline`
/// once the clients' connections are closed; the count and the wait.
async fn settle(instances: &[Instance], baseline: usize) -> (usize, Duration) {
    let started = Instant::now();
    loop {
        let (_, files) = held(instances);
        if files <= baseline || started.elapsed() > Duration::from_secs(120) {
            return (files, started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    runtime.block_on(soak());
}

fn start_instance(dir: &Path, store_url: &str, model: &str) -> Instance {
    let config = format!(
        "[tools]\nenabled = []\n[serve]\napi_keys = [\"{}\", \"{}\"]\nrequests_per_minute = 0\n\
         [store]\nurl = \"{store_url}\"\n",
        agent_server::hash_key(KEYS[0]),
        agent_server::hash_key(KEYS[1]),
    );
    Instance::start(dir, &config, model)
}

#[allow(clippy::too_many_lines)]
async fn soak() {
    let seconds = std::env::var("AGENTRY_SOAK_SECS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(DEFAULT_SECS);
    let cluster = match TempCluster::start() {
        Ok(Some(cluster)) => cluster,
        Ok(None) => {
            eprintln!("serve_soak: skipped, PostgreSQL is not installed");
            return;
        }
        Err(error) => panic!("{error}"),
    };
    let store_url = cluster
        .create_database("agentry")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let model = Arc::new(Model::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let model_url = format!("http://{}", listener.local_addr().unwrap_or_else(|e| panic!("{e}")));
    let router = Router::new()
        .route("/v1/chat/completions", post(complete))
        .with_state(Arc::clone(&model));
    tokio::spawn(async move { axum::serve(listener, router).await });

    let dirs = [(); 2].map(|()| tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")));
    let instances: Vec<Instance> = dirs
        .iter()
        .map(|dir| start_instance(dir.path(), &store_url, &model_url))
        .collect();
    let (idle_rss, idle_files) = held(&instances);

    // A tenth of the soak (a minute of ten) under the same load: the pools (PostgreSQL's, the model's
    // connections) and the allocator reach their working size.
    let warmup = Duration::from_secs((seconds / 10).max(1));
    let warm = load(&instances, client_http(), Instant::now() + warmup).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (warm_rss, warm_files) = held(&instances);
    println!(
        "warm-up: {} s, {} awaited runs; idle before: {idle_rss} KiB, {idle_files} open files; warm: {warm_rss} KiB, \
         {warm_files} open files (the clients' connections closed)",
        warmup.as_secs(),
        warm.awaited.len()
    );

    let started = Instant::now();
    let calls_before = model.calls.load(Ordering::Relaxed);
    let tally = load(&instances, client_http(), started + Duration::from_secs(seconds)).await;
    let elapsed = started.elapsed();
    let (end_rss, _) = held(&instances);
    let (end_files, waited) = settle(&instances, warm_files).await;
    let growth = (end_rss as f64 - warm_rss as f64) / warm_rss as f64 * 100.0;

    let mut awaited = tally.awaited.clone();
    awaited.sort_unstable();
    println!(
        "soak: {:.0} s, {WORKERS} clients of two keys, two instances on one PostgreSQL database; the model got {} calls \
         (failed {}, dripped {} in all)",
        elapsed.as_secs_f64(),
        model.calls.load(Ordering::Relaxed) - calls_before,
        model.failed.load(Ordering::Relaxed),
        model.dripped.load(Ordering::Relaxed),
    );
    let mut counts: Vec<_> = tally.counts.iter().collect();
    counts.sort();
    for (what, count) in counts {
        println!("  {what}: {count}");
    }
    println!(
        "latency of awaited runs ({}): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        awaited.len(),
        ms(percentile(&awaited, 0.50)),
        ms(percentile(&awaited, 0.99)),
        ms(awaited.last().copied().unwrap_or_default()),
    );
    println!(
        "memory: {warm_rss} KiB warm, {end_rss} KiB at the end: {growth:+.1}% ({idle_rss} KiB idle before the load)"
    );
    println!(
        "open files: {warm_files} warm, {end_files} at the end ({:.1} s after the clients closed their connections)",
        waited.as_secs_f64()
    );
    println!(
        "messages lost or duplicated: {} sessions; reads of another key's items answered: {}; unexpected answers: {}",
        tally.lost_or_duplicated.len(),
        tally.cross_key_reads.len(),
        tally.unexpected.len()
    );
    for problem in tally
        .lost_or_duplicated
        .iter()
        .chain(&tally.cross_key_reads)
        .chain(&tally.unexpected)
        .take(10)
    {
        println!("  {problem}");
    }
    assert!(tally.lost_or_duplicated.is_empty(), "messages were lost or duplicated");
    assert!(tally.cross_key_reads.is_empty(), "a key read another key's items");
    assert!(tally.unexpected.is_empty(), "unexpected answers");
    assert!(growth < 10.0, "memory grew {growth:.1}%");
    assert!(
        end_files <= warm_files,
        "open files: {warm_files} warm, {end_files} at the end"
    );
}
