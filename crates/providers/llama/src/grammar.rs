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
    Ok(format!("{FORMS}{body}"))
}

/// The three forms a call is written in, each a sequence of calls:
/// `<tool_call>` blocks (the chat template's form), a ```json fence, and
/// bare JSON objects (the forms small models actually write).
const FORMS: &str = r#"root ::= tagged | fenced | bare
tagged ::= tool-block ("\n" tool-block)*
tool-block ::= "<tool_call>" "\n"? tool-call-json "\n"? "</tool_call>"
fenced ::= "```json" gap tool-call-json (gap tool-call-json)* gap "```"
bare ::= tool-call-json ("\n" tool-call-json)*
gap ::= [ \t\n]{0,4}
"#;

/// Where a lazy grammar starts: the text from a pattern's first capture
/// group on is what the grammar must accept. Patterns wrapped in `^...$`
/// match the whole output so far (a call at the very start); the others
/// anywhere in it.
pub(crate) const TRIGGER_PATTERNS: [&str; 3] = [
    "(<tool_call>)",
    r#"(```json\s*\{\s*"name")"#,
    r#"^\s*(\{\s*"name")[\s\S]*$"#,
];

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
        assert!(grammar.starts_with("root ::= tagged | fenced | bare"), "{grammar}");
        assert!(grammar.contains("\"<tool_call>\""));
        assert!(grammar.contains("tool-call-json ::="));
        assert!(
            grammar.contains("get_weather") && grammar.contains("clock"),
            "{grammar}"
        );
        assert_eq!(grammar.matches("root ::=").count(), 1);
    }

    /// The text a pattern hands to the grammar, by llama.cpp's rule: from
    /// the first capture group on, the `^...$` form matching the whole text.
    fn triggered(text: &str) -> Option<String> {
        TRIGGER_PATTERNS.iter().find_map(|pattern| {
            let regex = regex::Regex::new(pattern).expect("a valid pattern");
            let captures = regex.captures(text)?;
            if pattern.starts_with('^') && captures.get(0)?.as_str().len() != text.len() {
                return None;
            }
            Some(text[captures.get(1)?.start()..].to_owned())
        })
    }

    #[test]
    fn the_grammar_starts_on_the_forms_small_models_write() {
        assert_eq!(
            triggered("Sure. <tool_call>{\"name\"").as_deref(),
            Some("<tool_call>{\"name\"")
        );
        assert_eq!(
            triggered("Here:\n```json\n{\"name\"").as_deref(),
            Some("```json\n{\"name\"")
        );
        assert_eq!(triggered("\n { \"name\"").as_deref(), Some("{ \"name\""));
        // Prose, other JSON and a bare object later in the text stay free.
        assert_eq!(triggered("The weather in Tokyo is mild."), None);
        assert_eq!(triggered("```json\n{\"temperature\": 12}"), None);
        assert_eq!(triggered("As JSON: {\"name\": \"x\"}"), None);
    }
}
