//! The constrained-decoding grammars: tool calls, and a reply in a
//! requested JSON-schema format.

use agent_core::{LlmError, ResponseFormat, ToolDefinition};
use serde_json::{Value, json};

/// A GBNF grammar for one or more `<tool_call>{"name": .., "arguments": ..}</tool_call>`
/// blocks whose arguments satisfy the tools' JSON schemas (llama.cpp's own
/// `json_schema_to_grammar` does the schema part).
pub(crate) fn tool_call_grammar(tools: &[ToolDefinition]) -> Result<String, LlmError> {
    let schema = json!({"anyOf": call_alternatives(tools)});
    let json_grammar = llama_cpp_2::json_schema_to_grammar(&schema.to_string()).map_err(|error| {
        LlmError::invalid_request(format!("could not build a grammar from the tool schemas: {error}"))
    })?;
    let body = json_grammar.replacen("root ::=", "tool-call-json ::=", 1);
    Ok(format!("{FORMS}{body}"))
}

/// A GBNF grammar for a reply that is either tool calls (as
/// [`tool_call_grammar`]) or one JSON value satisfying `format`'s schema:
/// for a request in a response format whose model may still call tools.
pub(crate) fn tool_call_or_answer_grammar(
    tools: &[ToolDefinition],
    format: &ResponseFormat,
) -> Result<String, LlmError> {
    let failed = |error: String| {
        LlmError::invalid_request(format!(
            "could not build a grammar from the tool schemas and the response format `{}`: {error}",
            format.name
        ))
    };
    // The answer's definitions move to the root, where its `$ref`s point.
    let mut answer = format.schema.clone();
    let mut schema = json!({"anyOf": [{"anyOf": call_alternatives(tools)}]});
    if let Some(object) = answer.as_object_mut() {
        object.remove("$schema");
        for key in ["$defs", "definitions"] {
            if let Some(definitions) = object.remove(key) {
                schema[key] = definitions;
            }
        }
    }
    if let Some(alternatives) = schema["anyOf"].as_array_mut() {
        alternatives.push(answer);
    }
    let json_grammar = llama_cpp_2::json_schema_to_grammar(&schema.to_string()).map_err(|e| failed(e.to_string()))?;
    // llama.cpp names the two alternatives of the root `alternative-0` and `alternative-1`.
    if !json_grammar.contains("\nalternative-0 ::=") && !json_grammar.starts_with("alternative-0 ::=")
        || !json_grammar.contains("\nalternative-1 ::=")
    {
        return Err(failed("unexpected rule names in the generated grammar".to_owned()));
    }
    let mut body = String::new();
    for line in json_grammar.lines().filter(|line| !line.starts_with("root ::=")) {
        body.push_str(line);
        body.push('\n');
    }
    let forms = FORMS.replacen("root ::= calls", "root ::= calls | answer-json", 1);
    Ok(format!(
        "{forms}tool-call-json ::= alternative-0\nanswer-json ::= alternative-1\n{body}"
    ))
}

/// One schema per tool: a call object naming it, with its arguments.
fn call_alternatives(tools: &[ToolDefinition]) -> Vec<Value> {
    tools
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
        .collect()
}

/// A GBNF grammar for a reply that is one JSON value satisfying
/// `format`'s schema (llama.cpp's `json_schema_to_grammar`; local `$ref`s
/// such as schemars' `#/$defs/..` are resolved by it). Applied from the
/// first token, so the whole reply is that value.
pub(crate) fn response_format_grammar(format: &ResponseFormat) -> Result<String, LlmError> {
    let mut schema = format.schema.clone();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
    }
    llama_cpp_2::json_schema_to_grammar(&schema.to_string()).map_err(|error| {
        LlmError::invalid_request(format!(
            "could not build a grammar from the response format `{}`: {error}",
            format.name
        ))
    })
}

/// The three forms a call is written in, each a sequence of calls:
/// `<tool_call>` blocks (the chat template's form), a ```json fence, and
/// bare JSON objects (the forms small models actually write); in a fence
/// or bare, several calls may also come as a JSON array, the way small
/// models write parallel calls. A reply may end in a little whitespace:
/// models end a call with a line break before they stop, which must not
/// commit them to another call.
const FORMS: &str = r#"root ::= calls
calls ::= (tagged | fenced | bare) gap
tagged ::= tool-block ("\n" tool-block)*
tool-block ::= "<tool_call>" "\n"? tool-call-json "\n"? "</tool_call>"
fenced ::= "```json" gap (call-array | tool-call-json (gap tool-call-json)*) gap "```"
bare ::= call-array | tool-call-json ("\n" tool-call-json)*
call-array ::= "[" indent tool-call-json (indent "," indent tool-call-json)* indent "]"
gap ::= [ \t\n]{0,4}
indent ::= [ \t\n]{0,12}
"#;

/// The grammar of a reply that may not call a tool (`tool_choice =
/// none`): any text that does not open with a JSON object or array, bare
/// or in a code fence. With the call token banned, small models write the call in
/// one of those forms instead, which would reach the user as text.
pub(crate) const NO_CALL_GRAMMAR: &str = r#"root ::= [ \t\n]* (opening [^\x00]*)?
opening ::= [^{[` \t\n] | "`" [^`] | "``" [^`] | "```" [a-zA-Z0-9_+-]* [ \t]* "\n" [ \t\n]* [^{[ \t\n]
"#;

/// Where a lazy grammar starts: the text from a pattern's first capture
/// group on is what the grammar must accept. Patterns wrapped in `^...$`
/// match the whole output so far (a call at the very start); the others
/// anywhere in it.
pub(crate) const TRIGGER_PATTERNS: [&str; 3] = [
    "(<tool_call>)",
    r#"(```json\s*(?:\[\s*)?\{\s*"name")"#,
    r#"^\s*((?:\[\s*)?\{\s*"name")[\s\S]*$"#,
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
        assert!(grammar.starts_with("root ::= calls\n"), "{grammar}");
        assert!(grammar.contains("\"<tool_call>\""));
        assert!(grammar.contains("tool-call-json ::="));
        assert!(
            grammar.contains("get_weather") && grammar.contains("clock"),
            "{grammar}"
        );
        assert_eq!(grammar.matches("root ::=").count(), 1);
    }

    fn city_format() -> ResponseFormat {
        // The shape schemars derives: the nested object behind a `$ref`.
        ResponseFormat {
            name: "CityReport".into(),
            schema: json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": "CityReport",
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "climate": {"type": "string", "enum": ["cold", "mild", "hot"]},
                    "location": {"$ref": "#/$defs/Location"}
                },
                "required": ["name", "climate", "location"],
                "$defs": {
                    "Location": {
                        "type": "object",
                        "properties": {"country": {"type": "string"}, "coastal": {"type": "boolean"}},
                        "required": ["country", "coastal"]
                    }
                }
            }),
            strict: false,
        }
    }

    #[test]
    fn the_response_grammar_follows_the_schema_with_its_refs_and_enums() {
        let grammar = response_format_grammar(&city_format()).expect("grammar");
        assert_eq!(grammar.matches("root ::=").count(), 1, "{grammar}");
        // Every property name, every enum value and the referenced object's
        // fields are literals of the grammar.
        for literal in ["name", "climate", "location", "country", "coastal"] {
            assert!(grammar.contains(&format!("\\\"{literal}\\\"")), "{literal}: {grammar}");
        }
        for value in ["cold", "mild", "hot"] {
            assert!(grammar.contains(value), "{value}: {grammar}");
        }
        assert!(!grammar.contains("tool_call"), "{grammar}");
    }

    #[test]
    fn a_reply_may_be_a_call_or_the_answer_in_its_format() {
        let tools = [ToolDefinition::new(
            "get_weather",
            "Weather.",
            json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}),
        )];
        let grammar = tool_call_or_answer_grammar(&tools, &city_format()).expect("grammar");
        assert!(grammar.starts_with("root ::= calls | answer-json\n"), "{grammar}");
        assert_eq!(grammar.matches("root ::=").count(), 1, "{grammar}");
        assert!(grammar.contains("tool-call-json ::= alternative-0\n"), "{grammar}");
        assert!(grammar.contains("answer-json ::= alternative-1\n"), "{grammar}");
        // The call names its tool; the answer's `$ref` was resolved.
        assert!(
            grammar.contains("get_weather") && grammar.contains("coastal"),
            "{grammar}"
        );
        for value in ["cold", "mild", "hot"] {
            assert!(grammar.contains(value), "{value}: {grammar}");
        }
    }

    #[test]
    fn an_unusable_schema_is_an_invalid_request() {
        let format = ResponseFormat {
            name: "broken".into(),
            schema: json!({"$ref": "#/$defs/Missing"}),
            strict: false,
        };
        let error = response_format_grammar(&format).expect_err("unresolvable ref");
        assert!(error.message.contains("`broken`"), "{error}");
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
        // Several calls as an array, bare or fenced.
        assert_eq!(triggered("[{\"name\"").as_deref(), Some("[{\"name\""));
        assert_eq!(
            triggered("```json\n[\n  {\"name\"").as_deref(),
            Some("```json\n[\n  {\"name\"")
        );
        // Prose, other JSON and a bare object later in the text stay free.
        assert_eq!(triggered("The weather in Tokyo is mild."), None);
        assert_eq!(triggered("```json\n{\"temperature\": 12}"), None);
        assert_eq!(triggered("As JSON: {\"name\": \"x\"}"), None);
    }
}
