//! A keep-alive HTTP/1.1 server on loopback that answers every request from
//! bytes made before it starts, allocating nothing per request: what a
//! client is measured against when its own allocations are counted (a
//! global counting allocator sees every thread of the process, the server's
//! too).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use agent_testing::loopback::{CannedServer, json_response};
//!
//! let server = CannedServer::start(
//!     json_response(r#"{"first": true}"#),
//!     json_response(r#"{"answer": 42}"#),
//!     br#""role":"tool""#,
//! )
//! .await
//! .expect("a loopback port");
//! assert!(server.address().ip().is_loopback());
//! # });
//! ```

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The largest request (head and body) a connection reads.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024;

/// A `200 OK` response with a JSON `body`, as bytes to send.
pub fn json_response(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A server answering a request whose body holds `marker` with the second
/// response, and any other with the first. It runs on the current tokio
/// runtime until the runtime ends.
#[derive(Debug)]
pub struct CannedServer {
    address: SocketAddr,
}

impl CannedServer {
    /// Binds a loopback port and starts serving.
    pub async fn start(first: Vec<u8>, with_marker: Vec<u8>, marker: &'static [u8]) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let replies = Arc::new(Replies {
            first,
            with_marker,
            marker,
        });
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let _ = socket.set_nodelay(true);
                tokio::spawn(connection(socket, Arc::clone(&replies)));
            }
        });
        Ok(Self { address })
    }

    /// Where it listens.
    pub fn address(&self) -> SocketAddr {
        self.address
    }
}

#[derive(Debug)]
struct Replies {
    first: Vec<u8>,
    with_marker: Vec<u8>,
    marker: &'static [u8],
}

/// Serves one keep-alive connection: reads each request whole (head, then
/// `content-length` bytes of body) into one buffer, writes the reply. A
/// request larger than [`MAX_REQUEST_BYTES`] closes the connection.
async fn connection(mut socket: TcpStream, replies: Arc<Replies>) {
    let mut buffer = vec![0u8; MAX_REQUEST_BYTES];
    let mut filled = 0;
    loop {
        let (head_end, body_len) = loop {
            if let Some(end) = find(&buffer[..filled], b"\r\n\r\n") {
                break (end + 4, content_length(&buffer[..end]));
            }
            if filled == buffer.len() {
                return;
            }
            match socket.read(&mut buffer[filled..]).await {
                Ok(0) | Err(_) => return,
                Ok(n) => filled += n,
            }
        };
        let total = head_end + body_len;
        if total > buffer.len() {
            return;
        }
        while filled < total {
            match socket.read(&mut buffer[filled..]).await {
                Ok(0) | Err(_) => return,
                Ok(n) => filled += n,
            }
        }
        let reply = if find(&buffer[head_end..total], replies.marker).is_some() {
            &replies.with_marker
        } else {
            &replies.first
        };
        if socket.write_all(reply).await.is_err() {
            return;
        }
        buffer.copy_within(total..filled, 0);
        filled -= total;
    }
}

/// Where `needle` first occurs in `haystack` (also the fault server's).
pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack.windows(needle.len()).position(|window| window == needle)
}

/// The `content-length` of a request head; 0 when it has none.
pub(crate) fn content_length(head: &[u8]) -> usize {
    head.split(|&b| b == b'\n')
        .find_map(|line| {
            let colon = line.iter().position(|&b| b == b':')?;
            if !line[..colon].eq_ignore_ascii_case(b"content-length") {
                return None;
            }
            std::str::from_utf8(&line[colon + 1..]).ok()?.trim().parse().ok()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn exchange(address: SocketAddr, requests: &[&str]) -> String {
        let mut socket = TcpStream::connect(address).await.expect("connects");
        let mut replies = String::new();
        for request in requests {
            let raw = format!("POST / HTTP/1.1\r\ncontent-length: {}\r\n\r\n{request}", request.len());
            socket.write_all(raw.as_bytes()).await.expect("written");
            let mut reply = vec![0u8; 256];
            let n = socket.read(&mut reply).await.expect("read");
            replies.push_str(&String::from_utf8_lossy(&reply[..n]));
        }
        replies
    }

    #[tokio::test]
    async fn each_request_on_a_kept_alive_connection_gets_its_reply() {
        let server = CannedServer::start(json_response("1"), json_response("2"), b"tool")
            .await
            .expect("starts");
        let replies = exchange(server.address(), &["hello", "a tool result", "again"]).await;
        let bodies: Vec<&str> = replies.split("\r\n\r\n").skip(1).map(|rest| &rest[..1]).collect();
        assert_eq!(bodies, ["1", "2", "1"], "{replies}");
    }

    #[test]
    fn the_content_length_is_read_whatever_its_case_and_0_without_one() {
        assert_eq!(content_length(b"POST / HTTP/1.1\r\nContent-Length: 12\r"), 12);
        assert_eq!(content_length(b"POST / HTTP/1.1\r\nhost: x\r"), 0);
        assert_eq!(content_length(b"POST / HTTP/1.1\r\ncontent-length: nope\r"), 0);
    }
}
