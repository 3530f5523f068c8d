//! Checking that tools refuse arguments their schema does not name.

use agent_core::{ToolContext, ToolError, ToolRegistry};
use serde_json::Value;

/// Asserts that every tool of `registry` has a closed schema
/// (`"additionalProperties": false`) and that each `(tool, arguments,
/// invented)` call, valid but for the property `invented`, is refused by
/// schema validation naming it, so the tool never ran.
///
/// # Panics
///
/// When a schema is open or a call is not refused that way.
pub async fn assert_invented_arguments_refused(registry: &dyn ToolRegistry, calls: &[(&str, Value, &str)]) {
    for definition in registry.definitions() {
        assert_eq!(
            definition.input_schema["additionalProperties"],
            Value::Bool(false),
            "the schema of {} is open",
            definition.name
        );
    }
    for (tool, arguments, invented) in calls {
        let run = registry.execute(tool, arguments, &ToolContext::new()).await;
        match run.outcome {
            Err(ToolError::InvalidArguments { tool: named, problems }) => {
                assert_eq!(named, *tool);
                assert_eq!(problems, [format!("unexpected argument \"{invented}\"")]);
            }
            other => panic!("{tool}: expected invalid arguments, got {other:?}"),
        }
    }
}
