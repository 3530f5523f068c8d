//! The one path every tool call takes (a template method around the
//! provider's code): resolve, check roles, validate, run guarded, record.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{ToolContext, ToolError, ToolExecution, ToolOutput, ToolProvider};
use futures::FutureExt as _;
use serde_json::Value;
use tracing::Instrument as _;

use crate::registry::{Resolved, ToolBox, ToolEntry};
use crate::telemetry;

/// Runs `tool` through `registry`. Never panics: provider panics become
/// [`ToolError::Panicked`], and every outcome is recorded.
pub(crate) async fn execute(registry: &ToolBox, tool: &str, arguments: &Value, context: &ToolContext) -> ToolExecution {
    let started = Instant::now();
    let span = telemetry::tool_span(tool, context.call_id.as_deref());
    let recorded = span.clone();
    async move {
        let (outcome, provider, attributes, keys) = match registry.resolve(tool) {
            Resolved::Found {
                provider,
                provider_name,
                tool: entry,
            } => {
                telemetry::record_resolved(&recorded, &provider_name, &entry.definition.description);
                let call = Call {
                    provider: &provider,
                    provider_name: &provider_name,
                    tool,
                    entry: &entry,
                    arguments,
                    context,
                    timeout: registry.timeout(),
                };
                let (outcome, attributes) = call.run().await;
                (outcome, Some(provider_name), attributes, MetricKeys::Registered(entry))
            }
            Resolved::Disabled => (
                Err(ToolError::Disabled { name: tool.to_owned() }),
                None,
                Vec::new(),
                MetricKeys::Made(telemetry::ToolMetricKeys::unregistered(tool, true)),
            ),
            Resolved::Unknown { available } => (
                Err(ToolError::UnknownTool {
                    name: tool.to_owned(),
                    available,
                }),
                None,
                Vec::new(),
                MetricKeys::Made(telemetry::ToolMetricKeys::unregistered(tool, false)),
            ),
        };
        let duration = started.elapsed();
        telemetry::completed(&recorded, tool, &outcome, duration, &attributes, keys.get());
        ToolExecution {
            outcome,
            duration,
            provider,
            attributes,
        }
    }
    .instrument(span)
    .await
}

/// The metric keys a call is recorded under: its tool's, made at
/// registration, or made for a call no enabled provider answered.
enum MetricKeys {
    Registered(Arc<ToolEntry>),
    Made(telemetry::ToolMetricKeys),
}

impl MetricKeys {
    fn get(&self) -> &telemetry::ToolMetricKeys {
        match self {
            Self::Registered(entry) => &entry.metric_keys,
            Self::Made(keys) => keys,
        }
    }
}

/// A call to a tool an enabled provider has.
struct Call<'a> {
    provider: &'a Arc<dyn ToolProvider>,
    provider_name: &'a str,
    tool: &'a str,
    entry: &'a ToolEntry,
    arguments: &'a Value,
    context: &'a ToolContext,
    timeout: Option<Duration>,
}

impl Call<'_> {
    /// Checks, runs and asks the hooks; returns the outcome and the hooks'
    /// attributes (span hook first, then completion hook).
    ///
    /// The span hook runs only once the arguments are valid (so it may rely
    /// on their shape); the completion hook sees every outcome, rejections
    /// included.
    async fn run(&self) -> (Result<ToolOutput, ToolError>, Vec<(String, Value)>) {
        let mut attributes = Vec::new();
        let outcome = if let Err(rejection) = self.check() {
            Err(rejection)
        } else {
            attributes = self.hook("span_attributes_hook", || {
                self.provider.span_attributes_hook(self.tool, self.arguments)
            });
            telemetry::started(self.tool, self.provider_name, &attributes);
            self.guarded().await
        };
        let completion = self.hook("completion_attributes_hook", || {
            self.provider.completion_attributes_hook(self.tool, &outcome)
        });
        attributes.extend(completion);
        (outcome, attributes)
    }

    /// Roles first (an unauthorised caller learns nothing about the
    /// schema), then the arguments.
    fn check(&self) -> Result<(), ToolError> {
        let required = std::panic::catch_unwind(AssertUnwindSafe(|| self.provider.required_roles(self.tool))).map_err(
            |payload| ToolError::Panicked {
                tool: self.tool.to_owned(),
                message: format!("required_roles panicked: {}", panic_message(payload.as_ref())),
            },
        )?;
        let missing_roles = self.context.missing_roles(&required);
        if !missing_roles.is_empty() {
            return Err(ToolError::PermissionDenied {
                tool: self.tool.to_owned(),
                missing_roles,
            });
        }
        match &self.entry.validator {
            Ok(validator) => validator.validate(self.tool, self.arguments),
            Err(error) => Err(ToolError::failed(format!(
                "tool `{}` cannot be used: its input schema is invalid ({error}); the tool did not run. \
                 This is a defect in the tool, not in the arguments",
                self.tool
            ))),
        }
    }

    /// Runs the provider's code, catching panics and honouring
    /// cancellation and the timeout.
    async fn guarded(&self) -> Result<ToolOutput, ToolError> {
        if self.context.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        // The provider's future is created inside the guarded block, so a
        // panic while creating it is caught as well.
        let run = AssertUnwindSafe(async { self.provider.execute(self.tool, self.arguments, self.context).await })
            .catch_unwind();
        let limited = async {
            match self.timeout {
                None => Ok(run.await),
                Some(after) => tokio::time::timeout(after, run).await.map_err(|_| after),
            }
        };
        tokio::select! {
            biased;
            () = self.context.cancel.cancelled() => Err(ToolError::Cancelled),
            result = limited => match result {
                Ok(Ok(outcome)) => outcome,
                Ok(Err(payload)) => Err(ToolError::Panicked {
                    tool: self.tool.to_owned(),
                    message: panic_message(payload.as_ref()),
                }),
                Err(after) => Err(ToolError::TimedOut {
                    tool: self.tool.to_owned(),
                    after,
                }),
            },
        }
    }

    /// Calls a telemetry hook; a panicking hook is logged and adds nothing,
    /// it does not fail the call.
    fn hook(&self, name: &str, hook: impl FnOnce() -> Vec<(String, Value)>) -> Vec<(String, Value)> {
        std::panic::catch_unwind(AssertUnwindSafe(hook)).unwrap_or_else(|payload| {
            tracing::error!(
                target: telemetry::EVENT_TARGET,
                hook = name,
                gen_ai.tool.name = %self.tool,
                agentry.tool.provider = %self.provider_name,
                panic = %panic_message(payload.as_ref()),
                "tool provider hook panicked; its attributes are dropped"
            );
            Vec::new()
        })
    }
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "the tool panicked with a non-text payload".to_owned()
    }
}
