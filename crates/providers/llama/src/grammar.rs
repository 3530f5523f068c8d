//! The constrained-decoding grammar for tool calls.

use agent_core::{LlmError, ToolDefinition};
use serde_json::{Value, json};

/// A GBNF grammar for one or more `<tool_call>{"name": .., "arguments": ..}</tool_call>`
/// blocks whose arguments satisfy the tools' JSON schemas (llama.cpp's own
/// `json_schema_to_grammar` does the schema part).
pub(crate) fn tool_call_grammar(tools: &[ToolDefinition]) -> Result<String, LlmError> {
    let alternatives: Vec<Value> = tools
        .iter()
        .map(|tool| {
            // A schema with references cannot be nested under another root;
            // such a tool gets any object as arguments.
            let arguments = if tool.input_schema.to_string().contains("\"$ref\"") {
                json!({"type": "object"})
            } else {
                let mut schema = (*tool.input_schema).clone();
                if let Some(object) = schema.as_object_mut() {
                    object.remove("$schema");
                    object.remove("title");
                }
                schema
            };
            json!({
                "type": "object",
                "properties": {"name": {"const": tool.name}, "arguments": arguments},
                "required": ["name", "arguments"]
            })
        })
        .collect();
    let schema = json!({"anyOf": alternatives});
    let json_grammar = llama_cpp_2::json_schema_to_grammar(&schema.to_string()).map_err(|error| {
        LlmError::invalid_request(format!("could not build a grammar from the tool schemas: {error}"))
    })?;
    let body = json_grammar.replacen("root ::=", "tool-call-json ::=", 1);
    Ok(format!(
        "root ::= tool-block (\"\\n\" tool-block)*\ntool-block ::= \"<tool_call>\" \"\\n\"? tool-call-json \"\\n\"? \"</tool_call>\"\n{body}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar_wraps_every_tool_schema_in_call_blocks() {
        let tools = [
            ToolDefinition::new(
                "get_weather",
                "Weather.",
                json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}),
            ),
            ToolDefinition::new("clock", "Time.", json!({"type": "object", "properties": {}})),
        ];
        let grammar = tool_call_grammar(&tools).expect("grammar");
        assert!(grammar.starts_with("root ::= tool-block"), "{grammar}");
        assert!(grammar.contains("\"<tool_call>\""));
        assert!(grammar.contains("tool-call-json ::="));
        assert!(
            grammar.contains("get_weather") && grammar.contains("clock"),
            "{grammar}"
        );
        assert_eq!(grammar.matches("root ::=").count(), 1);
    }
}
