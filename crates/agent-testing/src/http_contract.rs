//! The HTTP contract every remote provider keeps, run against a local mock
//! server (wiremock) and a raw loopback socket: the key in its header and
//! never in an error, retries of 429 (after its `Retry-After`) and 5xx,
//! no retry of 400 and 401, a garbled 200 as a decode error, an error
//! inside a stream, a stream cut inside a tool call (by the body ending and
//! by the connection breaking), and cancellation of a slow call.
//!
//! A provider describes itself once in an [`HttpContract`] (how to make a
//! client for a base URL, how its API writes an error) and, from its
//! recorded wire examples, a [`RecordedReplies`]; then
//! [`http_contract_tests!`](crate::http_contract_tests) writes one test a
//! check in its test file:
//!
//! ```text
//! fn contract() -> HttpContract { ... }
//! fn replies(wire: Wire) -> RecordedReplies { ... }
//!
//! agent_testing::http_contract_tests! {
//!     contract: contract(),
//!     replies: replies(require_wire!("anthropic")),
//! }
//! ```
//!
//! The checks that need recorded replies are skipped, saying why, when the
//! wire examples are absent; the others run everywhere.

// Test support: a failed expectation panics with what went wrong.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{CancellationToken, ChatRequest, LlmClient, LlmError, LlmErrorKind, Message, StreamEvent};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::collect_events;

/// The key every check's client is given, through [`HttpContract::key_env`].
pub const KEY: &str = "sk-contract-test-0123456789abcdef";
/// The extra header every check's client is configured with.
pub const EXTRA_HEADER: (&str, &str) = ("x-agentry-contract", "extra-header-value");

/// A provider's client as the checks hold it: an [`LlmClient`] whose
/// `Debug` output is checked for the key.
pub trait ContractClient: LlmClient + std::fmt::Debug {}

impl<T: LlmClient + std::fmt::Debug> ContractClient for T {}

/// What a provider's client is made from in a check.
pub struct ClientSetup<'a> {
    /// The mock server's root, `http://127.0.0.1:PORT` without a slash:
    /// the provider adds its own path prefix (`/v1`, ...).
    pub server: &'a str,
    /// Where the key is read from: the provider's client must look up
    /// [`HttpContract::key_env`] with it (and must not have `api_key` set).
    pub env: &'a (dyn Fn(&str) -> Option<String> + Send + Sync),
    /// Extra request headers to configure.
    pub headers: &'a [(&'a str, &'a str)],
}

impl ClientSetup<'_> {
    /// [`headers`](Self::headers) as owned pairs, for a provider config's
    /// `headers` map: `config.headers.extend(setup.owned_headers())`.
    pub fn owned_headers(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.headers
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
    }
}

/// A provider, as the contract checks see it.
pub struct HttpContract {
    /// The name its errors carry ([`LlmError::provider`]).
    pub provider: &'static str,
    /// The environment variable the key is read from.
    pub key_env: &'static str,
    /// The request header carrying the key, with what comes before it
    /// (`("authorization", "Bearer ")`, `("x-api-key", "")`).
    pub key_header: (&'static str, &'static str),
    /// The path a request of a [`request`] goes to.
    pub path: String,
    /// The content type of a streamed reply.
    pub stream_content_type: &'static str,
    /// Makes a client; it should retry with short backoff (10 to 50 ms), so
    /// the retry checks run quickly.
    pub make_client: fn(&ClientSetup<'_>) -> Result<Arc<dyn ContractClient>, LlmError>,
    /// The error body the provider's API sends with `status`, carrying `message`.
    pub error_body: fn(u16, &str) -> Value,
    /// A streamed reply that sends some text and then an error event
    /// carrying the message, and the kind that error is classified as.
    pub stream_error: fn(&str) -> (Vec<u8>, LlmErrorKind),
}

/// Replies taken from a provider's recorded wire examples.
pub struct RecordedReplies {
    /// A non-streamed reply (JSON) and the text of its message.
    pub completion: (Vec<u8>, String),
    /// A streamed reply holding at least one tool call.
    pub tool_stream: Vec<u8>,
    /// How many bytes of `tool_stream` to send for a cut that ends inside
    /// the tool call named by `cut_call`. The broken-connection check sends
    /// [`CONNECTION_CUT_BACK`] bytes fewer, so that its cut falls inside an
    /// event (or line) that is already part of the call.
    pub cut_inside_call: usize,
    /// The tool call the cut is inside: the error must name it.
    pub cut_call: String,
    /// The provider's pure stream decoder: the whole body to its events.
    pub decode: fn(&[u8]) -> Result<Vec<StreamEvent>, LlmError>,
}

/// How many bytes before [`RecordedReplies::cut_inside_call`] the
/// broken-connection check stops sending: in the middle of an event.
pub const CONNECTION_CUT_BACK: usize = 10;

/// The request every check sends.
pub fn request() -> ChatRequest {
    ChatRequest::new(vec![Message::user("Hello!")])
}

fn key_from_env(contract: &HttpContract) -> impl Fn(&str) -> Option<String> + Send + Sync + 'static {
    let name = contract.key_env;
    move |asked: &str| (asked == name).then(|| KEY.to_owned())
}

/// The contract's client for `server` (a mock or a raw socket's `http://address`).
pub fn client_for(contract: &HttpContract, server: &str) -> Arc<dyn ContractClient> {
    let env = key_from_env(contract);
    let setup = ClientSetup {
        server,
        env: &env,
        headers: &[EXTRA_HEADER],
    };
    (contract.make_client)(&setup).unwrap_or_else(|error| panic!("{}: the client: {error}", contract.provider))
}

fn json(body: &[u8]) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body.to_vec(), "application/json")
}

fn error_reply(contract: &HttpContract, status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json((contract.error_body)(status, message))
}

async fn requests_seen(server: &MockServer) -> Vec<wiremock::Request> {
    server.received_requests().await.unwrap_or_default()
}

fn assert_hides_key(error: &LlmError) {
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(KEY), "the key shows in the error: {shown}");
}

/// A plain completion goes to [`HttpContract::path`] with the key in its
/// header and the extra header, and returns the recorded text.
pub async fn check_completion(contract: &HttpContract, replies: &RecordedReplies) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(json(&replies.completion.0))
        .mount(&server)
        .await;
    let client = client_for(contract, &server.uri());
    let response = client.complete(&request(), &CancellationToken::new()).await.unwrap();
    assert_eq!(response.message.content, replies.completion.1);
    let seen = requests_seen(&server).await;
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].url.path(), contract.path);
    let (name, prefix) = contract.key_header;
    let header = |name: &str| {
        seen[0]
            .headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    assert_eq!(header(name), Some(format!("{prefix}{KEY}")), "the key header `{name}`");
    assert_eq!(
        header(EXTRA_HEADER.0).as_deref(),
        Some(EXTRA_HEADER.1),
        "the extra header"
    );
    assert!(
        !seen[0].url.as_str().contains(KEY),
        "the key is in the URL: {}",
        seen[0].url
    );
    let debug = format!("{client:?}");
    assert!(
        !debug.contains(KEY),
        "the key shows in the client's Debug output: {debug}"
    );
}

/// A 429 with `Retry-After: 1` is retried after about a second.
pub async fn check_retry_after(contract: &HttpContract, replies: &RecordedReplies) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(error_reply(contract, 429, "Rate limit reached").insert_header("retry-after", "1"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(json(&replies.completion.0))
        .mount(&server)
        .await;
    let started = Instant::now();
    let response = client_for(contract, &server.uri())
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let waited = started.elapsed();
    assert_eq!(response.message.content, replies.completion.1);
    assert!(waited >= Duration::from_millis(950), "waited only {waited:?}");
    assert!(waited < Duration::from_secs(3), "waited {waited:?}");
    assert_eq!(requests_seen(&server).await.len(), 2);
}

/// A 500 and a 503 are retried; the third attempt succeeds.
pub async fn check_server_errors_retried(contract: &HttpContract, replies: &RecordedReplies) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(error_reply(contract, 500, "Internal error"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(error_reply(contract, 503, "Service unavailable"))
        .up_to_n_times(1)
        .with_priority(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(json(&replies.completion.0))
        .with_priority(3)
        .mount(&server)
        .await;
    let response = client_for(contract, &server.uri())
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.message.content, replies.completion.1);
    assert_eq!(requests_seen(&server).await.len(), 3);
}

/// A 401 fails at once, keeps the provider's words, names the variable to
/// set and never shows the key.
pub async fn check_auth_failure(contract: &HttpContract) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(error_reply(contract, 401, "Invalid API key provided"))
        .mount(&server)
        .await;
    let error = client_for(contract, &server.uri())
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::Auth, "{error}");
    assert_eq!(error.status, Some(401));
    assert_eq!(error.provider.as_deref(), Some(contract.provider));
    assert!(error.message.contains("Invalid API key provided"), "{error}");
    let hint = format!("set the {} environment variable", contract.key_env);
    assert!(error.message.contains(&hint), "no `{hint}` in: {error}");
    assert_hides_key(&error);
    assert_eq!(requests_seen(&server).await.len(), 1, "auth errors are not retried");
}

/// Without the key the client is not made, and the error names the
/// variable to set.
pub fn check_missing_key(contract: &HttpContract) {
    let no_env = |_: &str| None;
    let setup = ClientSetup {
        server: "http://127.0.0.1:9",
        env: &no_env,
        headers: &[],
    };
    let Err(error) = (contract.make_client)(&setup) else {
        panic!("{}: a client was made without a key", contract.provider);
    };
    assert_eq!(error.kind, LlmErrorKind::Auth, "{error}");
    assert!(error.message.contains(contract.key_env), "{error}");
}

/// A 400 is an invalid request, not retried, with the provider's words.
pub async fn check_bad_request(contract: &HttpContract) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(error_reply(contract, 400, "messages: field required"))
        .mount(&server)
        .await;
    let error = client_for(contract, &server.uri())
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::InvalidRequest, "{error}");
    assert!(error.message.contains("messages: field required"), "{error}");
    assert_eq!(requests_seen(&server).await.len(), 1, "a 400 is not retried");
}

/// A 200 whose body is not the provider's JSON is a decode error naming
/// the provider.
pub async fn check_garbled_reply(contract: &HttpContract) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("<html>gateway</html>", "text/html"))
        .mount(&server)
        .await;
    let error = client_for(contract, &server.uri())
        .complete(&request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind, LlmErrorKind::Decode, "{error}");
    assert_eq!(error.provider.as_deref(), Some(contract.provider));
    assert_eq!(requests_seen(&server).await.len(), 1, "a decode error is not retried");
}

/// An error event inside a streamed 200 ends the stream with a typed
/// error carrying the provider's words, after the text before it.
pub async fn check_error_inside_stream(contract: &HttpContract) {
    let (body, kind) = (contract.stream_error)("The server had an error while processing your request");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, contract.stream_content_type))
        .mount(&server)
        .await;
    let stream = client_for(contract, &server.uri())
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let (events, error) = collect_events(stream).await;
    let error = error.expect("the stream ends in an error");
    assert_eq!(error.kind, kind, "{error}");
    assert!(error.message.contains("The server had an error"), "{error}");
    assert_eq!(error.provider.as_deref(), Some(contract.provider));
    assert!(
        events
            .iter()
            .any(|event| matches!(event, StreamEvent::TextDelta { .. })),
        "the text before the error is kept: {events:?}"
    );
}

/// A recorded stream through the client gives exactly the events of the
/// provider's pure decoder.
pub async fn check_recorded_stream(contract: &HttpContract, replies: &RecordedReplies) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(replies.tool_stream.clone(), contract.stream_content_type),
        )
        .mount(&server)
        .await;
    let stream = client_for(contract, &server.uri())
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let (events, error) = collect_events(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(events, (replies.decode)(&replies.tool_stream).unwrap());
    assert!(
        events
            .iter()
            .any(|event| matches!(event, StreamEvent::ToolCallEnd { .. }))
    );
}

fn assert_cut_inside_call(events: &[StreamEvent], error: Option<LlmError>, replies: &RecordedReplies) {
    let error = error.expect("a stream cut inside a tool call ends in an error");
    assert_eq!(error.kind, LlmErrorKind::Decode, "{error}");
    let named = format!("`{}`", replies.cut_call);
    assert!(
        error.message.contains(&named),
        "the error does not name {named}: {error}"
    );
    assert!(
        !events.iter().any(|event| matches!(event, StreamEvent::Stop { .. })),
        "a cut stream has no stop: {events:?}"
    );
}

/// A streamed body that ends inside a tool call is an error naming the
/// call, never a half call.
pub async fn check_stream_ending_inside_call(contract: &HttpContract, replies: &RecordedReplies) {
    let server = MockServer::start().await;
    let cut = replies.tool_stream[..replies.cut_inside_call].to_vec();
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(cut, contract.stream_content_type))
        .mount(&server)
        .await;
    let stream = client_for(contract, &server.uri())
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let (events, error) = collect_events(stream).await;
    assert_cut_inside_call(&events, error, replies);
}

/// A connection that breaks inside a tool call, in the middle of an event
/// (chunked body, no last chunk), is an error naming the call.
pub async fn check_connection_breaking_inside_call(contract: &HttpContract, replies: &RecordedReplies) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let partial = replies.tool_stream[..replies.cut_inside_call - CONNECTION_CUT_BACK].to_vec();
    let content_type = contract.stream_content_type;
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = vec![0u8; 65536];
        let _ = socket.read(&mut request).await;
        let head = format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n");
        socket.write_all(head.as_bytes()).await.unwrap();
        socket
            .write_all(format!("{:x}\r\n", partial.len()).as_bytes())
            .await
            .unwrap();
        socket.write_all(&partial).await.unwrap();
        socket.write_all(b"\r\n").await.unwrap();
        socket.flush().await.unwrap();
        // The connection drops here, without the terminating chunk.
    });
    let stream = client_for(contract, &format!("http://{address}"))
        .stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    let (events, error) = collect_events(stream).await;
    assert_cut_inside_call(&events, error, replies);
}

/// Cancels `cancel` after 150 ms; returns when it did.
fn cancel_soon(cancel: &CancellationToken) -> tokio::task::JoinHandle<Instant> {
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        trigger.cancel();
        Instant::now()
    })
}

async fn slow_server(contract: &HttpContract, content_type: &str) -> MockServer {
    let server = MockServer::start().await;
    let body = (contract.error_body)(200, "never read");
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(body.to_string(), content_type)
                .set_delay(Duration::from_secs(10)),
        )
        .mount(&server)
        .await;
    server
}

/// Cancelling a completion that has not been answered returns a
/// cancelled error within 100 ms.
pub async fn check_cancelled_completion(contract: &HttpContract) {
    let server = slow_server(contract, "application/json").await;
    let client = client_for(contract, &server.uri());
    let cancel = CancellationToken::new();
    let cancelled_at = cancel_soon(&cancel);
    let error = client.complete(&request(), &cancel).await.unwrap_err();
    let latency = Instant::now().duration_since(cancelled_at.await.unwrap());
    assert_eq!(error.kind, LlmErrorKind::Cancelled, "{error}");
    assert!(
        latency < Duration::from_millis(100),
        "returned {latency:?} after the cancel"
    );
}

/// Cancelling a stream that has not been answered returns a cancelled
/// error within 100 ms.
pub async fn check_cancelled_stream(contract: &HttpContract) {
    let server = slow_server(contract, contract.stream_content_type).await;
    let client = client_for(contract, &server.uri());
    let cancel = CancellationToken::new();
    let cancelled_at = cancel_soon(&cancel);
    let error = match client.stream(&request(), &cancel).await {
        Ok(stream) => collect_events(stream)
            .await
            .1
            .expect("a cancelled stream ends in an error"),
        Err(error) => error,
    };
    let latency = Instant::now().duration_since(cancelled_at.await.unwrap());
    assert_eq!(error.kind, LlmErrorKind::Cancelled, "{error}");
    assert!(
        latency < Duration::from_millis(100),
        "returned {latency:?} after the cancel"
    );
}

/// Writes the contract's checks as tests of the calling test file, in a
/// module `http_contract`. `contract` is an expression giving the
/// [`HttpContract`]; `replies` one giving the [`RecordedReplies`], which
/// may return early from the test (as
/// [`require_wire!`](crate::require_wire) does when the wire examples are
/// absent). Both are evaluated in the test file's scope.
#[macro_export]
macro_rules! http_contract_tests {
    (contract: $contract:expr, replies: $replies:expr $(,)?) => {
        mod http_contract {
            #[allow(unused_imports)]
            use super::*;
            use $crate::http_contract as check;

            #[tokio::test]
            async fn a_completion_sends_the_key_in_its_header_and_returns_the_recorded_text() {
                let replies = $replies;
                check::check_completion(&$contract, &replies).await;
            }

            #[tokio::test]
            async fn a_429_with_retry_after_is_retried_after_about_a_second() {
                let replies = $replies;
                check::check_retry_after(&$contract, &replies).await;
            }

            #[tokio::test]
            async fn a_500_and_a_503_are_retried_then_the_200_succeeds() {
                let replies = $replies;
                check::check_server_errors_retried(&$contract, &replies).await;
            }

            #[tokio::test]
            async fn a_401_fails_at_once_naming_the_variable_and_hiding_the_key() {
                check::check_auth_failure(&$contract).await;
            }

            #[test]
            fn a_missing_key_is_an_error_before_any_request() {
                check::check_missing_key(&$contract);
            }

            #[tokio::test]
            async fn a_400_is_an_invalid_request_not_retried() {
                check::check_bad_request(&$contract).await;
            }

            #[tokio::test]
            async fn a_garbled_200_is_a_decode_error_naming_the_provider() {
                check::check_garbled_reply(&$contract).await;
            }

            #[tokio::test]
            async fn an_error_inside_the_stream_is_a_typed_error() {
                check::check_error_inside_stream(&$contract).await;
            }

            #[tokio::test]
            async fn a_recorded_stream_gives_the_events_of_the_pure_decoder() {
                let replies = $replies;
                check::check_recorded_stream(&$contract, &replies).await;
            }

            #[tokio::test]
            async fn a_stream_ending_inside_a_tool_call_is_an_error_naming_the_call() {
                let replies = $replies;
                check::check_stream_ending_inside_call(&$contract, &replies).await;
            }

            #[tokio::test]
            async fn a_connection_breaking_inside_a_tool_call_is_an_error_naming_the_call() {
                let replies = $replies;
                check::check_connection_breaking_inside_call(&$contract, &replies).await;
            }

            #[tokio::test]
            async fn cancelling_a_slow_completion_returns_within_100_ms() {
                check::check_cancelled_completion(&$contract).await;
            }

            #[tokio::test]
            async fn cancelling_a_slow_stream_returns_within_100_ms() {
                check::check_cancelled_stream(&$contract).await;
            }
        }
    };
}
