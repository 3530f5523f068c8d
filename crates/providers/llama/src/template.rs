//! Rendering a model's own chat template (Jinja, from its GGUF metadata)
//! with the request's messages and tools, the way Hugging Face's
//! `apply_chat_template` does.

use std::fmt::Write as _;

use agent_core::{ChatRequest, LlmError, Message};

use crate::media::{Place, with_text_files};
use minijinja::{Environment, Error, ErrorKind, Value};
use serde::Serialize;
use serde_json::{Value as Json, json};

use crate::special::{self, ControlTexts};

/// A compiled chat template.
#[derive(Debug)]
pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
    controls: ControlTexts,
}

const TEMPLATE_NAME: &str = "chat";

impl ChatTemplate {
    /// Compiles `source`. `bos_token` and `eos_token` are the model's, as the
    /// template expects them.
    pub fn new(source: &str, bos_token: impl Into<String>, eos_token: impl Into<String>) -> Result<Self, LlmError> {
        let mut env = Environment::new();
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_filter("tojson", tojson);
        env.add_function("raise_exception", raise_exception);
        env.add_template_owned(TEMPLATE_NAME, source.to_owned())
            .map_err(|error| {
                LlmError::invalid_request(format!("the model's chat template does not compile: {error}"))
            })?;
        Ok(Self {
            env,
            bos_token: bos_token.into(),
            eos_token: eos_token.into(),
            controls: ControlTexts::default(),
        })
    }

    /// Guards the model's control-token texts in messages and tools: see
    /// [`special`].
    pub(crate) fn guarding(mut self, controls: ControlTexts) -> Self {
        self.controls = controls;
        self
    }

    /// The prompt for `request`, ending with the opening of the assistant's turn.
    pub fn render(&self, request: &ChatRequest) -> Result<String, LlmError> {
        self.render_fenced(request).map(|prompt| special::unfenced(&prompt))
    }

    /// The prompt with control-token texts from messages and tools fenced,
    /// for [`special::tokenize`].
    pub(crate) fn render_fenced(&self, request: &ChatRequest) -> Result<String, LlmError> {
        let template = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(|error| LlmError::invalid_request(error.to_string()))?;
        let mut tools: Vec<Json> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name, "description": tool.description, "parameters": tool.input_schema
                }})
            })
            .collect();
        let mut messages = messages(request)?;
        for value in messages.iter_mut().chain(tools.iter_mut()) {
            self.controls.fence_json(value);
        }
        let context = Context {
            messages,
            tools: (!tools.is_empty()).then_some(tools),
            add_generation_prompt: true,
            bos_token: &self.bos_token,
            eos_token: &self.eos_token,
        };
        template.render(Value::from_serialize(&context)).map_err(|error| {
            LlmError::invalid_request(format!("rendering the model's chat template failed: {error:#}"))
        })
    }
}

#[derive(Serialize)]
struct Context<'a> {
    messages: Vec<Json>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<Json>>,
    add_generation_prompt: bool,
    bos_token: &'a str,
    eos_token: &'a str,
}

/// The messages in the Hugging Face chat format: tool-call arguments as
/// objects, tool results as `tool` messages, text files inlined after the
/// text of their message (see [`crate::media`]; any other attachment is
/// refused).
fn messages(request: &ChatRequest) -> Result<Vec<Json>, LlmError> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = &request.system {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in &request.messages {
        out.push(match message {
            Message::System { content } => json!({"role": "system", "content": content}),
            Message::User { content, attachments } => {
                json!({"role": "user", "content": with_text_files(content, attachments, Place::UserMessage)?})
            }
            Message::Assistant(assistant) if assistant.tool_calls.is_empty() => {
                json!({"role": "assistant", "content": assistant.content})
            }
            Message::Assistant(assistant) => {
                let calls: Vec<Json> = assistant
                    .tool_calls
                    .iter()
                    .map(|call| {
                        let arguments = match &call.raw_arguments {
                            Some(raw) => Json::String(raw.clone()),
                            None => call.arguments.clone(),
                        };
                        json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}})
                    })
                    .collect();
                let content = (!assistant.content.is_empty()).then(|| assistant.content.clone());
                json!({"role": "assistant", "content": content, "tool_calls": calls})
            }
            Message::Tool(result) => {
                let content = with_text_files(&result.content, &result.attachments, Place::ToolResult)?;
                json!({"role": "tool", "tool_call_id": result.call_id, "name": result.name, "content": content})
            }
        });
    }
    Ok(out)
}

/// Python's `json.dumps` as used by Hugging Face templates: `", "` and
/// `": "` separators, non-ASCII kept, key order kept.
fn tojson(value: &Value, indent: Option<Value>) -> Result<Value, Error> {
    let json = serde_json::to_value(value).map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
    let indent = indent.and_then(|v| usize::try_from(v).ok());
    let mut out = String::new();
    write_python_json(&json, indent, 0, &mut out);
    Ok(Value::from_safe_string(out))
}

fn write_python_json(value: &Json, indent: Option<usize>, depth: usize, out: &mut String) {
    let newline = |out: &mut String, depth: usize| {
        if let Some(width) = indent {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', width * depth));
        }
    };
    let separator = if indent.is_some() { "," } else { ", " };
    match value {
        Json::Object(map) if !map.is_empty() => {
            out.push('{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    out.push_str(separator);
                }
                newline(out, depth + 1);
                let _ = write!(out, "{}: ", Json::String(key.clone()));
                write_python_json(item, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push('}');
        }
        Json::Array(items) if !items.is_empty() => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(separator);
                }
                newline(out, depth + 1);
                write_python_json(item, indent, depth + 1, out);
            }
            newline(out, depth);
            out.push(']');
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

#[cfg(test)]
mod tests {
    use agent_core::{AssistantMessage, ToolCall, ToolDefinition, ToolResult};

    use super::*;

    /// A small ChatML-style template written for this test, exercising the
    /// features real templates use: loops, tools, tool calls, `tojson`,
    /// string methods and `raise_exception`.
    const TEMPLATE: &str = "{%- if tools %}<|system|>{{ messages[0].content if messages[0].role == 'system' else 'Be helpful.' }}\n\
        Tools:{% for tool in tools %}\n{{ tool | tojson }}{% endfor %}<|end|>\n\
        {%- elif messages[0].role == 'system' %}<|system|>{{ messages[0].content }}<|end|>\n{%- endif %}\
        {%- for message in messages %}\
        {%- if message.role == 'user' %}<|user|>{{ message.content.strip() }}<|end|>\n\
        {%- elif message.role == 'assistant' %}<|assistant|>{{ message.content or '' }}\
        {%- for call in message.tool_calls or [] %}<call>{\"name\": \"{{ call.function.name }}\", \"arguments\": {{ call.function.arguments | tojson }}}</call>{%- endfor %}<|end|>\n\
        {%- elif message.role == 'tool' %}<|tool|>{{ message.content }}<|end|>\n\
        {%- elif message.role != 'system' %}{{ raise_exception('unknown role ' ~ message.role) }}{%- endif %}\
        {%- endfor %}{%- if add_generation_prompt %}<|assistant|>{%- endif %}";

    #[test]
    fn renders_tools_calls_and_results_with_python_json() {
        let template = ChatTemplate::new(TEMPLATE, "", "<|end|>").expect("compiles");
        let request = ChatRequest {
            system: Some("You are terse.".into()),
            messages: vec![
                Message::user("  Weather in Zürich?  "),
                Message::Assistant(AssistantMessage::with_tool_calls(
                    "",
                    vec![ToolCall::new(
                        "c1",
                        "get_weather",
                        json!({"location": "Zürich", "units": "celsius"}),
                    )],
                )),
                Message::Tool(ToolResult::success("c1", "get_weather", r#"{"temp":3}"#)),
            ],
            tools: vec![ToolDefinition::new(
                "get_weather",
                "Weather <now>",
                json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}),
            )]
            .into(),
            ..ChatRequest::default()
        };
        let prompt = template.render(&request).expect("renders");
        assert_eq!(
            prompt,
            "<|system|>You are terse.\nTools:\n\
             {\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Weather <now>\", \
             \"parameters\": {\"type\": \"object\", \"properties\": {\"location\": {\"type\": \"string\"}}, \"required\": [\"location\"]}}}<|end|>\
             <|user|>Weather in Zürich?<|end|>\
             <|assistant|><call>{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Zürich\", \"units\": \"celsius\"}}</call><|end|>\
             <|tool|>{\"temp\":3}<|end|><|assistant|>"
        );
    }

    #[test]
    fn template_errors_are_reported_not_panicked() {
        assert!(ChatTemplate::new("{% if %}", "", "").is_err());
        let template = ChatTemplate::new("{{ raise_exception('no tools here') }}", "", "").expect("compiles");
        let error = template.render(&ChatRequest::default()).expect_err("raises");
        assert!(error.message.contains("no tools here"), "{error}");
    }

    #[test]
    fn tojson_with_indent_matches_python() {
        let mut out = String::new();
        write_python_json(&json!({"a": [1, {"b": null}], "c": {}}), Some(2), 0, &mut out);
        assert_eq!(
            out,
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": {}\n}"
        );
    }
}
