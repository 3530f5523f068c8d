//! The connections of [`Server::serve`](crate::Server::serve): HTTP/1.1 on
//! each accepted connection, at most so many at once, each with a deadline
//! for a request's headers; and a shutdown that drops idle and half-sent
//! connections at once and gives those answering a request a bounded
//! grace.
//!
//! At the limit of connections no new one is accepted until one closes:
//! new clients wait in the listener's backlog (their requests are not
//! refused), while the open connections, keep-alive ones included, keep
//! being served. A connection holds its slot at most the header read
//! timeout between requests (hyper closes it then, half-sent request or
//! idle keep-alive), so clients that never finish a request free their
//! slots by themselves.

use std::convert::Infallible;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::http::{Request, Response};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What bounds the connections.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    /// How long a client has to send a request's headers, and how long a
    /// keep-alive connection may stay idle.
    pub(crate) header_read_timeout: Duration,
    /// Connections served at once.
    pub(crate) max_connections: usize,
}

/// Tells every connection to close: at once when it answers no request
/// (idle, or a request still being sent), by a deadline otherwise.
#[derive(Clone, Default)]
pub(crate) struct Closing {
    token: CancellationToken,
    deadline: Arc<OnceLock<Instant>>,
}

impl Closing {
    /// Stops accepting connections and closes them; those answering a
    /// request may finish it until `deadline`.
    pub(crate) fn close(&self, deadline: Instant) {
        // Only the first deadline counts.
        let _ = self.deadline.set(deadline);
        self.token.cancel();
    }

    fn deadline(&self) -> Instant {
        self.deadline.get().copied().unwrap_or_else(Instant::now)
    }
}

/// Serves `router` on the connections of `listener` until `closing` is
/// closed and every connection has closed.
pub(crate) async fn serve(listener: TcpListener, router: Router, limits: ConnectionLimits, closing: Closing) {
    let slots_total = limits
        .max_connections
        .clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
    let slots = Arc::new(Semaphore::new(slots_total));
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = closing.token.cancelled() => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    accept_failed(error).await;
                    continue;
                }
            },
            () = closing.token.cancelled() => break,
        };
        tokio::spawn(connection(
            builder.clone(),
            stream,
            router.clone(),
            closing.clone(),
            slot,
        ));
    }
    drop(listener);
    // Each connection gives its slot back when it closes.
    let _all_closed = slots.acquire_many(slots_total as u32).await;
}

/// After a failed accept: at once when only that connection failed;
/// otherwise (out of file descriptors, say) a second later.
async fn accept_failed(error: std::io::Error) {
    use std::io::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!(%error, "accepting a connection failed; retrying in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// Serves one connection, holding its `_slot` until it closes.
async fn connection(
    builder: http1::Builder,
    stream: TcpStream,
    router: Router,
    closing: Closing,
    _slot: OwnedSemaphorePermit,
) {
    let answering = Arc::new(AtomicUsize::new(0));
    let service = Tracked {
        router,
        answering: Arc::clone(&answering),
    };
    let mut served = pin!(builder.serve_connection(TokioIo::new(stream), service));
    tokio::select! {
        result = served.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%error, "a connection ended with an error");
            }
            return;
        }
        () = closing.token.cancelled() => {}
    }
    if answering.load(Ordering::SeqCst) == 0 {
        // Idle, or a request still being sent: nothing to finish.
        return;
    }
    served.as_mut().graceful_shutdown();
    if tokio::time::timeout_at(closing.deadline(), served).await.is_err() {
        tracing::warn!("closing a connection whose request did not finish within the shutdown grace");
    }
}

/// The router, counting the requests of its connection being answered (a
/// request counts until its response's body is sent or dropped).
#[derive(Clone)]
struct Tracked {
    router: Router,
    answering: Arc<AtomicUsize>,
}

impl hyper::service::Service<Request<Incoming>> for Tracked {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let answering = Answering::start(&self.answering);
        // `Router` is always ready, and cloning it clones an `Arc`.
        let response = tower_service::Service::call(&mut self.router.clone(), request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| {
                Body::new(TrackedBody {
                    body,
                    _answering: answering,
                })
            }))
        })
    }
}

/// One request being answered, counted while this lives.
struct Answering(Arc<AtomicUsize>);

impl Answering {
    fn start(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(count))
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A response body that keeps its request counted until it is sent.
struct TrackedBody {
    body: Body,
    _answering: Answering,
}

impl HttpBody for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
