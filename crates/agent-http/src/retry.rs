//! The retry loop: which failures are sent again, after how long, and when
//! to give up.
//!
//! A request is sent again only when that cannot run the model call twice:
//! after a connect-phase failure (nothing was sent), or when the server
//! answered and its status or `x-should-retry` says a retry is fine. A
//! request that may have been delivered (a timeout or a broken connection
//! after sending) is never sent again: the provider may have run, and
//! billed, it. A wait the server asks for (`Retry-After`, ...) that the
//! budget `max_total_wait_secs` cannot cover ends the retries at once,
//! with a message naming the wait.

use std::future::Future;
use std::time::Duration;

use agent_core::{CancellationToken, LlmError, LlmErrorKind};

use crate::{HttpConfig, HttpError};

/// Added to the message of a failure that was not retried because the
/// request may have been delivered.
const NOT_RETRIED: &str = "not retried: the request may already have reached the provider, and sending it again \
                           could run (and bill) it twice";

/// Whether a failed attempt may be sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Safe and possibly useful: nothing was sent, or the server said so.
    Yes,
    /// Useless: the server refused for good, or a local check failed.
    No,
    /// Unsafe: the request may have reached the provider and run.
    Delivered,
}

/// What one attempt ended with.
pub(crate) enum Attempt<T> {
    Done(T),
    Failed { error: LlmError, retry: Retry },
}

/// Runs `attempt` until it succeeds, fails for good, the retries or the
/// wait budget run out, or `cancel` fires.
pub(crate) async fn with_retries<T, F, Fut>(
    config: &HttpConfig,
    provider: &str,
    cancel: &CancellationToken,
    mut attempt: F,
) -> Result<T, LlmError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Attempt<T>>,
{
    let budget = config.max_total_wait();
    let mut waited = Duration::ZERO;
    let mut retries = 0;
    loop {
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(LlmError::cancelled().with_provider(provider)),
            outcome = attempt() => outcome,
        };
        let (mut error, retry) = match outcome {
            Attempt::Done(value) => return Ok(value),
            Attempt::Failed { error, retry } => (error, retry),
        };
        let attempts = retries + 1;
        let retries_left = retries < config.max_retries;
        match retry {
            Retry::Yes if retries_left => {}
            Retry::Delivered if retries_left => {
                error.message = format!("{}; {NOT_RETRIED}", error.message);
                return Err(annotate_attempts(error, attempts));
            }
            Retry::Yes | Retry::No | Retry::Delivered => return Err(annotate_attempts(error, attempts)),
        }
        let asked = error.retry_after();
        let delay = asked.unwrap_or_else(|| config.backoff(retries));
        if waited.saturating_add(delay) > budget {
            if let Some(wait) = asked {
                let too_long = HttpError::RetryAfterTooLong { wait, waited, budget };
                error.message = format!("{}; {too_long}", error.message);
            }
            return Err(annotate_attempts(error, attempts));
        }
        tracing::warn!(
            provider = %provider,
            retry = retries + 1,
            delay_ms = delay.as_millis() as u64,
            error = %error,
            "retrying model request"
        );
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(LlmError::cancelled().with_provider(provider)),
            () = tokio::time::sleep(delay) => {}
        }
        waited += delay;
        retries += 1;
    }
}

/// Says how many attempts were made, when there was more than one.
fn annotate_attempts(mut error: LlmError, attempts: u32) -> LlmError {
    if attempts > 1 && error.kind != LlmErrorKind::Cancelled {
        error.message = format!("{} (after {attempts} attempts)", error.message);
    }
    error
}
