//! Tool lists written for people (and models) to read, for the `tools` and
//! `tool_names` variables of the built-in templates.

use std::fmt::Write as _;

use agent_core::ToolDefinition;
use serde_json::Value;

/// Describes tools as a Markdown list: name, description, and each argument
/// with its type (allowed values for enums), whether it is required, its
/// description and its default.
///
/// ```
/// use agent_core::ToolDefinition;
/// use serde_json::json;
///
/// let tools = [ToolDefinition::new(
///     "calculator",
///     "Evaluate an arithmetic expression.",
///     json!({
///         "type": "object",
///         "properties": {"expression": {"type": "string", "description": "e.g. 2 * (3 + 4)"}},
///         "required": ["expression"]
///     }),
/// )];
/// assert_eq!(
///     agent_prompts::render_tool_list(&tools),
///     "- calculator: Evaluate an arithmetic expression.\n  Arguments:\n    - expression (string, required): e.g. 2 * (3 + 4)"
/// );
/// ```
pub fn render_tool_list(tools: &[ToolDefinition]) -> String {
    let mut out = String::new();
    for (i, tool) in tools.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let description = tool.description.trim();
        if description.is_empty() {
            let _ = write!(out, "- {}", tool.name);
        } else {
            let _ = write!(out, "- {}: {}", tool.name, one_line(description));
        }
        let properties = tool.input_schema.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = tool
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match properties {
            Some(properties) if !properties.is_empty() => {
                out.push_str("\n  Arguments:");
                for (name, schema) in properties {
                    let requirement = if required.contains(&name.as_str()) {
                        "required"
                    } else {
                        "optional"
                    };
                    let _ = write!(out, "\n    - {name} ({}, {requirement})", type_name(schema));
                    if let Some(description) = schema.get("description").and_then(Value::as_str) {
                        let description = description.trim();
                        if !description.is_empty() {
                            let _ = write!(out, ": {}", one_line(description));
                        }
                    }
                    if let Some(default) = schema.get("default") {
                        let _ = write!(out, " (default: {default})");
                    }
                }
            }
            _ => out.push_str("\n  Arguments: none"),
        }
    }
    out
}

/// The tool names, comma-separated (`calculator, weather`).
pub fn tool_names(tools: &[ToolDefinition]) -> String {
    tools
        .iter()
        .map(|tool| tool.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Collapses line breaks so that a description stays on its list item.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A short human name for a JSON Schema's type.
fn type_name(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let values: Vec<String> = values.iter().map(Value::to_string).collect();
        return format!("one of {}", values.join(", "));
    }
    match schema.get("type") {
        Some(Value::String(kind)) if kind == "array" => match schema.get("items") {
            Some(items) => format!("array of {}", type_name(items)),
            None => "array".to_owned(),
        },
        Some(Value::String(kind)) => kind.clone(),
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" or "),
        _ => {
            for key in ["anyOf", "oneOf"] {
                if let Some(options) = schema.get(key).and_then(Value::as_array) {
                    return options.iter().map(type_name).collect::<Vec<_>>().join(" or ");
                }
            }
            "any".to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_types_enums_and_missing_arguments() {
        let tools = [
            ToolDefinition::new(
                "search",
                "Search\nthe web.",
                json!({"type": "object", "properties": {
                    "query": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "mode": {"enum": ["fast", "deep"]},
                    "limit": {"type": ["integer", "null"]},
                    "x": {"anyOf": [{"type": "number"}, {"type": "string"}]}
                }, "required": ["query"]}),
            ),
            ToolDefinition::new("now", "", json!({"type": "object"})),
        ];
        let expected = "- search: Search the web.\n  Arguments:\n    - query (string, required)\n    - tags (array of string, optional)\n    - mode (one of \"fast\", \"deep\", optional)\n    - limit (integer or null, optional)\n    - x (number or string, optional)\n- now\n  Arguments: none";
        assert_eq!(render_tool_list(&tools), expected);
        assert_eq!(tool_names(&tools), "search, now");
    }

    #[test]
    fn defaults_are_shown() {
        let tools = [ToolDefinition::new(
            "get_weather",
            "Weather.",
            serde_json::json!({
                "type": "object",
                "properties": {"units": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius", "description": "Unit."}}
            }),
        )];
        assert_eq!(
            render_tool_list(&tools),
            "- get_weather: Weather.\n  Arguments:\n    - units (one of \"celsius\", \"fahrenheit\", optional): Unit. (default: \"celsius\")"
        );
    }
}
