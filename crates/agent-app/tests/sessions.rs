//! Stored sessions end to end: the real `agentry` binary against a local
//! OpenAI-compatible mock server; no test touches the internet.
#![cfg(feature = "openai")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::collections::BTreeMap;

use serde_json::json;
use wiremock::matchers::{body_string_contains, method};
use wiremock::{Mock, MockServer};

use cli_support::{agentry, completion, run_cmd, stderr, stdout_json};

#[tokio::test]
async fn sessions_carry_history_between_runs_and_can_be_listed_shown_and_deleted() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_string_contains("My name is Ada"))
        .and(body_string_contains("What is my name?"))
        .respond_with(completion(
            &json!({"role": "assistant", "content": "Your name is Ada."}),
            "stop",
            (40, 5),
        ))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(completion(
            &json!({"role": "assistant", "content": "Hello Ada."}),
            "stop",
            (20, 3),
        ))
        .with_priority(2)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let base_url = format!("{}/v1", server.uri());
    for (prompt, answer) in [
        ("My name is Ada", "Hello Ada."),
        ("What is my name?", "Your name is Ada."),
    ] {
        let mut command = agentry(dir.path());
        command.env("OPENAI_API_KEY", "sk-test").args([
            "run",
            "--provider",
            "openai",
            "--session",
            "ada",
            "--base-url",
            &base_url,
            prompt,
        ]);
        let output = run_cmd(command).await;
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), answer);
    }
    assert!(dir.path().join("home/sessions/conversations.sqlite").is_file());

    let output = agentry(dir.path()).args(["sessions", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.starts_with("ada") && text.contains("2 turns"), "{text}");

    let output = agentry(dir.path()).args(["sessions", "show", "ada"]).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("you: My name is Ada") && text.contains("assistant: Your name is Ada."),
        "{text}"
    );

    let output = agentry(dir.path())
        .args(["sessions", "show", "ada", "--json"])
        .output()
        .unwrap();
    let json = stdout_json(&output);
    assert_eq!(json["messages"].as_array().unwrap().len(), 4);
    assert_eq!(json["usage"]["input_tokens"], 60);

    let output = agentry(dir.path())
        .args(["sessions", "delete", "ada"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let output = agentry(dir.path()).args(["sessions", "show", "ada"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("no session named `ada`"));

    let output = agentry(dir.path())
        .args(["run", "--session", "../escape", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("invalid session name"));
}

/// Two processes taking turns on one session, 50 runs each at the same
/// time: every turn is kept, each exactly once, and the file is owner-only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_runs_on_one_session_lose_no_turn() {
    const RUNS: usize = 50;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(completion(
            &json!({"role": "assistant", "content": "noted"}),
            "stop",
            (10, 1),
        ))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let base_url = format!("{}/v1", server.uri());
    let writers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|writer| {
            let (home, base_url) = (dir.path().to_owned(), base_url.clone());
            tokio::task::spawn_blocking(move || {
                for run in 0..RUNS {
                    let output = agentry(&home)
                        .env("OPENAI_API_KEY", "sk-test")
                        .args([
                            "run",
                            "--provider",
                            "openai",
                            "--session",
                            "shared",
                            "--base-url",
                            &base_url,
                        ])
                        .arg(format!("turn {writer}{run}"))
                        .output()
                        .expect("agentry runs");
                    assert!(
                        output.status.success(),
                        "run {writer}{run}: {}",
                        String::from_utf8_lossy(&output.stderr)
                    );
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("a writer");
    }

    let output = run_cmd({
        let mut command = agentry(dir.path());
        command.args(["sessions", "show", "shared", "--json"]);
        command
    })
    .await;
    let session = stdout_json(&output);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for message in session["messages"].as_array().unwrap() {
        if message["role"] == "user" {
            *seen.entry(message["content"].as_str().unwrap().to_owned()).or_default() += 1;
        }
    }
    let lost: Vec<String> = ["a", "b"]
        .iter()
        .flat_map(|writer| (0..RUNS).map(move |run| format!("turn {writer}{run}")))
        .filter(|turn| !seen.contains_key(turn))
        .collect();
    assert!(lost.is_empty(), "{} turns lost: {lost:?}", lost.len());
    assert!(seen.values().all(|count| *count == 1), "a turn stored twice: {seen:?}");
    assert_eq!(session["messages"].as_array().unwrap().len(), 4 * RUNS);

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let sessions = dir.path().join("home/sessions");
        assert_eq!(
            mode(&sessions.join("conversations.sqlite")),
            0o600,
            "the session file is owner-only"
        );
        assert_eq!(mode(&sessions), 0o700, "the sessions directory is owner-only");
    }
}

/// `chat` keeps its session for its whole life, so another process cannot
/// write under it: a second user of the session is told it is busy.
#[test]
fn a_session_held_by_another_process_is_reported_busy_to_chat() {
    let dir = tempfile::tempdir().unwrap();
    let _held =
        agent_app::sessions::SessionLock::acquire(&dir.path().join("home/sessions"), "busy", false, || {}).unwrap();
    let output = agentry(dir.path())
        .env("OPENAI_API_KEY", "sk-test")
        .args([
            "chat",
            "--provider",
            "openai",
            "--session",
            "busy",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ])
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("the session `busy` is in use by another agentry process"),
        "{}",
        stderr(&output)
    );
}

/// A session file written by agentry 0.1 (JSON, `sessions/NAME.json`) is
/// imported on first use: shown exactly as it was, continued by the next
/// run with its whole history, and moved to `sessions/imported/` so it is
/// imported once.
#[tokio::test]
async fn a_json_session_of_the_previous_version_is_imported_once_and_continued() {
    let fixture = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/session-written-by-0.1.json"
    ))
    .unwrap();
    let written: serde_json::Value = serde_json::from_str(&fixture).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("home/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::write(sessions.join("trip-2026.json"), &fixture).unwrap();
    std::fs::write(sessions.join("broken.json"), "{not json").unwrap();

    let output = agentry(dir.path())
        .args(["sessions", "show", "trip-2026", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout_json(&output), written, "shown exactly as the file had it");
    assert!(
        stderr(&output).contains("broken.json was not imported: it is damaged"),
        "{}",
        stderr(&output)
    );
    assert!(!sessions.join("trip-2026.json").exists());
    assert!(sessions.join("imported/trip-2026.json").is_file(), "the file is kept");
    assert!(
        sessions.join("broken.json").is_file(),
        "a damaged file stays where it was"
    );

    // The next run sends the imported history and appends its turn.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_string_contains("AF1404 departs 08:10, 129 EUR"))
        .and(body_string_contains("And back on Sunday?"))
        .respond_with(completion(
            &json!({"role": "assistant", "content": "AZ317 returns on Sunday."}),
            "stop",
            (100, 6),
        ))
        .mount(&server)
        .await;
    let mut command = agentry(dir.path());
    command.env("OPENAI_API_KEY", "sk-test").args([
        "run",
        "--provider",
        "openai",
        "--session",
        "trip-2026",
        "--base-url",
        &format!("{}/v1", server.uri()),
        "And back on Sunday?",
    ]);
    let output = run_cmd(command).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "AZ317 returns on Sunday."
    );

    let output = agentry(dir.path())
        .args(["sessions", "show", "trip-2026", "--json"])
        .output()
        .unwrap();
    let shown = stdout_json(&output);
    let messages = shown["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 8);
    assert_eq!(messages[..6], written["messages"].as_array().unwrap()[..]);
    assert_eq!(shown["created_at"], written["created_at"]);
    assert_eq!(shown["usage"]["input_tokens"], 812 + 100);
    let output = agentry(dir.path()).args(["sessions", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.starts_with("trip-2026") && text.contains("3 turns"), "{text}");
    assert!(
        !sessions.join("trip-2026.json").exists() && !sessions.join("imported/trip-2026.2.json").exists(),
        "imported once"
    );
}
