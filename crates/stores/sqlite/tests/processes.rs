//! Several processes on one file. The test binary starts itself again as a
//! worker process: the `worker` test does the work when `STORE_WORKER`
//! names a mode, and nothing otherwise.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Stdio};

use agent_core::{AssistantMessage, ConversationStore, Message, ToolCall, ToolResult, TurnMeta, Usage};
use agent_runner::history::is_sendable;
use agent_store_sqlite::SqliteStore;
use serde_json::{Value, json};

const TURNS: usize = 40;

/// The run state a process checkpoints at `step`: large, like a real one.
fn checkpoint(process: &str, step: usize) -> Value {
    json!({"process": process, "step": step, "history": turn(process, step), "pad": "x".repeat(20_000)})
}

/// One agent turn: question, tool call, its result, answer.
fn turn(process: &str, i: usize) -> Vec<Message> {
    let id = format!("{process}-{i}");
    vec![
        Message::user(format!("{process} {i}")),
        Message::Assistant(AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new(id.clone(), "lookup", json!({"i": i}))],
        )),
        Message::tool(ToolResult::success(id, "lookup", format!("result {i}"))),
        Message::assistant(format!("answer {process} {i}")),
    ]
}

fn delta() -> TurnMeta {
    TurnMeta::new("openai", "gpt-4o-mini", Usage::new(10, 2), 0.001)
}

/// Starts this test binary as a worker in `mode`.
fn spawn_worker(mode: &str, db: &Path, process: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "worker", "--nocapture", "--test-threads=1"])
        .env("STORE_WORKER", mode)
        .env("STORE_DB", db)
        .env("STORE_PROCESS", process)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn worker() {
    let Ok(mode) = std::env::var("STORE_WORKER") else {
        return;
    };
    let db = std::env::var("STORE_DB").unwrap();
    let process = std::env::var("STORE_PROCESS").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let store = SqliteStore::open(&db).unwrap();
        match mode.as_str() {
            "append" => {
                // Start together: wait for the parent's go file.
                let go = Path::new(&db).with_file_name("go");
                while !go.exists() {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                for i in 0..TURNS {
                    store.append("shared", &turn(&process, i), &delta()).await.unwrap();
                    store.append(&process, &turn(&process, i), &delta()).await.unwrap();
                    // An agent talks to its model between turns.
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            "checkpoint" => {
                let go = Path::new(&db).with_file_name("go");
                while !go.exists() {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                for step in 0..TURNS {
                    let state = checkpoint(&process, step);
                    store.save_checkpoint(&process, &state).await.unwrap();
                    assert_eq!(store.checkpoint(&process).await.unwrap(), Some(state));
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            "die-mid-append" => {
                store.append("shared", &turn(&process, 0), &delta()).await.unwrap();
                store.save_checkpoint("shared", &checkpoint(&process, 1)).await.unwrap();
                // Do what append does, but die before the commit.
                let mut raw = rusqlite::Connection::open(&db).unwrap();
                let tx = raw
                    .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                    .unwrap();
                for (seq, message) in (4..).zip(turn(&process, 1).iter().take(2)) {
                    tx.execute(
                        "INSERT INTO messages (conversation_id, seq, turn, role, body) \
                         SELECT id, ?2, 1, 'x', ?3 FROM conversations WHERE name = ?1",
                        rusqlite::params!["shared", seq, serde_json::to_string(message).unwrap()],
                    )
                    .unwrap();
                }
                tx.execute("DELETE FROM checkpoints", []).unwrap();
                std::process::abort();
            }
            other => panic!("unknown worker mode {other}"),
        }
    });
}

fn wait_ok(child: std::process::Child) {
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "worker failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn two_processes_append_to_one_session_and_to_their_own_without_losing_anything() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.db");
    let store = SqliteStore::open(&db).unwrap();
    for name in ["shared", "p1", "p2"] {
        store.create(name).await.unwrap();
    }
    let workers = [spawn_worker("append", &db, "p1"), spawn_worker("append", &db, "p2")];
    // Both have started and opened the file (or soon will): let them go.
    std::thread::sleep(std::time::Duration::from_millis(300));
    std::fs::write(dir.path().join("go"), "").unwrap();
    for child in workers {
        wait_ok(child);
    }

    let shared = store.load("shared").await.unwrap().unwrap();
    assert_eq!(shared.messages.len(), 2 * TURNS * 4);
    assert!(is_sendable(&shared.messages));
    let mut next = [0, 0];
    let mut switches = 0;
    let mut last = None;
    for chunk in shared.messages.chunks(4) {
        let Message::User { content, .. } = &chunk[0] else {
            panic!("a turn starts with its user message")
        };
        let process = usize::from(!content.starts_with("p1 "));
        let name = ["p1", "p2"][process];
        switches += usize::from(last.is_some_and(|last| last != process));
        last = Some(process);
        assert_eq!(
            chunk,
            turn(name, next[process]),
            "turns are whole and in each process's order"
        );
        next[process] += 1;
    }
    assert_eq!(next, [TURNS, TURNS]);
    eprintln!("the two processes' turns alternated {switches} times");
    assert_eq!(
        shared.meta.usage,
        Usage::new(10 * 2 * TURNS as u64, 2 * 2 * TURNS as u64)
    );
    assert!((shared.meta.cost_usd - 0.001 * 2.0 * TURNS as f64).abs() < 1e-9);

    for name in ["p1", "p2"] {
        let own = store.load(name).await.unwrap().unwrap();
        let expected: Vec<Message> = (0..TURNS).flat_map(|i| turn(name, i)).collect();
        assert_eq!(own.messages, expected);
        assert_eq!(own.meta.message_count, (TURNS * 4) as u64);
    }
}

#[tokio::test]
async fn a_process_killed_in_the_middle_of_an_append_leaves_no_part_of_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.db");
    let store = SqliteStore::open(&db).unwrap();
    store.create("shared").await.unwrap();
    let output = spawn_worker("die-mid-append", &db, "p1").wait_with_output().unwrap();
    assert!(!output.status.success(), "the worker was meant to abort");

    let loaded = store.load("shared").await.unwrap().unwrap();
    assert_eq!(loaded.messages, turn("p1", 0));
    assert_eq!((loaded.repairs, loaded.meta.message_count), (0, 4));
    assert_eq!(
        store.checkpoint("shared").await.unwrap(),
        Some(checkpoint("p1", 1)),
        "the run can resume: its checkpoint was not removed without its turn"
    );
    // The file is healthy and writable after the crash.
    store.append("shared", &turn("p1", 1), &delta()).await.unwrap();
    assert_eq!(store.checkpoint("shared").await.unwrap(), None);
    let reopened = SqliteStore::open(&db).unwrap();
    let loaded = reopened.load("shared").await.unwrap().unwrap();
    assert_eq!(loaded.messages, [turn("p1", 0), turn("p1", 1)].concat());
    let raw = rusqlite::Connection::open(&db).unwrap();
    let check: String = raw.query_row("PRAGMA integrity_check", [], |row| row.get(0)).unwrap();
    assert_eq!(check, "ok");
}

#[tokio::test]
async fn one_process_saves_checkpoints_while_another_appends_to_another_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.db");
    let store = SqliteStore::open(&db).unwrap();
    for name in ["shared", "p1", "p2"] {
        store.create(name).await.unwrap();
    }
    let workers = [spawn_worker("checkpoint", &db, "p1"), spawn_worker("append", &db, "p2")];
    std::thread::sleep(std::time::Duration::from_millis(300));
    std::fs::write(dir.path().join("go"), "").unwrap();
    for child in workers {
        wait_ok(child);
    }

    assert_eq!(store.checkpoint("p1").await.unwrap(), Some(checkpoint("p1", TURNS - 1)));
    assert_eq!(store.checkpoint("p2").await.unwrap(), None);
    let expected: Vec<Message> = (0..TURNS).flat_map(|i| turn("p2", i)).collect();
    for name in ["shared", "p2"] {
        let loaded = store.load(name).await.unwrap().unwrap();
        assert_eq!(loaded.messages, expected, "{name}");
    }
    let listed: Vec<(String, bool, u64)> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|meta| (meta.name, meta.has_checkpoint, meta.message_count))
        .collect();
    assert!(listed.contains(&("p1".into(), true, 0)), "{listed:?}");
    assert!(listed.contains(&("p2".into(), false, (TURNS * 4) as u64)), "{listed:?}");
}
