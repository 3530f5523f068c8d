//! Reading response bodies within limits: a whole body up to
//! `max_response_bytes`, the start of an error body, and streams that end
//! with an error at their size cap or their deadline.

use std::time::Duration;

use agent_core::LlmError;
use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};

use crate::HttpError;

/// The most of an error body read: the provider's message is at its start.
pub(crate) const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// Why a whole body could not be read.
pub(crate) enum BodyError {
    /// It is larger than the limit.
    TooLarge(HttpError),
    /// The connection failed while reading it.
    Transport(reqwest::Error),
}

/// Reads a whole body, failing as soon as it is known to exceed `limit`
/// bytes: from `Content-Length` before reading, or while reading.
pub(crate) async fn read_capped(mut response: reqwest::Response, limit: usize) -> Result<Bytes, BodyError> {
    let length = response.content_length();
    let too_large = |length| BodyError::TooLarge(HttpError::BodyTooLarge { limit, length });
    if length.is_some_and(|length| length > limit as u64) {
        return Err(too_large(length));
    }
    // A body that comes in one chunk (most replies) is that chunk, not a copy.
    let Some(first) = response.chunk().await.map_err(BodyError::Transport)? else {
        return Ok(Bytes::new());
    };
    if first.len() > limit {
        return Err(too_large(length));
    }
    let Some(second) = response.chunk().await.map_err(BodyError::Transport)? else {
        return Ok(first);
    };
    let expected = length.map_or(0, |length| length as usize);
    let mut body = BytesMut::with_capacity(expected.min(limit).max(first.len() + second.len()));
    body.extend_from_slice(&first);
    let mut next = Some(second);
    while let Some(chunk) = next {
        if chunk.len() > limit - body.len() {
            return Err(too_large(length));
        }
        body.extend_from_slice(&chunk);
        next = response.chunk().await.map_err(BodyError::Transport)?;
    }
    Ok(body.freeze())
}

/// Reads at most `limit` bytes of a body, for an error message; a failure
/// to read ends it quietly.
pub(crate) async fn read_prefix(mut response: reqwest::Response, limit: usize) -> Bytes {
    let mut body = BytesMut::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = limit - body.len();
        if chunk.len() >= room {
            body.extend_from_slice(&chunk[..room]);
            break;
        }
        body.extend_from_slice(&chunk);
    }
    body.freeze()
}

/// `body`, ended with [`HttpError::StreamTimeout`] once `limit` has passed.
pub(crate) fn with_deadline<S>(
    body: S,
    limit: Duration,
    provider: String,
) -> impl Stream<Item = Result<Bytes, LlmError>>
where
    S: Stream<Item = Result<Bytes, LlmError>> + Unpin,
{
    // A limit too far away to represent is no limit.
    let deadline = tokio::time::Instant::now().checked_add(limit);
    futures::stream::unfold(Some(body), move |state| {
        let provider = provider.clone();
        async move {
            let mut body = state?;
            let next = match deadline {
                Some(deadline) => tokio::time::timeout_at(deadline, body.next()).await,
                None => Ok(body.next().await),
            };
            let Ok(next) = next else {
                let error = LlmError::from(HttpError::StreamTimeout { limit }).with_provider(provider);
                return Some((Err(error), None));
            };
            next.map(|item| (item, Some(body)))
        }
    })
}

/// `body`, ended with [`HttpError::StreamTooLarge`] as soon as its chunks
/// together pass `limit` bytes: the chunk that passes it is not passed on,
/// and nothing after the error is read.
pub(crate) fn with_size_cap<S>(body: S, limit: usize, provider: String) -> impl Stream<Item = Result<Bytes, LlmError>>
where
    S: Stream<Item = Result<Bytes, LlmError>> + Unpin,
{
    futures::stream::unfold(Some((body, 0usize)), move |state| {
        let provider = provider.clone();
        async move {
            let (mut body, received) = state?;
            match body.next().await? {
                Ok(chunk) if chunk.len() > limit.saturating_sub(received) => {
                    let error = LlmError::from(HttpError::StreamTooLarge { limit }).with_provider(provider);
                    Some((Err(error), None))
                }
                Ok(chunk) => {
                    let received = received + chunk.len();
                    Some((Ok(chunk), Some((body, received))))
                }
                Err(error) => Some((Err(error), Some((body, received)))),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(chunks: Vec<&'static [u8]>) -> reqwest::Response {
        let stream = futures::stream::iter(
            chunks
                .into_iter()
                .map(|chunk| Ok::<_, std::io::Error>(Bytes::from_static(chunk))),
        );
        reqwest::Response::from(http::Response::new(reqwest::Body::wrap_stream(stream)))
    }

    async fn read(chunks: Vec<&'static [u8]>, limit: usize) -> Result<Bytes, String> {
        read_capped(response(chunks), limit).await.map_err(|error| match error {
            BodyError::TooLarge(error) => error.to_string(),
            BodyError::Transport(error) => format!("transport: {error}"),
        })
    }

    #[tokio::test]
    async fn a_body_in_one_chunk_is_that_chunk() {
        static BODY: &[u8] = br#"{"answer":42}"#;
        let body = read(vec![BODY], 1024).await;
        assert_eq!(body.as_deref(), Ok(BODY));
        assert_eq!(body.map(|body| body.as_ptr()), Ok(BODY.as_ptr()), "not copied");
    }

    #[tokio::test]
    async fn a_body_in_several_chunks_is_joined_in_order() {
        assert_eq!(
            read(vec![b"{\"a\":", b"1,", b"\"b\":2}"], 1024).await.as_deref(),
            Ok(&br#"{"a":1,"b":2}"#[..])
        );
        assert_eq!(read(Vec::new(), 1024).await.as_deref(), Ok(&b""[..]));
    }

    #[tokio::test]
    async fn a_body_over_the_limit_fails_in_any_chunk() {
        for chunks in [
            vec![&b"0123456789"[..]],
            vec![b"01234", b"56789"],
            vec![b"0123", b"4567", b"89"],
        ] {
            let error = read(chunks, 8).await.err().unwrap_or_default();
            assert!(error.contains("larger than the 8-byte limit"), "{error}");
        }
        assert_eq!(read(vec![b"0123", b"4567"], 8).await.as_deref(), Ok(&b"01234567"[..]));
    }
}
