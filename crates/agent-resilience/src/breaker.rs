//! A circuit breaker for one provider endpoint: it opens after too many
//! failures, lets one probe through once it has been open a while, and
//! closes again when the probe succeeds.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use agent_core::{LlmError, LlmErrorKind};
use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// When a [`CircuitBreaker`] opens and how long it stays open. The
/// `[providers.NAME.circuit_breaker]` table of `agentry.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BreakerConfig {
    /// Opens after this many failures in a row (0: never for this reason).
    pub consecutive_failures: u32,
    /// Opens when this share of the last `window` calls failed (0: never
    /// for this reason), once at least `min_calls` of them were made.
    pub failure_rate: f64,
    /// How many recent calls the failure rate is taken over.
    pub window: u32,
    /// How many calls of the window must have been made before the rate counts.
    pub min_calls: u32,
    /// Seconds the breaker stays open before a probe may go through.
    pub open_secs: f64,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            consecutive_failures: 5,
            failure_rate: 0.5,
            window: 20,
            min_calls: 10,
            open_secs: 30.0,
        }
    }
}

impl BreakerConfig {
    /// Checks the values, naming the first that is out of range.
    ///
    /// # Errors
    ///
    /// A rate outside `[0, 1]`, an empty window, `min_calls` over the
    /// window, or an open time that is not a positive number of seconds.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key: &'static str, message: String| Err(ConfigError { key, message });
        if !(0.0..=1.0).contains(&self.failure_rate) {
            return invalid(
                "failure_rate",
                format!("{} is not a share between 0 and 1", self.failure_rate),
            );
        }
        if self.window == 0 {
            return invalid("window", "the window must hold at least one call".to_owned());
        }
        if self.min_calls > self.window {
            return invalid(
                "min_calls",
                format!("{} is more than the window of {} calls", self.min_calls, self.window),
            );
        }
        if Duration::try_from_secs_f64(self.open_secs).map_or(true, |open| open.is_zero()) {
            return invalid(
                "open_secs",
                format!("{} is not a positive number of seconds", self.open_secs),
            );
        }
        Ok(())
    }

    fn open_for(&self) -> Duration {
        Duration::try_from_secs_f64(self.open_secs).unwrap_or(Duration::from_secs(30))
    }
}

/// Where a breaker stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    /// Calls go through.
    Closed,
    /// Calls fail at once, without reaching the provider.
    Open,
    /// One probe call may go through; its outcome closes or reopens the breaker.
    HalfOpen,
}

impl BreakerState {
    /// The state as a gauge value: 0 closed, 1 half-open, 2 open.
    pub fn gauge(self) -> f64 {
        match self {
            Self::Closed => 0.0,
            Self::HalfOpen => 1.0,
            Self::Open => 2.0,
        }
    }
}

/// A breaker's state and counts at one moment, as `/readyz` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakerSnapshot {
    /// The endpoint the breaker guards.
    pub name: String,
    /// Where it stands.
    pub state: BreakerState,
    /// Failures since the last success.
    pub consecutive_failures: u32,
    /// Calls in the failure-rate window.
    pub recent_calls: u32,
    /// Failures among them.
    pub recent_failures: u32,
    /// How many times it has opened.
    pub times_opened: u64,
    /// While open: milliseconds until a probe may go through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_in_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Closed,
    Open { until: Instant },
    HalfOpen { probing: bool },
}

#[derive(Debug)]
struct Counts {
    phase: Phase,
    consecutive: u32,
    /// The last `window` outcomes, `true` for a failure.
    recent: VecDeque<bool>,
    recent_failures: u32,
    times_opened: u64,
}

/// A circuit breaker for one endpoint. Share it (`Arc`) between the client
/// that calls through it ([`ResilientClient`](crate::ResilientClient)) and
/// whatever reports its state.
#[derive(Debug)]
pub struct CircuitBreaker {
    name: String,
    config: BreakerConfig,
    counts: Mutex<Counts>,
}

/// What a call through the breaker ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// The endpoint answered (an error it gave for the request itself,
    /// such as a rejected key or a malformed request, counts here: the
    /// endpoint is up).
    Answered,
    /// The endpoint failed: overloaded, a server error, a timeout, a
    /// broken connection, an unreadable reply or a rate limit.
    Failed,
    /// Nothing can be said: the caller cancelled or gave up.
    Unknown,
}

impl CallOutcome {
    /// How `error` counts for the endpoint's health.
    pub fn of_error(error: &LlmError) -> Self {
        match error.kind {
            LlmErrorKind::Overloaded
            | LlmErrorKind::Server
            | LlmErrorKind::Timeout
            | LlmErrorKind::Transport
            | LlmErrorKind::Decode
            | LlmErrorKind::RateLimited => Self::Failed,
            LlmErrorKind::Cancelled | LlmErrorKind::CircuitOpen | LlmErrorKind::UnsupportedInput => Self::Unknown,
            LlmErrorKind::Auth
            | LlmErrorKind::InvalidRequest
            | LlmErrorKind::ContextLength
            | LlmErrorKind::MalformedToolCall => Self::Answered,
        }
    }
}

impl CircuitBreaker {
    /// A closed breaker for the endpoint `name` (named in errors, `/readyz`
    /// and metrics).
    ///
    /// # Errors
    ///
    /// `config` is out of range ([`BreakerConfig::validate`]).
    pub fn new(name: impl Into<String>, config: BreakerConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let breaker = Self {
            name: name.into(),
            counts: Mutex::new(Counts {
                phase: Phase::Closed,
                consecutive: 0,
                recent: VecDeque::with_capacity(config.window as usize),
                recent_failures: 0,
                times_opened: 0,
            }),
            config,
        };
        breaker.publish(BreakerState::Closed);
        Ok(breaker)
    }

    /// The endpoint's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The breaker's configuration.
    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    /// Asks to make a call. The permit says how it went
    /// ([`BreakerPermit::record`]); dropped unrecorded it counts as
    /// [`CallOutcome::Unknown`].
    ///
    /// # Errors
    ///
    /// The breaker is open, or half-open with its probe in flight: an
    /// [`LlmErrorKind::CircuitOpen`] error naming the endpoint, with the
    /// time until a probe may go through as its retry delay.
    pub fn try_acquire(self: &Arc<Self>) -> Result<BreakerPermit, LlmError> {
        self.try_acquire_at(Instant::now())
    }

    fn try_acquire_at(self: &Arc<Self>, now: Instant) -> Result<BreakerPermit, LlmError> {
        let mut counts = self.lock();
        let probe = match counts.phase {
            Phase::Closed => false,
            Phase::Open { until } if now < until => {
                let wait = until - now;
                return Err(self.open_error(&counts, wait));
            }
            Phase::Open { .. } | Phase::HalfOpen { probing: false } => {
                counts.phase = Phase::HalfOpen { probing: true };
                drop(counts);
                tracing::info!(endpoint = %self.name, "circuit breaker half-open: one probe call goes through");
                self.publish(BreakerState::HalfOpen);
                true
            }
            Phase::HalfOpen { probing: true } => {
                return Err(LlmError::new(
                    LlmErrorKind::CircuitOpen,
                    "the circuit breaker is half-open and its probe call is still in flight",
                )
                .with_provider(self.name.clone()));
            }
        };
        Ok(BreakerPermit {
            breaker: Arc::clone(self),
            probe,
            recorded: false,
        })
    }

    fn open_error(&self, counts: &Counts, wait: Duration) -> LlmError {
        LlmError::new(
            LlmErrorKind::CircuitOpen,
            format!(
                "the circuit breaker is open after {} failures in a row ({} of the last {} calls failed); \
                 a probe may go through in {:.1} s",
                counts.consecutive,
                counts.recent_failures,
                counts.recent.len(),
                wait.as_secs_f64()
            ),
        )
        .with_provider(self.name.clone())
        .with_retry_after(Some(wait))
    }

    /// The state and counts now.
    pub fn snapshot(&self) -> BreakerSnapshot {
        self.snapshot_at(Instant::now())
    }

    fn snapshot_at(&self, now: Instant) -> BreakerSnapshot {
        let counts = self.lock();
        let (state, probe_in) = match counts.phase {
            Phase::Closed => (BreakerState::Closed, None),
            Phase::Open { until } if now < until => (BreakerState::Open, Some(until - now)),
            // Open past its time: the next call is the probe.
            Phase::Open { .. } | Phase::HalfOpen { .. } => (BreakerState::HalfOpen, None),
        };
        BreakerSnapshot {
            name: self.name.clone(),
            state,
            consecutive_failures: counts.consecutive,
            recent_calls: u32::try_from(counts.recent.len()).unwrap_or(u32::MAX),
            recent_failures: counts.recent_failures,
            times_opened: counts.times_opened,
            probe_in_ms: probe_in.map(|wait| u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)),
        }
    }

    fn record_at(&self, probe: bool, outcome: CallOutcome, now: Instant) {
        let mut counts = self.lock();
        let change = match outcome {
            CallOutcome::Unknown => {
                if probe && counts.phase == (Phase::HalfOpen { probing: true }) {
                    counts.phase = Phase::HalfOpen { probing: false };
                }
                None
            }
            CallOutcome::Answered => {
                counts.consecutive = 0;
                self.remember(&mut counts, false);
                match counts.phase {
                    Phase::HalfOpen { .. } if probe => {
                        counts.phase = Phase::Closed;
                        counts.recent.clear();
                        counts.recent_failures = 0;
                        Some(BreakerState::Closed)
                    }
                    _ => None,
                }
            }
            CallOutcome::Failed => {
                counts.consecutive = counts.consecutive.saturating_add(1);
                self.remember(&mut counts, true);
                let trips = match counts.phase {
                    Phase::HalfOpen { .. } => probe,
                    Phase::Closed => self.trips(&counts),
                    Phase::Open { .. } => false,
                };
                trips.then(|| {
                    counts.phase = Phase::Open {
                        until: now + self.config.open_for(),
                    };
                    counts.times_opened += 1;
                    BreakerState::Open
                })
            }
        };
        let consecutive = counts.consecutive;
        drop(counts);
        if let Some(state) = change {
            match state {
                BreakerState::Open => tracing::warn!(
                    endpoint = %self.name,
                    consecutive_failures = consecutive,
                    open_secs = self.config.open_secs,
                    "circuit breaker opened: calls fail at once until a probe succeeds"
                ),
                BreakerState::Closed => {
                    tracing::info!(endpoint = %self.name, "circuit breaker closed: the probe call succeeded");
                }
                BreakerState::HalfOpen => {}
            }
            self.publish(state);
        }
    }

    fn trips(&self, counts: &Counts) -> bool {
        let config = &self.config;
        let in_a_row = config.consecutive_failures > 0 && counts.consecutive >= config.consecutive_failures;
        let calls = counts.recent.len();
        let by_rate = config.failure_rate > 0.0
            && calls >= config.min_calls.max(1) as usize
            && f64::from(counts.recent_failures) / calls as f64 >= config.failure_rate;
        in_a_row || by_rate
    }

    fn remember(&self, counts: &mut Counts, failed: bool) {
        if counts.recent.len() == self.config.window as usize
            && let Some(oldest) = counts.recent.pop_front()
        {
            counts.recent_failures -= u32::from(oldest);
        }
        counts.recent.push_back(failed);
        counts.recent_failures += u32::from(failed);
    }

    fn publish(&self, state: BreakerState) {
        metrics::gauge!("agentry.circuit_breaker.state", "agentry.endpoint" => self.name.clone()).set(state.gauge());
        if state == BreakerState::Open {
            metrics::counter!("agentry.circuit_breaker.opened", "agentry.endpoint" => self.name.clone()).increment(1);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Counts> {
        // The counts stay consistent even if a holder panicked: every
        // update is a few plain assignments.
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Leave to make one call through a [`CircuitBreaker`]; say how it went
/// with [`record`](Self::record).
#[derive(Debug)]
pub struct BreakerPermit {
    breaker: Arc<CircuitBreaker>,
    probe: bool,
    recorded: bool,
}

impl BreakerPermit {
    /// Whether this call is the half-open breaker's probe.
    pub fn is_probe(&self) -> bool {
        self.probe
    }

    /// Reports the call's outcome.
    pub fn record(self, outcome: CallOutcome) {
        self.record_at(outcome, Instant::now());
    }

    fn record_at(mut self, outcome: CallOutcome, now: Instant) {
        self.recorded = true;
        self.breaker.record_at(self.probe, outcome, now);
    }

    /// Reports a call's result: success is [`CallOutcome::Answered`], an
    /// error counts as [`CallOutcome::of_error`] says.
    pub fn record_result<T>(self, result: &Result<T, LlmError>) {
        let outcome = match result {
            Ok(_) => CallOutcome::Answered,
            Err(error) => CallOutcome::of_error(error),
        };
        self.record(outcome);
    }
}

impl Drop for BreakerPermit {
    fn drop(&mut self) {
        if !self.recorded {
            self.breaker.record_at(self.probe, CallOutcome::Unknown, Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker(config: BreakerConfig) -> Arc<CircuitBreaker> {
        Arc::new(CircuitBreaker::new("endpoint", config).unwrap_or_else(|e| panic!("{e}")))
    }

    fn fail_at(breaker: &Arc<CircuitBreaker>, now: Instant) {
        let permit = breaker.try_acquire_at(now).unwrap_or_else(|e| panic!("{e}"));
        permit.record_at(CallOutcome::Failed, now);
    }

    #[test]
    fn failures_in_a_row_open_it_and_a_successful_probe_closes_it() {
        let breaker = breaker(BreakerConfig {
            consecutive_failures: 3,
            failure_rate: 0.0,
            open_secs: 10.0,
            ..BreakerConfig::default()
        });
        let start = Instant::now();
        for _ in 0..3 {
            fail_at(&breaker, start);
        }
        assert_eq!(breaker.snapshot_at(start).state, BreakerState::Open);
        let refused = breaker.try_acquire_at(start + Duration::from_secs(4)).err();
        let refused = refused.unwrap_or_else(|| panic!("an open breaker let a call through"));
        assert_eq!(refused.kind, LlmErrorKind::CircuitOpen);
        assert_eq!(refused.retry_after(), Some(Duration::from_secs(6)));
        assert!(refused.to_string().contains("endpoint: circuit open"), "{refused}");

        let later = start + Duration::from_secs(10);
        let probe = breaker.try_acquire_at(later).unwrap_or_else(|e| panic!("{e}"));
        assert!(probe.is_probe());
        assert!(
            breaker.try_acquire_at(later).is_err(),
            "only one probe goes through while half-open"
        );
        assert_eq!(breaker.snapshot_at(later).state, BreakerState::HalfOpen);
        probe.record(CallOutcome::Answered);
        let snapshot = breaker.snapshot_at(later);
        assert_eq!((snapshot.state, snapshot.times_opened), (BreakerState::Closed, 1));
        assert!(breaker.try_acquire_at(later).is_ok());
    }

    #[test]
    fn a_failed_probe_opens_it_again_and_a_dropped_one_lets_the_next_probe_go() {
        let breaker = breaker(BreakerConfig {
            consecutive_failures: 1,
            open_secs: 5.0,
            ..BreakerConfig::default()
        });
        let start = Instant::now();
        fail_at(&breaker, start);
        let later = start + Duration::from_secs(5);
        drop(breaker.try_acquire_at(later).unwrap_or_else(|e| panic!("{e}")));
        let probe = breaker.try_acquire_at(later).unwrap_or_else(|e| panic!("{e}"));
        assert!(probe.is_probe(), "a probe dropped without an outcome frees the slot");
        probe.record_at(CallOutcome::Failed, later);
        let snapshot = breaker.snapshot_at(later);
        assert_eq!((snapshot.state, snapshot.times_opened), (BreakerState::Open, 2));
        assert_eq!(snapshot.probe_in_ms, Some(5000));
    }

    #[test]
    fn a_failure_rate_over_the_window_opens_it() {
        let breaker = breaker(BreakerConfig {
            consecutive_failures: 0,
            failure_rate: 0.5,
            window: 4,
            min_calls: 4,
            ..BreakerConfig::default()
        });
        let now = Instant::now();
        let answer = |breaker: &Arc<CircuitBreaker>| {
            breaker
                .try_acquire_at(now)
                .unwrap_or_else(|e| panic!("{e}"))
                .record(CallOutcome::Answered);
        };
        answer(&breaker);
        fail_at(&breaker, now);
        answer(&breaker);
        assert_eq!(
            breaker.snapshot_at(now).state,
            BreakerState::Closed,
            "3 calls are under min_calls"
        );
        fail_at(&breaker, now);
        let snapshot = breaker.snapshot_at(now);
        assert_eq!(snapshot.state, BreakerState::Open, "2 of 4 failed: {snapshot:?}");
        assert_eq!((snapshot.recent_calls, snapshot.recent_failures), (4, 2));
    }

    #[test]
    fn errors_count_by_what_they_say_about_the_endpoint() {
        assert_eq!(
            CallOutcome::of_error(&LlmError::new(LlmErrorKind::Overloaded, "")),
            CallOutcome::Failed
        );
        assert_eq!(CallOutcome::of_error(&LlmError::auth("")), CallOutcome::Answered);
        assert_eq!(CallOutcome::of_error(&LlmError::cancelled()), CallOutcome::Unknown);
    }

    #[test]
    fn its_state_is_a_gauge_and_its_openings_a_counter() {
        use metrics_util::debugging::{DebugValue, DebuggingRecorder};

        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        // The breaker's gauge and how many times it opened, from one snapshot.
        let read = || {
            let (mut state, mut opened) = (None, None);
            for (key, _, _, value) in snapshotter.snapshot().into_vec() {
                let key = key.key();
                let ours = key
                    .labels()
                    .any(|label| label.key() == "agentry.endpoint" && label.value() == "endpoint");
                match value {
                    DebugValue::Gauge(value) if ours && key.name() == "agentry.circuit_breaker.state" => {
                        state = Some(value.into_inner());
                    }
                    DebugValue::Counter(count) if ours && key.name() == "agentry.circuit_breaker.opened" => {
                        opened = Some(count);
                    }
                    _ => {}
                }
            }
            (state, opened)
        };
        metrics::with_local_recorder(&recorder, || {
            let breaker = breaker(BreakerConfig {
                consecutive_failures: 1,
                ..BreakerConfig::default()
            });
            assert_eq!(read().0, Some(0.0));
            let now = Instant::now();
            breaker
                .try_acquire_at(now)
                .unwrap_or_else(|e| panic!("{e}"))
                .record_at(CallOutcome::Failed, now);
            assert_eq!(read(), (Some(2.0), Some(1)));
            let later = now + breaker.config().open_for();
            let probe = breaker.try_acquire_at(later).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(read().0, Some(1.0));
            probe.record_at(CallOutcome::Answered, later);
            assert_eq!(read().0, Some(0.0));
        });
    }

    #[test]
    fn out_of_range_settings_are_refused_by_name() {
        let error = CircuitBreaker::new(
            "e",
            BreakerConfig {
                failure_rate: 1.5,
                ..BreakerConfig::default()
            },
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(error.contains("failure_rate") && error.contains("1.5"), "{error}");
        let error = BreakerConfig {
            open_secs: 0.0,
            ..BreakerConfig::default()
        }
        .validate()
        .err()
        .map(|e| e.key);
        assert_eq!(error, Some("open_secs"));
    }
}
