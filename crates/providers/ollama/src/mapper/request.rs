//! `ChatRequest` -> `/api/chat` request body.
//!
//! The wire structs borrow from the request; the body is serialised straight
//! into bytes without building a `serde_json::Value`.

use agent_core::{AssistantMessage, ChatRequest, LlmError, Message, ToolCall, ToolDefinition};
use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::media::{ContentWithFiles, Images, Place, check_attachments};
use super::{BodyOptions, KeepAlive, Think};

/// The key under which arguments that are not a JSON object are sent back
/// (Ollama wants an object; the text the model wrote is kept).
pub const RAW_ARGUMENTS_KEY: &str = "_raw_arguments";

/// Serialises `request` as an `/api/chat` body (JSON bytes).
///
/// - the system prompt becomes the first `system` message;
/// - assistant tool calls carry their arguments as a JSON *object*, with
///   `index` inside `function` as Ollama writes it; arguments the model
///   wrote as malformed JSON (or as a non-object) are sent as
///   `{"_raw_arguments": "<the text>"}` so nothing it wrote is lost;
/// - reasoning text of an assistant turn goes back in `thinking`;
/// - tool results are `tool` messages with `tool_name` (Ollama matches them
///   by order and name; it has no call ids); failed ones start with `Error: `;
/// - `tool_choice = none` sends no tools (Ollama has no `tool_choice`), a
///   named tool sends that tool alone, `required` sends them all (Ollama
///   cannot force a call);
/// - `max_tokens`, `temperature`, `stop` and `num_ctx` go in `options`;
///   `response_format` becomes `format` (the JSON schema);
/// - `stream` is always written, because Ollama streams when it is absent;
/// - images of a user message or a tool result go in its `images`
///   (base64), text files into its `content` after the text, each headed
///   by its name; a message without attachments is written as before.
///
/// Fails for values JSON cannot carry (a non-finite temperature), for a
/// named tool choice that names no offered tool and, with an
/// [`UnsupportedInput`](agent_core::LlmErrorKind::UnsupportedInput) error,
/// for an attachment that cannot be sent: an image by URL (Agentry does not
/// fetch URLs), a PDF or audio, one larger than
/// [`BodyOptions::media_limits`], or one whose bytes a session store did
/// not load.
pub fn build_request_body(request: &ChatRequest, options: &BodyOptions) -> Result<Vec<u8>, LlmError> {
    if let Some(temperature) = request.temperature
        && !temperature.is_finite()
    {
        return Err(LlmError::invalid_request(format!(
            "temperature must be a finite number, got {temperature}"
        )));
    }
    check_attachments(&request.messages, &options.media_limits)?;
    // Ollama has no tool_choice: the choice narrows the tools sent.
    let tools = request.callable_tools()?;
    let body = Body {
        model: request.model.as_deref().unwrap_or(&options.model),
        messages: Messages {
            system: request.system.as_deref(),
            history: &request.messages,
        },
        tools: (!tools.is_empty()).then_some(Tools(&tools)),
        format: request.response_format.as_ref().map(|format| &format.schema),
        options: ModelOptions {
            num_predict: request.max_tokens,
            temperature: request.temperature,
            stop: &request.stop,
            num_ctx: options.num_ctx,
            extra: &options.extra_options,
        },
        stream: options.stream,
        keep_alive: options.keep_alive.as_ref(),
        think: options.think.as_ref(),
    };
    let mut out = Vec::with_capacity(256 + request.messages.len() * 128 + request.tools.len() * 512);
    serde_json::to_writer(&mut out, &body)
        .map_err(|error| LlmError::invalid_request(format!("the request cannot be encoded as JSON: {error}")))?;
    Ok(out)
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Messages<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Tools<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<&'a Value>,
    #[serde(skip_serializing_if = "ModelOptions::is_empty")]
    options: ModelOptions<'a>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    keep_alive: Option<&'a KeepAlive>,
    #[serde(skip_serializing_if = "Option::is_none")]
    think: Option<&'a Think>,
}

/// `options`: the request's values, then the configured extras that they
/// do not override.
struct ModelOptions<'a> {
    num_predict: Option<u32>,
    temperature: Option<f32>,
    stop: &'a [String],
    num_ctx: Option<u32>,
    extra: &'a std::collections::BTreeMap<String, Value>,
}

impl ModelOptions<'_> {
    fn is_empty(&self) -> bool {
        self.num_predict.is_none()
            && self.temperature.is_none()
            && self.stop.is_empty()
            && self.num_ctx.is_none()
            && self.extra.is_empty()
    }

    fn sets(&self, key: &str) -> bool {
        match key {
            "num_predict" => self.num_predict.is_some(),
            "temperature" => self.temperature.is_some(),
            "stop" => !self.stop.is_empty(),
            "num_ctx" => self.num_ctx.is_some(),
            _ => false,
        }
    }
}

impl Serialize for ModelOptions<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if let Some(num_predict) = self.num_predict {
            map.serialize_entry("num_predict", &num_predict)?;
        }
        if let Some(temperature) = self.temperature {
            map.serialize_entry("temperature", &temperature)?;
        }
        if !self.stop.is_empty() {
            map.serialize_entry("stop", self.stop)?;
        }
        if let Some(num_ctx) = self.num_ctx {
            map.serialize_entry("num_ctx", &num_ctx)?;
        }
        for (key, value) in self.extra {
            if !self.sets(key) {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

struct Messages<'a> {
    system: Option<&'a str>,
    history: &'a [Message],
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        if let Some(system) = self.system {
            seq.serialize_element(&Text {
                role: "system",
                content: system,
            })?;
        }
        for message in self.history {
            match message {
                Message::System { content } => seq.serialize_element(&Text {
                    role: "system",
                    content,
                })?,
                Message::User { content, attachments } if attachments.is_empty() => {
                    seq.serialize_element(&Text { role: "user", content })?;
                }
                Message::User { content, attachments } => seq.serialize_element(&WithMedia {
                    role: "user",
                    content: ContentWithFiles {
                        error_prefix: false,
                        text: content,
                        attachments,
                        place: Place::UserMessage,
                    },
                    tool_name: None,
                })?,
                Message::Assistant(assistant) => seq.serialize_element(&Assistant(assistant))?,
                Message::Tool(result) if result.attachments.is_empty() => seq.serialize_element(&ToolMessage {
                    role: "tool",
                    content: ErrorPrefixed {
                        is_error: result.is_error,
                        text: &result.content,
                    },
                    tool_name: &result.name,
                })?,
                Message::Tool(result) => seq.serialize_element(&WithMedia {
                    role: "tool",
                    content: ContentWithFiles {
                        error_prefix: needs_error_prefix(result.is_error, &result.content),
                        text: &result.content,
                        attachments: &result.attachments,
                        place: Place::ToolResult,
                    },
                    tool_name: Some(&result.name),
                })?,
            }
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct Text<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct ToolMessage<'a> {
    role: &'static str,
    content: ErrorPrefixed<'a>,
    tool_name: &'a str,
}

/// A user message or tool result with attachments: `content` with its text
/// files, `images` with its images.
struct WithMedia<'a> {
    role: &'static str,
    content: ContentWithFiles<'a>,
    tool_name: Option<&'a str>,
}

impl Serialize for WithMedia<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let attachments = self.content.attachments;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("role", self.role)?;
        if ContentWithFiles::has_files(attachments) {
            map.serialize_entry("content", &self.content)?;
        } else {
            map.serialize_entry(
                "content",
                &ErrorPrefixed {
                    is_error: self.content.error_prefix,
                    text: self.content.text,
                },
            )?;
        }
        if ContentWithFiles::has_images(attachments) {
            map.serialize_entry(
                "images",
                &Images {
                    attachments,
                    place: self.content.place,
                },
            )?;
        }
        if let Some(tool_name) = self.tool_name {
            map.serialize_entry("tool_name", tool_name)?;
        }
        map.end()
    }
}

/// Whether a result's text needs `Error: ` in front so the model sees it failed.
fn needs_error_prefix(is_error: bool, text: &str) -> bool {
    is_error && !text.starts_with("Error")
}

/// A failed result's text, starting with `Error: ` so the model sees it failed.
struct ErrorPrefixed<'a> {
    is_error: bool,
    text: &'a str,
}

impl Serialize for ErrorPrefixed<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if needs_error_prefix(self.is_error, self.text) {
            serializer.collect_str(&format_args!("Error: {}", self.text))
        } else {
            serializer.serialize_str(self.text)
        }
    }
}

struct Assistant<'a>(&'a AssistantMessage);

impl Serialize for Assistant<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let message = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("role", "assistant")?;
        map.serialize_entry("content", &message.content)?;
        let thinking: Vec<&str> = message
            .reasoning
            .iter()
            .map(|block| block.text.as_str())
            .filter(|text| !text.is_empty())
            .collect();
        if !thinking.is_empty() {
            map.serialize_entry("thinking", &thinking.join("\n\n"))?;
        }
        if !message.tool_calls.is_empty() {
            map.serialize_entry("tool_calls", &Calls(&message.tool_calls))?;
        }
        map.end()
    }
}

struct Calls<'a>(&'a [ToolCall]);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for (index, call) in self.0.iter().enumerate() {
            seq.serialize_element(&WireCall {
                kind: "function",
                function: WireFunction {
                    index,
                    name: &call.name,
                    arguments: Arguments(call),
                },
            })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct WireCall<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    index: usize,
    name: &'a str,
    arguments: Arguments<'a>,
}

/// A call's arguments as an object, whatever the model wrote.
struct Arguments<'a>(&'a ToolCall);

impl Serialize for Arguments<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let call = self.0;
        if let (None, Value::Object(arguments)) = (&call.raw_arguments, &call.arguments) {
            arguments.serialize(serializer)
        } else {
            let mut map = serializer.serialize_map(Some(1))?;
            map.serialize_entry(RAW_ARGUMENTS_KEY, &call.arguments_text())?;
            map.end()
        }
    }
}

struct Tools<'a>(&'a [&'a ToolDefinition]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tool<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            function: Function<'a>,
        }
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            description: &'a str,
            parameters: &'a Value,
        }
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for tool in self.0 {
            seq.serialize_element(&Tool {
                kind: "function",
                function: Function {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: tool.input_schema.as_ref(),
                },
            })?;
        }
        seq.end()
    }
}
