//! OpenTelemetry export of the GenAI spans and metrics: [`TelemetryConfig`]
//! (the `[telemetry]` table of `agentry.toml`, in every build) and, with
//! the cargo feature `telemetry`, the export itself.
//!
//! With `otlp_endpoint` set, [`Telemetry::start`] builds:
//!
//! - a `tracing-opentelemetry` layer whose spans go, batched on a thread of
//!   their own, to `{otlp_endpoint}/v1/traces` over OTLP/HTTP (protobuf).
//!   The runner's `gen_ai.response.finish_reasons` span field (a scalar, as
//!   tracing fields are, the reasons joined with `,`) is exported as the
//!   string array the GenAI semantic conventions ask for;
//! - a [`metrics`] recorder that forwards every counter, gauge and histogram
//!   to an OpenTelemetry meter, exported to `{otlp_endpoint}/v1/metrics`
//!   every `metrics_interval_secs` and once at exit. The GenAI histograms
//!   (`gen_ai.client.token.usage`, `gen_ai.client.operation.duration`) get
//!   the units and bucket boundaries of the conventions.
//!
//! Install the tracer as a `tracing-opentelemetry` layer and the recorder
//! with `metrics::set_global_recorder`; [`Telemetry::shutdown`] flushes
//! both (the `agentry` binary calls it before it exits).
//! Without an endpoint nothing is installed: no exporter, no thread.

use std::collections::BTreeMap;

/// The `[telemetry]` table: OpenTelemetry (OTLP) export of the GenAI spans
/// and metrics. Nothing is exported, and no exporter thread started, unless
/// `otlp_endpoint` is set. `Debug` shows header names only: a header may
/// hold a token.
#[derive(Clone, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The collector's base URL, e.g. `http://localhost:4318`; spans go to
    /// `{otlp_endpoint}/v1/traces`, metrics to `{otlp_endpoint}/v1/metrics`.
    pub otlp_endpoint: Option<String>,
    /// The OTLP transport: `http/protobuf` (the only one supported).
    pub protocol: String,
    /// The `service.name` resource attribute.
    pub service_name: String,
    /// Extra HTTP headers sent with every export (e.g. an API key).
    pub headers: BTreeMap<String, String>,
    /// How often metrics are exported, in seconds (and once at exit).
    pub metrics_interval_secs: f64,
}

/// The OTLP protocols `telemetry.protocol` accepts.
pub const TELEMETRY_PROTOCOLS: &[&str] = &["http/protobuf"];

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            otlp_endpoint: None,
            protocol: "http/protobuf".to_owned(),
            service_name: "agentry".to_owned(),
            headers: BTreeMap::new(),
            metrics_interval_secs: 60.0,
        }
    }
}

impl std::fmt::Debug for TelemetryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelemetryConfig")
            .field("otlp_endpoint", &self.otlp_endpoint)
            .field("protocol", &self.protocol)
            .field("service_name", &self.service_name)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("metrics_interval_secs", &self.metrics_interval_secs)
            .finish()
    }
}

/// A value of a [`TelemetryConfig`] out of its range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value for `{key}`: {message}")]
pub struct InvalidTelemetry {
    /// The key in the table, e.g. `otlp_endpoint` or `headers.authorization`.
    pub key: String,
    /// What the value must be.
    pub message: String,
}

impl TelemetryConfig {
    /// Checks what the types cannot: the endpoint is an http(s) URL with a
    /// host, the protocol is supported, the service name is not blank,
    /// header names and values are valid, the interval is positive.
    pub fn validate(&self) -> Result<(), InvalidTelemetry> {
        let invalid = |key: &str, message: String| {
            Err(InvalidTelemetry {
                key: key.to_owned(),
                message,
            })
        };
        if let Some(endpoint) = &self.otlp_endpoint
            && !is_http_url(endpoint.trim())
        {
            return invalid(
                "otlp_endpoint",
                "must be an http:// or https:// URL, e.g. \"http://localhost:4318\"".to_owned(),
            );
        }
        if !TELEMETRY_PROTOCOLS.contains(&self.protocol.as_str()) {
            return invalid(
                "protocol",
                format!(
                    "unsupported OTLP protocol \"{}\"; supported: {}",
                    self.protocol,
                    TELEMETRY_PROTOCOLS.join(", ")
                ),
            );
        }
        if self.service_name.trim().is_empty() {
            return invalid("service_name", "must not be empty".to_owned());
        }
        for (name, value) in &self.headers {
            let valid_name = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !valid_name {
                return invalid("headers", format!("\"{name}\" is not a valid header name"));
            }
            if value.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
                return invalid(
                    &format!("headers.{name}"),
                    "must not contain control characters".to_owned(),
                );
            }
        }
        let interval = self.metrics_interval_secs;
        if !(interval > 0.0 && std::time::Duration::try_from_secs_f64(interval).is_ok()) {
            return invalid(
                "metrics_interval_secs",
                "must be a positive number of seconds".to_owned(),
            );
        }
        Ok(())
    }
}

/// Whether `text` is an `http://` or `https://` URL with a host.
fn is_http_url(text: &str) -> bool {
    let Some(rest) = text.strip_prefix("http://").or_else(|| text.strip_prefix("https://")) else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = if host.starts_with('[') {
        host.split_once(']')
            .map_or("", |(address, _)| address.trim_start_matches('['))
    } else {
        host.split(':').next().unwrap_or_default()
    };
    !host.is_empty() && !text.chars().any(char::is_whitespace)
}

#[cfg(feature = "telemetry")]
pub use export::{FINISH_REASONS, OtelRecorder, SCOPE, Telemetry, TelemetryError, Tracer};

/// The export itself (the cargo feature `telemetry`).
#[cfg(feature = "telemetry")]
mod export {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex, PoisonError};
    use std::time::Duration;

    use metrics::{Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, SharedString, Unit};
    use opentelemetry::metrics::{Meter, MeterProvider as _};
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry::{Array, KeyValue, StringValue, Value};
    use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
    use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};

    use super::TelemetryConfig;

    /// The tracer of the span export, for `tracing_opentelemetry::layer().with_tracer(..)`.
    pub use opentelemetry_sdk::trace::Tracer;

    /// The instrumentation scope of the spans and metrics.
    pub const SCOPE: &str = "agentry";

    /// The span field the runner records finish reasons in, joined with `,`;
    /// exported as a string array.
    pub const FINISH_REASONS: &str = "gen_ai.response.finish_reasons";

    /// Bucket boundaries of `gen_ai.client.token.usage` (GenAI conventions).
    const TOKEN_BOUNDARIES: [f64; 14] = [
        1.0,
        4.0,
        16.0,
        64.0,
        256.0,
        1024.0,
        4096.0,
        16384.0,
        65536.0,
        262_144.0,
        1_048_576.0,
        4_194_304.0,
        16_777_216.0,
        67_108_864.0,
    ];

    /// Bucket boundaries of `gen_ai.client.operation.duration`, in seconds.
    const DURATION_BOUNDARIES: [f64; 14] = [
        0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
    ];

    /// The running OTLP export: shut it down before the process exits, or the
    /// last spans and metrics are lost.
    #[derive(Debug)]
    pub struct Telemetry {
        endpoint: String,
        tracer_provider: SdkTracerProvider,
        meter_provider: SdkMeterProvider,
    }

    /// Why the export could not start.
    #[derive(Debug, thiserror::Error)]
    #[error("telemetry: cannot build the OTLP {signal} exporter: {message}")]
    pub struct TelemetryError {
        signal: &'static str,
        message: String,
    }

    impl Telemetry {
        /// Builds the exporters for `settings`; `None` when no endpoint is
        /// configured. The tracer is for `tracing_opentelemetry::layer`; the
        /// metrics recorder is not installed here (see [`Telemetry::recorder`]).
        pub fn start(settings: &TelemetryConfig) -> Result<Option<(Self, Tracer)>, TelemetryError> {
            let Some(endpoint) = settings.otlp_endpoint.as_deref() else {
                return Ok(None);
            };
            let base = endpoint.trim().trim_end_matches('/');
            let headers: HashMap<String, String> = settings
                .headers
                .iter()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect();
            let resource = Resource::builder()
                .with_service_name(settings.service_name.clone())
                .build();
            let http_client = export_client().map_err(|error| TelemetryError {
                signal: "HTTP client of the",
                message: error.to_string(),
            })?;

            let span_exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_endpoint(format!("{base}/v1/traces"))
                .with_http_client(http_client.clone())
                .with_headers(headers.clone())
                .build()
                .map_err(|error| TelemetryError {
                    signal: "span",
                    message: error.to_string(),
                })?;
            let tracer_provider = SdkTracerProvider::builder()
                .with_batch_exporter(GenAiSpans(span_exporter))
                .with_resource(resource.clone())
                .build();

            let metric_exporter = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_endpoint(format!("{base}/v1/metrics"))
                .with_http_client(http_client)
                .with_headers(headers)
                .build()
                .map_err(|error| TelemetryError {
                    signal: "metric",
                    message: error.to_string(),
                })?;
            let interval =
                Duration::try_from_secs_f64(settings.metrics_interval_secs).unwrap_or(Duration::from_secs(60));
            let reader = PeriodicReader::builder(metric_exporter).with_interval(interval).build();
            let meter_provider = SdkMeterProvider::builder()
                .with_reader(reader)
                .with_resource(resource)
                .build();

            let tracer = tracer_provider.tracer(SCOPE);
            Ok(Some((
                Self {
                    endpoint: base.to_owned(),
                    tracer_provider,
                    meter_provider,
                },
                tracer,
            )))
        }

        /// A [`metrics`] recorder forwarding to this export's meter.
        pub fn recorder(&self) -> OtelRecorder {
            OtelRecorder::new(self.meter_provider.meter(SCOPE))
        }

        /// Flushes and stops both exports (blocks until they are sent or time
        /// out). Errors are reported on stderr: the command's result stands.
        pub fn shutdown(self) {
            let endpoint = &self.endpoint;
            if let Err(error) = self.tracer_provider.shutdown() {
                eprintln!("warning: telemetry: the last spans may not have reached {endpoint}: {error}");
            }
            if let Err(error) = self.meter_provider.shutdown() {
                eprintln!("warning: telemetry: the metrics may not have reached {endpoint}: {error}");
            }
        }
    }

    /// How long one export may take.
    const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

    /// The exporters' HTTP client: like the providers', it follows redirects
    /// only within the collector's origin, so the export headers (API keys,
    /// and `$OTEL_EXPORTER_OTLP_HEADERS`) never reach another host. Build it
    /// outside any async runtime (the binary does, before starting one).
    fn export_client() -> reqwest::Result<reqwest::blocking::Client> {
        reqwest::blocking::Client::builder()
            .redirect(agent_http::same_origin_only())
            .timeout(EXPORT_TIMEOUT)
            .build()
    }

    /// A span exporter that exports [`FINISH_REASONS`] as a string array.
    #[derive(Debug)]
    struct GenAiSpans<E>(E);

    impl<E: SpanExporter> SpanExporter for GenAiSpans<E> {
        fn export(&self, mut batch: Vec<SpanData>) -> impl std::future::Future<Output = OTelSdkResult> + Send {
            for span in &mut batch {
                for attribute in &mut span.attributes {
                    if attribute.key.as_str() == FINISH_REASONS
                        && let Value::String(reasons) = &attribute.value
                    {
                        attribute.value = finish_reasons_array(reasons.as_str());
                    }
                }
            }
            self.0.export(batch)
        }

        fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
            self.0.shutdown_with_timeout(timeout)
        }

        fn force_flush(&self) -> OTelSdkResult {
            self.0.force_flush()
        }

        fn set_resource(&mut self, resource: &Resource) {
            self.0.set_resource(resource);
        }
    }

    /// `"stop"` → `["stop"]`, `"stop,length"` → `["stop", "length"]`.
    fn finish_reasons_array(reasons: &str) -> Value {
        Value::Array(Array::String(
            reasons
                .split(',')
                .map(str::trim)
                .filter(|reason| !reason.is_empty())
                .map(|reason| StringValue::from(reason.to_owned()))
                .collect(),
        ))
    }

    /// A metric's unit and description, as given to `describe_*`.
    type Described = (Option<Unit>, SharedString);

    /// A [`metrics::Recorder`] that records into an OpenTelemetry [`Meter`]:
    /// counters as `u64` counters, gauges as `f64` gauges, histograms as `f64`
    /// histograms, labels as attributes.
    #[derive(Debug, Clone)]
    pub struct OtelRecorder {
        meter: Meter,
        descriptions: Arc<Mutex<HashMap<KeyName, Described>>>,
    }

    impl OtelRecorder {
        /// A recorder over `meter`.
        pub fn new(meter: Meter) -> Self {
            Self {
                meter,
                descriptions: Arc::default(),
            }
        }

        fn describe(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
            self.descriptions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key, (unit, description));
        }

        /// The unit (UCUM) and description of `name`: the conventions' for the
        /// GenAI metrics, else what was described.
        fn unit_and_description(&self, name: &str) -> (Option<String>, Option<String>) {
            match name {
                "gen_ai.client.token.usage" => (
                    Some("{token}".to_owned()),
                    Some("Number of input and output tokens used".to_owned()),
                ),
                "gen_ai.client.operation.duration" => {
                    (Some("s".to_owned()), Some("GenAI operation duration".to_owned()))
                }
                _ => {
                    let descriptions = self.descriptions.lock().unwrap_or_else(PoisonError::into_inner);
                    descriptions.get(name).map_or((None, None), |(unit, description)| {
                        (unit.map(|unit| ucum(unit).to_owned()), Some(description.to_string()))
                    })
                }
            }
        }
    }

    /// The UCUM code OpenTelemetry expects for a `metrics` unit.
    fn ucum(unit: Unit) -> &'static str {
        match unit {
            Unit::Count => "1",
            Unit::Percent => "%",
            Unit::Seconds => "s",
            Unit::Milliseconds => "ms",
            Unit::Microseconds => "us",
            Unit::Nanoseconds => "ns",
            Unit::Bytes => "By",
            other => other.as_canonical_label(),
        }
    }

    fn labels(key: &Key) -> Vec<KeyValue> {
        key.labels()
            .map(|label| KeyValue::new(label.key().to_owned(), label.value().to_owned()))
            .collect()
    }

    impl metrics::Recorder for OtelRecorder {
        fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
            self.describe(key, unit, description);
        }

        fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
            self.describe(key, unit, description);
        }

        fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
            self.describe(key, unit, description);
        }

        fn register_counter(&self, key: &Key, _metadata: &metrics::Metadata<'_>) -> Counter {
            let name = key.name().to_owned();
            let (unit, description) = self.unit_and_description(&name);
            let mut builder = self.meter.u64_counter(name);
            if let Some(unit) = unit {
                builder = builder.with_unit(unit);
            }
            if let Some(description) = description {
                builder = builder.with_description(description);
            }
            Counter::from_arc(Arc::new(OtelCounter {
                counter: builder.build(),
                labels: labels(key),
                total: AtomicU64::new(0),
            }))
        }

        fn register_gauge(&self, key: &Key, _metadata: &metrics::Metadata<'_>) -> Gauge {
            let name = key.name().to_owned();
            let (unit, description) = self.unit_and_description(&name);
            let mut builder = self.meter.f64_gauge(name);
            if let Some(unit) = unit {
                builder = builder.with_unit(unit);
            }
            if let Some(description) = description {
                builder = builder.with_description(description);
            }
            Gauge::from_arc(Arc::new(OtelGauge {
                gauge: builder.build(),
                labels: labels(key),
                value: AtomicU64::new(0f64.to_bits()),
            }))
        }

        fn register_histogram(&self, key: &Key, _metadata: &metrics::Metadata<'_>) -> Histogram {
            let name = key.name().to_owned();
            let (unit, description) = self.unit_and_description(&name);
            let boundaries = match name.as_str() {
                "gen_ai.client.token.usage" => Some(TOKEN_BOUNDARIES.to_vec()),
                "gen_ai.client.operation.duration" => Some(DURATION_BOUNDARIES.to_vec()),
                _ => None,
            };
            let mut builder = self.meter.f64_histogram(name);
            if let Some(unit) = unit {
                builder = builder.with_unit(unit);
            }
            if let Some(description) = description {
                builder = builder.with_description(description);
            }
            if let Some(boundaries) = boundaries {
                builder = builder.with_boundaries(boundaries);
            }
            Histogram::from_arc(Arc::new(OtelHistogram {
                histogram: builder.build(),
                labels: labels(key),
            }))
        }
    }

    struct OtelCounter {
        counter: opentelemetry::metrics::Counter<u64>,
        labels: Vec<KeyValue>,
        /// The running total, so that `absolute` can add the difference.
        total: AtomicU64,
    }

    impl CounterFn for OtelCounter {
        fn increment(&self, value: u64) {
            self.total.fetch_add(value, Ordering::Relaxed);
            self.counter.add(value, &self.labels);
        }

        fn absolute(&self, value: u64) {
            let previous = self.total.fetch_max(value, Ordering::Relaxed);
            if value > previous {
                self.counter.add(value - previous, &self.labels);
            }
        }
    }

    struct OtelGauge {
        gauge: opentelemetry::metrics::Gauge<f64>,
        labels: Vec<KeyValue>,
        /// The current value's bits, for `increment` and `decrement`.
        value: AtomicU64,
    }

    impl OtelGauge {
        fn update(&self, change: impl Fn(f64) -> f64) {
            let mut current = self.value.load(Ordering::Relaxed);
            loop {
                let next = change(f64::from_bits(current));
                match self
                    .value
                    .compare_exchange_weak(current, next.to_bits(), Ordering::AcqRel, Ordering::Relaxed)
                {
                    Ok(_) => {
                        self.gauge.record(next, &self.labels);
                        return;
                    }
                    Err(actual) => current = actual,
                }
            }
        }
    }

    impl GaugeFn for OtelGauge {
        fn increment(&self, value: f64) {
            self.update(|current| current + value);
        }

        fn decrement(&self, value: f64) {
            self.update(|current| current - value);
        }

        fn set(&self, value: f64) {
            self.update(|_| value);
        }
    }

    struct OtelHistogram {
        histogram: opentelemetry::metrics::Histogram<f64>,
        labels: Vec<KeyValue>,
    }

    impl HistogramFn for OtelHistogram {
        fn record(&self, value: f64) {
            self.histogram.record(value, &self.labels);
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn finish_reasons_become_a_string_array() {
            assert_eq!(
                finish_reasons_array("stop"),
                Value::Array(Array::String(vec![StringValue::from("stop")]))
            );
            assert_eq!(
                finish_reasons_array("tool_calls, length"),
                Value::Array(Array::String(vec![
                    StringValue::from("tool_calls"),
                    StringValue::from("length")
                ]))
            );
        }

        #[test]
        fn no_endpoint_starts_nothing() {
            let started = Telemetry::start(&TelemetryConfig::default()).expect("no error");
            assert!(started.is_none());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_must_be_http_urls_with_a_host() {
        for good in [
            "http://localhost:4318",
            "https://collector.example/otlp",
            "http://[::1]:4318",
            "http://u:p@h",
        ] {
            assert!(is_http_url(good), "{good}");
        }
        for bad in [
            "localhost:4318",
            "ftp://collector",
            "http://",
            "http://:80",
            "http://a b",
            "https:///x",
        ] {
            assert!(!is_http_url(bad), "{bad}");
        }
        let config = TelemetryConfig {
            otlp_endpoint: Some("localhost:4318".to_owned()),
            ..TelemetryConfig::default()
        };
        assert_eq!(config.validate().map_err(|e| e.key), Err("otlp_endpoint".to_owned()));
        assert_eq!(TelemetryConfig::default().validate(), Ok(()));
    }
}
