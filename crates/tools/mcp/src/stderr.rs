//! The stderr of a stdio server: logged line by line (tracing, target
//! `agent_tools_mcp::stderr`) and its last lines kept for error messages.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;
use tokio::sync::watch;

/// How many of the last lines are kept.
const KEPT_LINES: usize = 20;
/// The longest line kept, in characters.
const MAX_LINE_CHARS: usize = 400;

/// The last lines a server wrote to stderr.
#[derive(Clone)]
pub(crate) struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    done: watch::Receiver<bool>,
}

impl StderrTail {
    /// Reads `stderr` until it closes, on the current runtime.
    pub(crate) fn spawn(server: &str, stderr: ChildStderr) -> Self {
        let lines = Arc::new(Mutex::new(VecDeque::new()));
        let (done_tx, done) = watch::channel(false);
        let kept = Arc::clone(&lines);
        let server = server.to_owned();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                tracing::info!(target: "agent_tools_mcp::stderr", server = %server, "{line}");
                let line: String = line.chars().take(MAX_LINE_CHARS).collect();
                let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
                if kept.len() == KEPT_LINES {
                    kept.pop_front();
                }
                kept.push_back(line);
            }
            let _ = done_tx.send(true);
        });
        Self { lines, done }
    }

    /// The kept lines, once stderr has closed or `wait` has passed.
    pub(crate) async fn text(&self, wait: Duration) -> String {
        let mut done = self.done.clone();
        let _ = tokio::time::timeout(wait, done.wait_for(|closed| *closed)).await;
        let lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        lines.iter().map(String::as_str).collect::<Vec<_>>().join("\n")
    }
}
