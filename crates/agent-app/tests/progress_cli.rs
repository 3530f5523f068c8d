//! The progress display end to end: the real `agentry` binary on a
//! pseudo-terminal against a local OpenAI-compatible mock that takes its
//! time (1.5 s before its tool call) and a slow local page for the `web`
//! tool. On a terminal, stderr shows what the run waits for; `--json`
//! keeps stdout to the one object; `--quiet` and a stderr that is no
//! terminal show nothing of it.
#![cfg(all(feature = "openai", unix))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;
mod pty_support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer};

use cli_support::{agentry, completion, page, run_cmd, sse, stderr, write_local_web_config};
use pty_support::{OnTerminal, TerminalRun};

const ANSWER: &str = "The page says hello.";

/// The model thinks for 1.5 s, asks for `/slow` (which takes 1 s), then
/// answers from the page; streamed (SSE) when asked to stream.
async fn slow_server() -> MockServer {
    let server = MockServer::start().await;
    let url = format!("{}/slow", server.uri());
    let call = json!({"id": "call_1", "type": "function",
                      "function": {"name": "fetch_url", "arguments": json!({"url": url}).to_string()}});
    Mock::given(method("POST"))
        .and(body_string_contains("\"stream\":true"))
        .and(body_string_contains("\"tool_call_id\""))
        .respond_with(sse(&json!({"content": ANSWER}), "stop", (120, 8)))
        .with_priority(1)
        .mount(&server)
        .await;
    let mut streamed_call = call.clone();
    streamed_call["index"] = json!(0);
    Mock::given(method("POST"))
        .and(body_string_contains("\"stream\":true"))
        .respond_with(
            sse(&json!({"tool_calls": [streamed_call]}), "tool_calls", (100, 20))
                .set_delay(Duration::from_millis(1500)),
        )
        .with_priority(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(body_string_contains("\"tool_call_id\""))
        .respond_with(completion(
            &json!({"role": "assistant", "content": ANSWER}),
            "stop",
            (120, 8),
        ))
        .with_priority(3)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(
            completion(
                &json!({"role": "assistant", "content": null, "tool_calls": [call]}),
                "tool_calls",
                (100, 20),
            )
            .set_delay(Duration::from_millis(1500)),
        )
        .with_priority(4)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/slow"))
        .respond_with(page("hello").set_delay(Duration::from_secs(1)))
        .mount(&server)
        .await;
    server
}

/// `agentry run` of the page question against `server`, with `extra` flags.
fn page_run(dir: &Path, server: &MockServer, extra: &[&str]) -> TerminalRun {
    let base = format!("{}/v1", server.uri());
    let mut args = vec!["run", "--provider", "openai", "--base-url", base.as_str()];
    args.extend_from_slice(extra);
    args.push("What does the page say?");
    TerminalRun::new(dir, &args)
        .env("AGENTRY_HOME", dir.join("home").display().to_string())
        .env("HOME", dir.display().to_string())
        .env("OPENAI_API_KEY", "sk-test")
}

/// Runs `run` off the async runtime, so the mock server keeps answering.
async fn on_terminal(run: TerminalRun) -> OnTerminal {
    tokio::task::spawn_blocking(move || run.run()).await.unwrap()
}

/// A directory for one run, with the configuration.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_local_web_config(dir.path());
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_on_a_terminal_shows_what_it_waits_for_and_which_tool_runs() {
    let server = slow_server().await;
    let dir = workdir();
    let shown = on_terminal(page_run(dir.path(), &server, &[])).await;
    let drawn = shown.everything();
    assert_eq!(shown.code, 0, "{drawn}");
    assert!(
        drawn.contains("waiting for openai (gpt-4o-mini)"),
        "the wait for the provider is shown:\n{drawn}"
    );
    assert!(
        drawn.contains("running fetch_url"),
        "the running tool is shown:\n{drawn}"
    );
    // What is left on the screen is the run's own output, whole: the tool
    // call (stderr) and the answer (stdout), each on a line of its own.
    let screen = shown.final_screen();
    assert_left_clean(&screen);
    let lines: Vec<&str> = screen.lines().collect();
    assert!(
        matches!(lines.as_slice(), [call, answer, ..] if call.starts_with("  ✓ fetch_url") && *answer == ANSWER),
        "{screen}"
    );

    // Streamed, the same phases show, and the text is never cut by them.
    let dir = workdir();
    let shown = on_terminal(page_run(dir.path(), &server, &["--stream"])).await;
    let drawn = shown.everything();
    assert_eq!(shown.code, 0, "{drawn}");
    assert!(drawn.contains("waiting for openai (gpt-4o-mini)"), "{drawn}");
    assert!(drawn.contains("running fetch_url"), "{drawn}");
    let screen = shown.final_screen();
    assert_left_clean(&screen);
    let lines: Vec<&str> = screen.lines().collect();
    assert!(
        matches!(lines.as_slice(), [asked, done, answer, ..]
            if asked.starts_with("  → fetch_url") && done.starts_with("  ✓ fetch_url") && *answer == ANSWER),
        "{screen}"
    );
}

/// No progress is left on the screen once the run is over.
fn assert_left_clean(screen: &str) {
    for phase in ["waiting for", "running fetch_url", "reading the prompt", "writing"] {
        assert!(!screen.contains(phase), "`{phase}` is left on the screen:\n{screen}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn json_keeps_stdout_to_the_object_and_quiet_shows_no_progress() {
    let server = slow_server().await;

    // --json on a terminal: the progress on stderr, the object alone on stdout.
    let dir = workdir();
    let stdout = dir.path().join("stdout.json");
    let shown = on_terminal(page_run(dir.path(), &server, &["--json"]).stdout_to(stdout.clone())).await;
    let drawn = shown.everything();
    assert_eq!(shown.code, 0, "{drawn}");
    assert!(drawn.contains("waiting for openai"), "{drawn}");
    assert!(drawn.contains("running fetch_url"), "{drawn}");
    let object = one_json_object(&stdout);
    assert_eq!(object["response"], ANSWER);
    assert_eq!(object["tool_calls"][0]["name"], "fetch_url");
    assert!(!drawn.contains("\"stop_reason\""), "no JSON on the terminal:\n{drawn}");
    assert_left_clean(&shown.final_screen());

    // --quiet: nothing of the progress, the same object.
    let dir = workdir();
    let stdout = dir.path().join("stdout.json");
    let shown = on_terminal(page_run(dir.path(), &server, &["--quiet", "--json"]).stdout_to(stdout.clone())).await;
    assert_eq!(shown.code, 0, "{}", shown.everything());
    assert!(
        !shown.screen.contains('\u{1b}'),
        "--quiet draws nothing:\n{}",
        shown.everything()
    );
    assert_left_clean(&shown.everything());
    assert_eq!(one_json_object(&stdout)["response"], ANSWER);

    // Not a terminal: nothing either, as before.
    let dir = workdir();
    let mut command = agentry(dir.path());
    command.env("OPENAI_API_KEY", "sk-test").args([
        "run",
        "--provider",
        "openai",
        "--base-url",
        &format!("{}/v1", server.uri()),
        "What does the page say?",
    ]);
    let output = run_cmd(command).await;
    let errors = stderr(&output);
    assert!(output.status.success(), "{errors}");
    assert!(
        !errors.contains("waiting for") && !errors.contains('\u{1b}'),
        "no progress on a stderr that is no terminal:\n{errors}"
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), ANSWER);
}

/// The file's content as the one JSON object it must be (and nothing else).
fn one_json_object(file: &Path) -> Value {
    let text = std::fs::read_to_string(file).unwrap();
    let value: Value =
        serde_json::from_str(&text).unwrap_or_else(|error| panic!("stdout is not one JSON object ({error}):\n{text}"));
    assert!(value.is_object(), "{text}");
    assert!(
        text.ends_with("}\n") && text.matches('\n').count() == 1,
        "one line: {text:?}"
    );
    value
}
