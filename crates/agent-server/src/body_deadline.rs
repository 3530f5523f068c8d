//! A deadline for request bodies: a client has so long, from the moment
//! its request's headers arrived, to send the body. A handler reading the
//! body past it gets an error, which [`Shared::body`](crate::state::Shared::body)
//! answers with 408. A body nobody reads costs no time.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use http_body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// The error of a body read past its deadline.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the request body did not arrive within {} ms", .0.as_millis())]
pub(crate) struct BodyTimedOut(pub(crate) Duration);

/// Middleware: gives the request's body a deadline `timeout` from now.
pub(crate) async fn add_deadline(State(timeout): State<Duration>, request: Request) -> Request {
    let deadline = Instant::now() + timeout;
    request.map(|body| {
        Body::new(DeadlineBody {
            body,
            timeout,
            deadline,
            sleep: None,
        })
    })
}

/// The timeout that `error` or one of its sources reports, if one does.
pub(crate) fn timed_out(error: &(dyn std::error::Error + 'static)) -> Option<Duration> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(BodyTimedOut(timeout)) = error.downcast_ref::<BodyTimedOut>() {
            return Some(*timeout);
        }
        current = error.source();
    }
    None
}

/// A body that fails once its deadline has passed.
struct DeadlineBody {
    body: Body,
    timeout: Duration,
    deadline: Instant,
    /// Made when the body is first waited for.
    sleep: Option<Pin<Box<Sleep>>>,
}

impl HttpBody for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        let deadline = this.deadline;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(axum::Error::new(BodyTimedOut(this.timeout))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use axum::Json;
    use axum::extract::FromRequest;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_body_read_past_its_deadline_is_an_error_the_json_rejection_names() {
        let never = futures::stream::pending::<Result<Bytes, std::io::Error>>();
        let request = Request::builder()
            .header("content-type", "application/json")
            .body(Body::from_stream(never))
            .unwrap_or_else(|e| panic!("{e}"));
        let request = add_deadline(State(Duration::from_secs(30)), request).await;
        let rejection = Json::<serde_json::Value>::from_request(request, &())
            .await
            .err()
            .unwrap_or_else(|| panic!("the body never came"));
        assert_eq!(timed_out(&rejection), Some(Duration::from_secs(30)), "{rejection}");

        let body = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"{}"))]);
        let request = Request::builder()
            .header("content-type", "application/json")
            .body(Body::from_stream(body))
            .unwrap_or_else(|e| panic!("{e}"));
        let request = add_deadline(State(Duration::from_secs(30)), request).await;
        let read = Json::<serde_json::Value>::from_request(request, &()).await;
        assert!(read.is_ok(), "a body in time is read");
        assert!(timed_out(&std::io::Error::other("other")).is_none());
    }
}
