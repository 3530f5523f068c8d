//! `ChatRequest` -> Messages API request body.
//!
//! The conversation is first grouped into alternating user/assistant turns
//! of borrowed content blocks, then serialised straight into one byte
//! buffer without building a `serde_json::Value`.

use std::borrow::Cow;

use agent_core::{ChatRequest, LlmError, Message, ToolChoice, ToolDefinition};
use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::BodyOptions;
use super::turns::{Block, BlockKind, CacheControl, EPHEMERAL, Turn, group_turns, is_blank};

/// The key a tool call's malformed argument text is sent under: Anthropic
/// wants every `tool_use` input to be a JSON object, and sending `{}`
/// instead would hide from the model what it actually produced.
pub const RAW_ARGUMENTS_KEY: &str = "_raw_arguments";

/// Serialises `request` as a Messages API body (JSON bytes).
///
/// - `system` is [`ChatRequest::system`] followed by the system messages at
///   the very start of the history, joined by a blank line. A system message
///   later in the conversation stays where it is, as a user text block
///   `<system>…</system>`: moving it into `system` would lose its place and
///   change the cached prompt prefix every time one is added.
/// - `max_tokens` is always sent (the request's, else the configured default).
/// - Consecutive messages of the same role are merged into one turn, so all
///   tool results of a turn travel as `tool_result` blocks of one user
///   message (tool results first, then any text), with `is_error` on failures.
/// - No empty or whitespace-only text block is ever sent; an assistant turn
///   that only calls tools holds only `tool_use` blocks, and a message left
///   with no content at all is dropped.
/// - Assistant reasoning goes first in its turn, unchanged: a signed block as
///   `thinking`, a redacted one as `redacted_thinking`. Unsigned reasoning
///   (another provider's) is dropped: Anthropic rejects unsigned thinking.
/// - A tool call's input is its arguments object; malformed argument text is
///   sent as `{"_raw_arguments": "<text>"}` (see [`RAW_ARGUMENTS_KEY`]), and
///   `null` arguments as `{}`.
/// - A user message's attachments become `image` and `document` blocks
///   before its text; a tool result's come after its text, inside the
///   `tool_result` content (see the [`media`](super::media) table).
/// - `tools` carry `input_schema`; `tool_choice` (`auto`, `any`, `tool`,
///   `none`, with `disable_parallel_tool_use` when parallel calls are off)
///   is sent only with tools.
/// - With [`ChatRequest::prompt_caching`], `cache_control: {"type":
///   "ephemeral"}` marks the last tool, the system prompt (then sent as an
///   array of one text block) and the last block of the last message: at
///   most three of Anthropic's four breakpoints. Without it, none.
/// - [`ResponseFormat`](agent_core::ResponseFormat) becomes
///   `output_config.format` (`json_schema`), Anthropic's structured outputs.
/// - With extended thinking, `thinking.budget_tokens` is sent and the
///   temperature is not (thinking requires the default temperature).
///
/// Fails with an invalid-request error for what Anthropic would reject
/// anyway, with a message saying what to change: a temperature outside
/// 0–1 or not finite, a thinking budget under 1024 tokens or not below
/// `max_tokens`, a forced tool choice together with extended thinking.
/// Fails with an unsupported-input error for an attachment Anthropic
/// cannot take (audio, an image type it does not read, a text file by URL,
/// bytes a session store did not load) or one larger than
/// [`BodyOptions::media_limits`] allow.
pub fn build_request_body(request: &ChatRequest, options: &BodyOptions) -> Result<Vec<u8>, LlmError> {
    let max_tokens = request.max_tokens.unwrap_or(options.default_max_tokens);
    let has_tools = !request.tools.is_empty();
    validate(request, options, max_tokens, has_tools)?;
    let caching = request.prompt_caching;
    let (system, rest) = system_prompt(request);
    let mut turns = group_turns(rest, &options.media_limits)?;
    if caching && let Some(block) = turns.last_mut().and_then(Turn::cache_target) {
        block.cache = true;
    }
    let body = Body {
        model: request.model.as_deref().unwrap_or(&options.model),
        max_tokens,
        system: system.map(|text| System { text, cache: caching }),
        messages: &turns,
        tools: has_tools.then_some(Tools {
            tools: &request.tools,
            cache_last: caching,
        }),
        tool_choice: has_tools.then_some(WireToolChoice {
            choice: &request.tool_choice,
            disable_parallel: request.parallel_tool_calls == Some(false),
        }),
        thinking: options.thinking_budget.map(|budget_tokens| Thinking {
            kind: "enabled",
            budget_tokens,
        }),
        temperature: request.temperature.filter(|_| options.thinking_budget.is_none()),
        stop_sequences: &request.stop,
        output_config: request.response_format.as_ref().map(|format| OutputConfig {
            format: OutputFormat {
                kind: "json_schema",
                schema: &format.schema,
            },
        }),
        stream: options.stream,
    };
    let mut out = Vec::with_capacity(estimate_size(request));
    serde_json::to_writer(&mut out, &body)
        .map_err(|error| LlmError::invalid_request(format!("the request cannot be encoded as JSON: {error}")))?;
    Ok(out)
}

/// Anthropic's smallest extended-thinking budget.
const MIN_THINKING_BUDGET: u32 = 1024;

fn validate(request: &ChatRequest, options: &BodyOptions, max_tokens: u32, has_tools: bool) -> Result<(), LlmError> {
    // With thinking on the temperature is not sent, so it needs no check.
    let sent_temperature = request.temperature.filter(|_| options.thinking_budget.is_none());
    if let Some(temperature) = sent_temperature
        && !(0.0..=1.0).contains(&temperature)
    {
        return Err(LlmError::invalid_request(format!(
            "temperature must be between 0 and 1 for Anthropic models, got {temperature}"
        )));
    }
    let Some(budget) = options.thinking_budget else {
        return Ok(());
    };
    if budget < MIN_THINKING_BUDGET {
        return Err(LlmError::invalid_request(format!(
            "the extended-thinking budget must be at least {MIN_THINKING_BUDGET} tokens, got {budget}: raise \
             `thinking.budget_tokens` in [providers.anthropic]"
        )));
    }
    if max_tokens <= budget {
        return Err(LlmError::invalid_request(format!(
            "max_tokens ({max_tokens}) must be greater than the extended-thinking budget ({budget}): raise \
             max_tokens or lower `thinking.budget_tokens` in [providers.anthropic]"
        )));
    }
    if has_tools && matches!(request.tool_choice, ToolChoice::Required | ToolChoice::Tool { .. }) {
        return Err(LlmError::invalid_request(
            "extended thinking allows only tool_choice auto or none, not a forced tool: turn thinking off in \
             [providers.anthropic] or let the model choose",
        ));
    }
    Ok(())
}

/// The top-level system prompt and the messages after the leading system
/// messages it absorbed.
fn system_prompt(request: &ChatRequest) -> (Option<Cow<'_, str>>, &[Message]) {
    let leading = request
        .messages
        .iter()
        .take_while(|message| matches!(message, Message::System { .. }))
        .count();
    let mut parts = request
        .system
        .as_deref()
        .into_iter()
        .chain(request.messages[..leading].iter().filter_map(|message| match message {
            Message::System { content } => Some(content.as_str()),
            _ => None,
        }))
        .filter(|text| !is_blank(text));
    let system = match (parts.next(), parts.next()) {
        (None, _) => None,
        (Some(only), None) => Some(Cow::Borrowed(only)),
        (Some(first), Some(second)) => {
            let mut joined = format!("{first}\n\n{second}");
            for part in parts {
                joined.push_str("\n\n");
                joined.push_str(part);
            }
            Some(Cow::Owned(joined))
        }
    };
    (system, &request.messages[leading..])
}

/// A guess at the body size, so the buffer rarely grows.
fn estimate_size(request: &ChatRequest) -> usize {
    let text: usize = request
        .messages
        .iter()
        .map(|message| match message {
            Message::System { content } => content.len() + 48,
            Message::User { content, attachments } => content.len() + 48 + media_len(attachments),
            Message::Assistant(assistant) => {
                assistant.content.len()
                    + 64
                    + assistant
                        .reasoning
                        .iter()
                        .map(|block| block.text.len() + block.signature.as_ref().map_or(0, String::len) + 64)
                        .sum::<usize>()
                    + assistant
                        .tool_calls
                        .iter()
                        .map(|call| call.id.len() + call.name.len() + 160)
                        .sum::<usize>()
            }
            Message::Tool(result) => result.content.len() + result.call_id.len() + 64 + media_len(&result.attachments),
        })
        .sum();
    let tools = request.tools.len() * 512;
    let system = request.system.as_ref().map_or(0, String::len);
    let total = 256 + text + tools + system;
    total + total / 8
}

/// Roughly what attachments add to a body: their base64 text.
fn media_len(attachments: &[agent_core::Attachment]) -> usize {
    attachments
        .iter()
        .map(|attachment| attachment.bytes().map_or(0, <[u8]>::len) / 3 * 4 + 160)
        .sum()
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<System<'a>>,
    messages: &'a [Turn<'a>],
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Tools<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig<'a>>,
    #[serde(skip_serializing_if = "is_false")]
    stream: bool,
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_false(value: &bool) -> bool {
    !*value
}

#[derive(Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Serialize)]
struct OutputConfig<'a> {
    format: OutputFormat<'a>,
}

#[derive(Serialize)]
struct OutputFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    schema: &'a Value,
}

/// The system prompt: a string, or with caching an array of one text block
/// carrying the breakpoint.
struct System<'a> {
    text: Cow<'a, str>,
    cache: bool,
}

impl Serialize for System<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !self.cache {
            return serializer.serialize_str(&self.text);
        }
        let mut seq = serializer.serialize_seq(Some(1))?;
        seq.serialize_element(&Block {
            kind: BlockKind::Text(Cow::Borrowed(&self.text)),
            cache: true,
        })?;
        seq.end()
    }
}

struct Tools<'a> {
    tools: &'a [ToolDefinition],
    cache_last: bool,
}

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.tools.len()))?;
        let last = self.tools.len().saturating_sub(1);
        for (position, tool) in self.tools.iter().enumerate() {
            seq.serialize_element(&WireTool {
                name: &tool.name,
                description: Some(tool.description.as_str()).filter(|d| !d.is_empty()),
                input_schema: InputSchema(&tool.input_schema),
                cache_control: (self.cache_last && position == last).then_some(EPHEMERAL),
            })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    input_schema: InputSchema<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// A tool's schema; Anthropic requires one, so a tool without parameters
/// gets an empty object schema.
struct InputSchema<'a>(&'a Value);

impl Serialize for InputSchema<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.is_null() {
            let mut map = serializer.serialize_map(Some(2))?;
            map.serialize_entry("type", "object")?;
            map.serialize_entry("properties", &serde_json::Map::new())?;
            map.end()
        } else {
            self.0.serialize(serializer)
        }
    }
}

struct WireToolChoice<'a> {
    choice: &'a ToolChoice,
    disable_parallel: bool,
}

impl Serialize for WireToolChoice<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self.choice {
            ToolChoice::None => {
                // `none` takes no other field.
                map.serialize_entry("type", "none")?;
                return map.end();
            }
            ToolChoice::Auto => map.serialize_entry("type", "auto")?,
            ToolChoice::Required => map.serialize_entry("type", "any")?,
            ToolChoice::Tool { name } => {
                map.serialize_entry("type", "tool")?;
                map.serialize_entry("name", name)?;
            }
        }
        if self.disable_parallel {
            map.serialize_entry("disable_parallel_tool_use", &true)?;
        }
        map.end()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agent_core::{LlmErrorKind, Message, ToolDefinition};
    use serde_json::json;

    use super::*;

    fn body(request: &ChatRequest) -> Value {
        serde_json::from_slice(&build_request_body(request, &BodyOptions::new("claude-sonnet-4-5")).unwrap()).unwrap()
    }

    #[test]
    fn a_plain_request_has_model_max_tokens_and_string_content() {
        let body = body(&ChatRequest::new(vec![Message::user("Hello!")]));
        assert_eq!(
            body,
            json!({"model": "claude-sonnet-4-5", "max_tokens": 4096,
                   "messages": [{"role": "user", "content": "Hello!"}]})
        );
    }

    #[test]
    fn tool_choices_map_and_parallel_calls_can_be_turned_off() {
        let choice = |tool_choice: ToolChoice, parallel: Option<bool>| {
            let request = ChatRequest {
                tool_choice,
                parallel_tool_calls: parallel,
                ..ChatRequest::new(vec![Message::user("hi")]).with_tools(vec![ToolDefinition::new(
                    "t",
                    "",
                    Value::Null,
                )])
            };
            body(&request)["tool_choice"].clone()
        };
        assert_eq!(choice(ToolChoice::Auto, None), json!({"type": "auto"}));
        assert_eq!(
            choice(ToolChoice::Auto, Some(false)),
            json!({"type": "auto", "disable_parallel_tool_use": true})
        );
        assert_eq!(choice(ToolChoice::Required, Some(true)), json!({"type": "any"}));
        assert_eq!(
            choice(ToolChoice::Tool { name: "t".into() }, Some(false)),
            json!({"type": "tool", "name": "t", "disable_parallel_tool_use": true})
        );
        assert_eq!(choice(ToolChoice::None, Some(false)), json!({"type": "none"}));

        let no_tools = body(&ChatRequest {
            tool_choice: ToolChoice::Required,
            ..ChatRequest::new(vec![Message::user("hi")])
        });
        assert!(no_tools.get("tool_choice").is_none() && no_tools.get("tools").is_none());
        let schemaless = body(
            &ChatRequest::new(vec![Message::user("hi")]).with_tools(vec![ToolDefinition::new("now", "", Value::Null)]),
        );
        assert_eq!(
            schemaless["tools"][0],
            json!({"name": "now", "input_schema": {"type": "object", "properties": {}}})
        );
    }

    #[test]
    fn invalid_settings_are_refused_with_what_to_change() {
        let refuse = |request: &ChatRequest, options: &BodyOptions| build_request_body(request, options).unwrap_err();
        let options = BodyOptions::new("m");
        for temperature in [f32::NAN, 1.5, -0.1] {
            let request = ChatRequest {
                temperature: Some(temperature),
                ..ChatRequest::new(vec![Message::user("hi")])
            };
            let error = refuse(&request, &options);
            assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
            assert!(error.message.contains("between 0 and 1"), "{error}");
        }
        let thinking = BodyOptions::new("m").with_thinking(4096);
        let error = refuse(&ChatRequest::new(vec![Message::user("hi")]), &thinking);
        assert!(error.message.contains("max_tokens (4096) must be greater"), "{error}");
        let tiny = BodyOptions::new("m").with_thinking(100);
        let error = refuse(&ChatRequest::new(vec![Message::user("hi")]), &tiny);
        assert!(error.message.contains("at least 1024 tokens, got 100"), "{error}");
        let forced = ChatRequest {
            max_tokens: Some(8000),
            tool_choice: ToolChoice::Required,
            ..ChatRequest::new(vec![Message::user("hi")]).with_tools(vec![ToolDefinition::new("t", "", Value::Null)])
        };
        let error = refuse(&forced, &thinking);
        assert!(error.message.contains("only tool_choice auto or none"), "{error}");
    }

    #[test]
    fn thinking_is_sent_and_the_temperature_left_out() {
        let request = ChatRequest {
            max_tokens: Some(8000),
            temperature: Some(0.7),
            ..ChatRequest::new(vec![Message::user("hi")])
        };
        let bytes = build_request_body(&request, &BodyOptions::new("m").with_thinking(2048)).unwrap();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 2048}));
        assert!(body.get("temperature").is_none());
    }
}
