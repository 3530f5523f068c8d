//! Per-key request rates: a token bucket per API key (the GCRA of
//! [`governor`]), so one key cannot starve the others.

use std::num::NonZeroU32;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::auth::KeyId;
use crate::error::ApiError;

/// How many requests a key may send a minute; bursts up to the same number.
pub(crate) struct RequestRate {
    per_minute: NonZeroU32,
    limiter: DefaultKeyedRateLimiter<KeyId>,
    clock: DefaultClock,
}

impl RequestRate {
    pub(crate) fn per_minute(per_minute: NonZeroU32) -> Self {
        Self {
            per_minute,
            limiter: RateLimiter::keyed(Quota::per_minute(per_minute)),
            clock: DefaultClock::default(),
        }
    }

    /// Takes one request of `key`'s allowance, or says when to retry.
    pub(crate) fn check(&self, key: KeyId) -> Result<(), ApiError> {
        self.limiter.check_key(&key).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            ApiError::RateLimited {
                per_minute: self.per_minute.get(),
                retry_after_secs: wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
            }
        })?;
        if self.limiter.len() > 10_000 {
            // Keys that are back to a full allowance need no state.
            self.limiter.retain_recent();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::ApiKeys;

    #[test]
    fn a_key_over_its_rate_is_told_when_to_retry_and_other_keys_go_on() {
        let keys = ApiKeys::from_hashes([crate::hash_key("a"), crate::hash_key("b")]).unwrap_or_else(|e| panic!("{e}"));
        let (Some(a), Some(b)) = (keys.identify("a"), keys.identify("b")) else {
            panic!("both keys are configured")
        };
        let rate = RequestRate::per_minute(NonZeroU32::MIN.saturating_add(1));
        assert!(rate.check(a).is_ok());
        assert!(rate.check(a).is_ok());
        match rate.check(a) {
            Err(ApiError::RateLimited {
                per_minute: 2,
                retry_after_secs,
            }) => assert!((1..=30).contains(&retry_after_secs), "{retry_after_secs}"),
            other => panic!("expected a rate limit, got {other:?}"),
        }
        assert!(rate.check(b).is_ok(), "each key has its own allowance");
    }
}
