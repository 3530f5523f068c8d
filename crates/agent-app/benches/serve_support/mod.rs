//! Shared by the serve benches (serve_load, serve_soak): `agentry serve`
//! as a child process, what it holds (resident memory, open files), and
//! latency figures.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// An `agentry serve` process, killed when dropped.
pub struct Instance {
    child: Child,
    /// Its base URL, `http://127.0.0.1:PORT`.
    pub base: String,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Instance {
    /// `agentry serve` in `dir` with `config` as its agentry.toml, over the
    /// OpenAI-compatible model at `model`, on a free port.
    pub fn start(dir: &Path, config: &str, model: &str) -> Self {
        std::fs::write(dir.join("agentry.toml"), config).unwrap_or_else(|e| panic!("{e}"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentry"))
            .env_clear()
            .env("AGENTRY_HOME", dir.join("home"))
            .env("OPENAI_API_KEY", "sk-bench")
            .current_dir(dir)
            .args(["serve", "--provider", "openai", "--base-url", &format!("{model}/v1")])
            .args(["--addr", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("agentry serve: {e}"));
        let mut line = String::new();
        if let Some(stdout) = child.stdout.take() {
            let _ = BufReader::new(stdout).read_line(&mut line);
        }
        let base = line.trim().trim_start_matches("listening on ").to_owned();
        assert!(base.starts_with("http://"), "unexpected first line: {line:?}");
        Self { child, base }
    }

    /// Resident memory in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| value.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap_or_default()
    }

    /// How many files (sockets included) the process has open.
    pub fn open_files(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id())).map_or(0, Iterator::count)
    }
}

/// The `p` quantile (0 to 1) of `sorted`; zero when it is empty.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// Milliseconds, for printing.
pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The text of the last user message of an OpenAI chat request.
pub fn last_prompt(request: &Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|messages| messages.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|message| message["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// An OpenAI chat-completion stream (server-sent events) that answers
/// `answer`, then stops with a small usage.
pub fn sse_answer(answer: &str) -> String {
    let chunk = |choices: Value, usage: Value| json!({"id": "c", "object": "chat.completion.chunk", "model": "mock", "choices": choices, "usage": usage});
    let chunks = [
        chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": answer}, "finish_reason": null}]),
            Value::Null,
        ),
        chunk(json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]), Value::Null),
        chunk(
            json!([]),
            json!({"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}),
        ),
    ];
    let mut text = String::new();
    for chunk in chunks {
        text.push_str("data: ");
        text.push_str(&chunk.to_string());
        text.push_str("\n\n");
    }
    text.push_str("data: [DONE]\n\n");
    text
}
