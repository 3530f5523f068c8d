//! Crash-kill campaigns of the session stores (issue 34, item 3): the real
//! `agentry` process runs turns, each with two tool calls (local pages the
//! `web` tool fetches) and two model calls (an OpenAI-compatible mock), and
//! is killed with SIGKILL at a point drawn from a fixed seed, 50 times per
//! store:
//!
//! - SQLite: `agentry run --session` is killed; `agentry resume` goes on;
//! - PostgreSQL: `agentry serve` is killed while `POST /v1/runs` runs; the
//!   next instance's `POST /v1/sessions/{id}/resume` goes on.
//!
//! After each kill the store opens, every stored turn is whole (its prompt,
//! each call with its result, a final answer; nothing repaired on load), a
//! turn is stored once or not at all, and a run that left a checkpoint is
//! resumed from it: the answer comes, and no call whose result the
//! checkpoint held is run again. Each campaign prints its figures (kills
//! survived over kills attempted, and where the kills landed).

#![cfg(all(unix, feature = "openai", feature = "sqlite"))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;
mod crash_support;

use std::path::Path;
use std::time::{Duration, Instant};

use agent_core::ConversationStore;
use agent_store_sqlite::SqliteStore;
use crash_support::{Campaign, Model, kill_delay, mount};
use serde_json::Value;
use wiremock::MockServer;

use cli_support::{agentry, run_cmd, spawn_agentry, stderr, stdout_json, write_local_web_config};

const SESSION: &str = "crash";
const KILLS: u64 = 50;

fn run_turn(dir: &Path, server: &MockServer, turn: u64) -> std::process::Child {
    let base_url = format!("{}/v1", server.uri());
    spawn_agentry(
        dir,
        &[
            "--quiet",
            "run",
            "--provider",
            "openai",
            "--base-url",
            &base_url,
            "--session",
            SESSION,
            "--json",
            &Model::prompt(turn),
        ],
    )
}

async fn resume(dir: &Path, server: &MockServer) -> std::process::Output {
    let mut command = agentry(dir);
    command.env("OPENAI_API_KEY", "sk-test").args([
        "--quiet",
        "resume",
        "--provider",
        "openai",
        "--base-url",
        &format!("{}/v1", server.uri()),
        "--json",
        SESSION,
    ]);
    run_cmd(command).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_store_survives_fifty_kills_of_agentry_run() {
    let server = MockServer::start().await;
    mount(&server).await;
    let dir = tempfile::tempdir().unwrap();
    write_local_web_config(dir.path());
    let database = dir.path().join("home/sessions/conversations.sqlite");

    // One turn not killed: how long a turn takes, the span the kills cover.
    let started = Instant::now();
    let child = run_turn(dir.path(), &server, 0);
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let span = started.elapsed();
    let mut campaign = Campaign::new("sqlite", span);
    let store = SqliteStore::open(&database).unwrap();
    assert_eq!(campaign.check_store(&store, SESSION, 0, false).await, Ok(true));

    for turn in 1..=KILLS {
        let delay = kill_delay(turn, span);
        let mut child = run_turn(dir.path(), &server, turn);
        tokio::time::sleep(delay).await;
        let _ = child.kill();
        let _ = child.wait();

        let outcome = match SqliteStore::open(&database) {
            Ok(store) => {
                let resumed = || async {
                    let output = resume(dir.path(), &server).await;
                    if output.status.success() {
                        Ok(stdout_json(&output))
                    } else {
                        Err(format!("agentry resume failed: {}", stderr(&output)))
                    }
                };
                campaign.after_kill(&store, SESSION, turn, &server, resumed).await
            }
            Err(error) => Err(format!("the store does not open: {error}")),
        };
        campaign.record(turn, delay, outcome);
    }
    campaign.report_and_assert(KILLS);
}

#[cfg(all(feature = "serve", feature = "postgres"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_store_survives_fifty_kills_of_agentry_serve() {
    use agent_store_postgres::PostgresStore;
    use agent_store_postgres::testing::TempCluster;
    use cli_support::start_serve;
    use serde_json::json;

    const KEY: &str = "crash-kill-key";

    let cluster = match TempCluster::start() {
        Ok(Some(cluster)) => cluster,
        Ok(None) => return agent_testing::skip::skipped("postgres crash-kill", "PostgreSQL is not installed"),
        Err(error) => panic!("{error}"),
    };
    let url = cluster.create_database("crash_kill").await.unwrap();
    let server = MockServer::start().await;
    mount(&server).await;
    let config = format!(
        "[tools]\nenabled = [\"web\"]\n\n[tools.web]\nallow_private_addresses = true\n\n\
         [serve]\napi_keys = [\"{}\"]\n\n[store]\nurl = \"{url}\"\n",
        agent_server::hash_key(KEY)
    );
    let http = reqwest::Client::new();
    let dir = tempfile::tempdir().unwrap();
    let store = PostgresStore::connect(&url).await.unwrap();

    let (mut serving, mut base) = start_serve(dir.path(), &config, &server.uri());
    let created: Value = http
        .post(format!("{base}/v1/sessions"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    let run = |base: String, turn: u64| {
        let (http, id) = (http.clone(), id.clone());
        async move {
            http.post(format!("{base}/v1/runs"))
                .bearer_auth(KEY)
                .json(&json!({"prompt": Model::prompt(turn), "session": id}))
                .send()
                .await
        }
    };

    let started = Instant::now();
    let answer = run(base.clone(), 0).await.unwrap();
    assert!(answer.status().is_success(), "{:?}", answer.text().await);
    let span = started.elapsed();
    let name = crash_support::stored_name(&store, &id).await;
    let mut campaign = Campaign::new("postgres", span);
    assert_eq!(campaign.check_store(&store, &name, 0, false).await, Ok(true));

    for turn in 1..=KILLS {
        let delay = kill_delay(turn, span);
        let in_flight = tokio::spawn(run(base.clone(), turn));
        tokio::time::sleep(delay).await;
        drop(serving); // SIGKILL
        let _ = in_flight.await;
        (serving, base) = start_serve(dir.path(), &config, &server.uri());

        let outcome = match PostgresStore::connect(&url).await {
            Ok(store) => {
                let resumed = || async {
                    let response = http
                        .post(format!("{base}/v1/sessions/{id}/resume"))
                        .bearer_auth(KEY)
                        .send()
                        .await
                        .map_err(|error| format!("the resume request failed: {error}"))?;
                    let status = response.status();
                    let record: Value = response.json().await.unwrap_or(Value::Null);
                    if status.is_success() {
                        Ok(record)
                    } else {
                        Err(format!("POST /v1/sessions/{id}/resume answered {status}: {record}"))
                    }
                };
                campaign.after_kill(&store, &name, turn, &server, resumed).await
            }
            Err(error) => Err(format!("the store does not open: {error}")),
        };
        campaign.record(turn, delay, outcome);
    }
    drop(serving);
    campaign.report_and_assert(KILLS);
}

/// The campaign's kill points are fixed by their seeds: the same delays on
/// every run, spread over the whole turn and a little past it.
#[test]
fn kill_points_are_deterministic_and_cover_the_turn() {
    let span = Duration::from_secs(1);
    let delays: Vec<Duration> = (1..=KILLS).map(|seed| kill_delay(seed, span)).collect();
    assert_eq!(
        delays,
        (1..=KILLS).map(|seed| kill_delay(seed, span)).collect::<Vec<_>>()
    );
    assert!(delays.iter().all(|delay| *delay <= span * 5 / 4), "{delays:?}");
    assert!(delays.iter().any(|delay| *delay < span / 4), "{delays:?}");
    assert!(delays.iter().any(|delay| *delay > span * 3 / 4), "{delays:?}");
}

/// The checks find what the campaigns look for: a half-written turn, a
/// turn stored twice, a turn both stored and checkpointed.
#[tokio::test]
async fn the_store_checks_catch_half_written_repeated_and_checkpointed_turns() {
    use agent_core::{AssistantMessage, Message, ToolCall, ToolResult, TurnMeta};
    use agent_store::InMemoryStore;
    use serde_json::json;

    let whole = |turn: u64| {
        let calls = ['a', 'b'].map(|part| ToolCall::new(format!("call_{turn}_{part}"), "fetch_url", json!({})));
        let mut messages = vec![
            Message::user(Model::prompt(turn)),
            Message::Assistant(AssistantMessage::with_tool_calls("", calls.to_vec())),
        ];
        for part in ['a', 'b'] {
            messages.push(Message::Tool(ToolResult::success(
                format!("call_{turn}_{part}"),
                "fetch_url",
                Model::page_text(turn, part),
            )));
        }
        messages.push(Message::Assistant(AssistantMessage::text(Model::answer(turn))));
        messages
    };
    let store = InMemoryStore::new();
    store.create("c").await.unwrap();
    store.append("c", &whole(0), &TurnMeta::default()).await.unwrap();
    let mut campaign = Campaign::new("memory", Duration::from_millis(1));
    assert_eq!(campaign.check_store(&store, "c", 0, false).await, Ok(true));
    assert_eq!(campaign.check_store(&store, "c", 1, false).await, Ok(false));

    store.append("c", &whole(1), &TurnMeta::default()).await.unwrap();
    let error = campaign.check_store(&store, "c", 1, true).await.unwrap_err();
    assert!(error.contains("has a checkpoint"), "{error}");
    assert_eq!(campaign.check_store(&store, "c", 1, false).await, Ok(true));

    store.append("c", &whole(1), &TurnMeta::default()).await.unwrap();
    let error = campaign.check_store(&store, "c", 2, false).await.unwrap_err();
    assert!(error.contains("the store holds turns [1]"), "{error}");

    let mut half = whole(2);
    half.truncate(3); // the prompt, the calls and one result
    let half_store = InMemoryStore::new();
    half_store.create("h").await.unwrap();
    half_store.append("h", &half, &TurnMeta::default()).await.unwrap();
    let error = Campaign::new("memory", Duration::from_millis(1))
        .check_store(&half_store, "h", 2, false)
        .await
        .unwrap_err();
    assert!(
        error.contains("repaired") || error.contains("no final answer"),
        "{error}"
    );
    let cut = crash_support::whole_turns(&half[..2]).unwrap_err();
    assert!(cut.contains("has no result"), "{cut}");
}
