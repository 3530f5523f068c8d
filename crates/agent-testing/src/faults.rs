//! A model server that misbehaves on purpose: a raw HTTP/1.1 server on
//! loopback that answers each request with the next [`Answer`] of its
//! script, among them the faults a network and an API produce (a reset
//! before the headers or in the middle of a body, a body that stops early,
//! a slow drip, error statuses). wiremock cannot break a connection; this
//! can, for every provider alike.
//!
//! ```
//! use agent_testing::faults::{Answer, FaultServer};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let server = FaultServer::start([Answer::json(503, r#"{"error":"busy"}"#)]).await?;
//! let address = server.url("").trim_start_matches("http://").to_owned();
//! let mut socket = tokio::net::TcpStream::connect(address).await?;
//! socket.write_all(b"POST /v1/chat HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}").await?;
//! let mut reply = String::new();
//! socket.read_to_string(&mut reply).await?;
//! assert!(reply.starts_with("HTTP/1.1 503"));
//! assert_eq!(server.requests(), [b"{}".to_vec()]);
//! # Ok(())
//! # }
//! ```

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::loopback::{content_length, find};

/// What the server does with one request (after reading it whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A whole response with this status, headers and body.
    Reply {
        /// The status code.
        status: u16,
        /// Headers besides `content-length` and `connection`.
        headers: Vec<(String, String)>,
        /// The body.
        body: Vec<u8>,
    },
    /// Resets the connection (TCP RST) before sending anything.
    ResetBeforeHeaders,
    /// Sends a 200 with `content_type` and these bytes of a longer body,
    /// then resets the connection.
    ResetAfter {
        /// The `content-type` header.
        content_type: String,
        /// What is sent before the reset.
        sent: Vec<u8>,
    },
    /// Sends a 200 with `content_type` whose body ends (the connection is
    /// closed cleanly) after these bytes: a reply that stops short.
    EndAfter {
        /// The `content-type` header.
        content_type: String,
        /// The whole body as sent.
        sent: Vec<u8>,
    },
    /// Sends a 200 with `content_type` and `body`, one byte every `every`.
    Drip {
        /// The `content-type` header.
        content_type: String,
        /// The body.
        body: Vec<u8>,
        /// The pause before each byte.
        every: Duration,
    },
}

impl Answer {
    /// A reply whose body is `body` as `application/json`.
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self::reply(status, "application/json", body)
    }

    /// A reply with `status`, `content_type` and `body`.
    pub fn reply(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self::Reply {
            status,
            headers: vec![("content-type".to_owned(), content_type.to_owned())],
            body: body.into(),
        }
    }

    /// This reply with one more header.
    #[must_use]
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        if let Self::Reply { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }
}

/// The shared state of a running server.
#[derive(Debug, Default)]
struct Script {
    answers: VecDeque<Answer>,
    requests: Vec<Vec<u8>>,
}

/// A running [`Answer`] script on `127.0.0.1`. Stops when dropped.
#[derive(Debug)]
pub struct FaultServer {
    address: SocketAddr,
    script: Arc<Mutex<Script>>,
    task: JoinHandle<()>,
}

impl FaultServer {
    /// Starts answering with `answers`, one per request in order; a request
    /// past the end of the script gets a 500 saying so.
    pub async fn start(answers: impl IntoIterator<Item = Answer>) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let script = Arc::new(Mutex::new(Script {
            answers: answers.into_iter().collect(),
            requests: Vec::new(),
        }));
        let shared = Arc::clone(&script);
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, Arc::clone(&shared)));
            }
        });
        Ok(Self { address, script, task })
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// Adds answers to the end of the script.
    pub fn then(&self, answers: impl IntoIterator<Item = Answer>) {
        self.lock().answers.extend(answers);
    }

    /// Drops the answers left in the script (those a fault did not use up,
    /// when the client did not retry), so the next ones are the turn's own.
    pub fn clear(&self) {
        self.lock().answers.clear();
    }

    /// The bodies of the requests received so far, in order.
    pub fn requests(&self) -> Vec<Vec<u8>> {
        self.lock().requests.clone()
    }

    /// How many answers of the script are left.
    pub fn pending(&self) -> usize {
        self.lock().answers.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads each request of `socket` and answers it with the script's next
/// answer; every answer closes the connection.
async fn serve(mut socket: TcpStream, script: Arc<Mutex<Script>>) {
    let _ = socket.set_nodelay(true);
    let Some(body) = read_request(&mut socket).await else {
        return;
    };
    let answer = {
        let mut script = script.lock().unwrap_or_else(PoisonError::into_inner);
        script.requests.push(body);
        script.answers.pop_front()
    };
    let answer = answer.unwrap_or_else(|| Answer::json(500, r#"{"error":"the fault script is exhausted"}"#));
    let _ = answer_with(&mut socket, answer).await;
}

async fn answer_with(socket: &mut TcpStream, answer: Answer) -> std::io::Result<()> {
    match answer {
        Answer::Reply { status, headers, body } => {
            let mut head = format!(
                "HTTP/1.1 {status} {}\r\ncontent-length: {}\r\nconnection: close\r\n",
                reason(status),
                body.len()
            );
            for (name, value) in headers {
                let _ = write!(head, "{name}: {value}\r\n");
            }
            head.push_str("\r\n");
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(&body).await?;
            socket.shutdown().await
        }
        Answer::ResetBeforeHeaders => socket.set_zero_linger(),
        Answer::ResetAfter { content_type, sent } => {
            socket.write_all(open_ended_head(&content_type).as_bytes()).await?;
            socket.write_all(&sent).await?;
            socket.flush().await?;
            // Let the bytes leave before the reset discards what is unsent.
            tokio::time::sleep(Duration::from_millis(50)).await;
            socket.set_zero_linger()
        }
        Answer::EndAfter { content_type, sent } => {
            socket.write_all(open_ended_head(&content_type).as_bytes()).await?;
            socket.write_all(&sent).await?;
            socket.shutdown().await
        }
        Answer::Drip {
            content_type,
            body,
            every,
        } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await?;
            for byte in body {
                tokio::time::sleep(every).await;
                socket.write_all(&[byte]).await?;
            }
            socket.shutdown().await
        }
    }
}

/// The head of a 200 whose body runs until the connection closes.
fn open_ended_head(content_type: &str) -> String {
    format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n")
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// Reads one request's head and its `content-length` body; `None` when
/// the client went away first.
async fn read_request(socket: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = find(&buffer, b"\r\n\r\n") {
            break at + 4;
        }
        let read = socket.read(&mut chunk).await.ok().filter(|&read| read > 0)?;
        buffer.extend_from_slice(&chunk[..read]);
    };
    let length = content_length(&buffer[..head_end]);
    while buffer.len() < head_end + length {
        let read = socket.read(&mut chunk).await.ok().filter(|&read| read > 0)?;
        buffer.extend_from_slice(&chunk[..read]);
    }
    Some(buffer[head_end..head_end + length].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn raw_exchange(server: &FaultServer) -> std::io::Result<Vec<u8>> {
        let mut socket = TcpStream::connect(server.address).await?;
        socket
            .write_all(b"POST /x HTTP/1.1\r\nhost: a\r\nContent-Length: 5\r\n\r\nhello")
            .await?;
        let mut reply = Vec::new();
        socket.read_to_end(&mut reply).await?;
        Ok(reply)
    }

    #[tokio::test]
    async fn answers_follow_the_script_and_bodies_are_recorded() -> std::io::Result<()> {
        let server = FaultServer::start([
            Answer::json(429, "{}").with_header("retry-after", "1"),
            Answer::EndAfter {
                content_type: "text/event-stream".to_owned(),
                sent: b"data: cut".to_vec(),
            },
        ])
        .await?;
        let first = String::from_utf8_lossy(&raw_exchange(&server).await?).into_owned();
        assert!(first.starts_with("HTTP/1.1 429"), "{first}");
        assert!(first.contains("retry-after: 1\r\n"), "{first}");
        let second = String::from_utf8_lossy(&raw_exchange(&server).await?).into_owned();
        assert!(second.ends_with("\r\n\r\ndata: cut"), "{second}");
        let third = String::from_utf8_lossy(&raw_exchange(&server).await?).into_owned();
        assert!(third.contains("exhausted"), "{third}");
        assert_eq!(server.requests(), vec![b"hello".to_vec(); 3]);
        Ok(())
    }

    #[tokio::test]
    async fn a_reset_is_an_error_for_the_client() -> std::io::Result<()> {
        let server = FaultServer::start([Answer::ResetAfter {
            content_type: "text/event-stream".to_owned(),
            sent: b"data: {}\n\n".to_vec(),
        }])
        .await?;
        let mut socket = TcpStream::connect(server.address).await?;
        socket.write_all(b"POST /x HTTP/1.1\r\nhost: a\r\n\r\n").await?;
        let mut reply = Vec::new();
        let outcome = socket.read_to_end(&mut reply).await;
        assert!(outcome.is_err(), "a reset ends the read with an error, got {reply:?}");
        Ok(())
    }
}
