//! `ChatRequest` -> `generateContent` request body.

use std::collections::HashMap;

use agent_core::{AssistantMessage, ChatRequest, LlmError, Message, ToolChoice, ToolDefinition, ToolResult};
use serde_json::{Map, Value, json};

use super::BodyOptions;
use super::media::{Place, media_parts, takes_multimodal_function_responses, tool_media};
use super::schema::{SchemaOptions, to_gemini_schema};
use super::wire::is_synthetic;

/// The marker that opens a system message found in the middle of the
/// conversation, sent as user text (Gemini has one `systemInstruction`).
pub const MID_CONVERSATION_SYSTEM_MARKER: &str = "[System instruction] ";

/// The `thoughtSignature` sent on the first `functionCall` part of an
/// assistant turn that carries no Gemini signature: a turn of another
/// provider (its reasoning is not Gemini's), an injected call, or a reply of
/// a model that signs nothing. Gemini 3 refuses a function call of the
/// current turn without a signature; Google's Gemini 3 guide names this
/// value for history from another model or injected calls, to skip the
/// check. It is sent whatever the model: Gemini 3 needs it, and earlier
/// models, which do not validate signatures, are not known to refuse it
/// (the model name alone cannot tell which models validate).
pub const PLACEHOLDER_THOUGHT_SIGNATURE: &str = "context_engineering_is_the_way_to_go";

/// Serialises `request` as a `generateContent` / `streamGenerateContent`
/// body (JSON bytes; the model and the streaming choice are in the URL).
///
/// - [`ChatRequest::system`] and any system messages that open the
///   conversation become `systemInstruction`; a system message later in the
///   conversation is sent as user text starting with
///   [`MID_CONVERSATION_SYSTEM_MARKER`], where it was said;
/// - `contents` alternate `user`/`model`: consecutive turns of one role are
///   merged into one content, so all tool results of a turn go back in one
///   `user` content of `functionResponse` parts;
/// - tool calls go out as `functionCall` parts (arguments as an object:
///   malformed argument text from another provider is wrapped as
///   `{"_raw_arguments": text}`, a non-object value as `{"value": v}`) and
///   results as `functionResponse` parts whose `response` is the result
///   object, `{"result": ...}` for anything else, or `{"error": ...}` for a
///   failed call; `id` is sent only when Gemini issued it (made-up ids
///   start with [`SYNTHETIC_ID_PREFIX`](super::SYNTHETIC_ID_PREFIX));
/// - attachments become `inlineData` (bytes) and `fileData` (URL) parts
///   (see [`media`](super::media)): a user message's come before its text;
///   a tool result's go inside its `functionResponse` (`parts`) on Gemini 3
///   and later when they are bytes of a type Gemini takes there, otherwise
///   right after the turn's function responses in the same user content;
/// - thought signatures kept in [`ReasoningBlock`](agent_core::ReasoningBlock)s
///   go back on the part they came with (see the crate docs); unsigned
///   thought text is not sent back (Gemini does not need it); an assistant
///   turn whose calls have no Gemini signature (another provider's turn,
///   an injected call) gets [`PLACEHOLDER_THOUGHT_SIGNATURE`] on its first
///   `functionCall` part, where Gemini puts the signature of parallel calls;
/// - tools become one `functionDeclarations` list with parameters in
///   Gemini's schema subset ([`to_gemini_schema`]), a parameterless tool
///   has no `parameters`; `tool_choice` becomes
///   `toolConfig.functionCallingConfig` (`AUTO`, `NONE`, `ANY`, or `ANY`
///   with `allowedFunctionNames` for a named tool);
/// - `generationConfig`: `maxOutputTokens`, `temperature`,
///   `stopSequences`, `responseMimeType: application/json` with a
///   translated `responseSchema`, and `thinkingConfig` from the options.
///
/// Fails (invalid request) for a schema Gemini's subset cannot express, a
/// non-finite temperature, a forced tool that is not defined, or a request
/// with no message to send; (unsupported input) for an attachment larger
/// than [`BodyOptions::media_limits`] allow or whose bytes a session store
/// did not load.
pub fn build_request_body(request: &ChatRequest, options: &BodyOptions) -> Result<Vec<u8>, LlmError> {
    let body = build_request_json(request, options)?;
    serde_json::to_vec(&body)
        .map_err(|error| LlmError::invalid_request(format!("the request cannot be encoded as JSON: {error}")))
}

/// [`build_request_body`] as a JSON value (what the tests snapshot).
pub fn build_request_json(request: &ChatRequest, options: &BodyOptions) -> Result<Value, LlmError> {
    let mut body = Map::new();
    let (system, contents) = conversation(request, options)?;
    if !system.is_empty() {
        body.insert("systemInstruction".into(), json!({"parts": system}));
    }
    body.insert("contents".into(), Value::Array(contents));
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations(&request.tools)?}]),
        );
        body.insert(
            "toolConfig".into(),
            json!({"functionCallingConfig": calling_config(&request.tool_choice, &request.tools)?}),
        );
    }
    let generation = generation_config(request, options)?;
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    Ok(Value::Object(body))
}

/// The system parts and the contents.
fn conversation(request: &ChatRequest, options: &BodyOptions) -> Result<(Vec<Value>, Vec<Value>), LlmError> {
    let limits = &options.media_limits;
    let model = request.model.as_deref().unwrap_or(&options.model);
    let multimodal_responses = takes_multimodal_function_responses(model);
    let mut system = Vec::new();
    if let Some(prompt) = request.system.as_deref().filter(|prompt| !prompt.is_empty()) {
        system.push(json!({"text": prompt}));
    }
    let mut contents = Contents::default();
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut opening = true;
    for message in &request.messages {
        match message {
            Message::System { content } if opening => system.push(json!({"text": content})),
            Message::System { content } => {
                contents.push(
                    "user",
                    json!({"text": format!("{MID_CONVERSATION_SYSTEM_MARKER}{content}")}),
                );
            }
            Message::User { content, attachments } => {
                opening = false;
                for part in media_parts(attachments, Place::UserMessage, limits)? {
                    contents.push("user", part);
                }
                if attachments.is_empty() || !content.is_empty() {
                    contents.push("user", json!({"text": content}));
                }
            }
            Message::Assistant(assistant) => {
                opening = false;
                for call in &assistant.tool_calls {
                    names.insert(&call.id, &call.name);
                }
                for part in model_parts(assistant) {
                    contents.push("model", part);
                }
            }
            Message::Tool(result) => {
                opening = false;
                let (inside, after) = tool_media(&result.attachments, limits, multimodal_responses)?;
                contents.push_response(function_response(result, &names, inside));
                contents.after_responses.extend(after);
            }
        }
    }
    let contents = contents.finish();
    if contents.is_empty() {
        return Err(LlmError::invalid_request(
            "Gemini needs at least one user or assistant message in `contents`; the request has none",
        ));
    }
    let contents = contents
        .into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect();
    Ok((system, contents))
}

/// Contents being built; a part of the same role as the last content joins it.
#[derive(Default)]
struct Contents {
    contents: Vec<(&'static str, Vec<Value>)>,
    /// Media of tool results that go after the turn's function responses.
    after_responses: Vec<Value>,
}

impl Contents {
    /// Adds a part of anything but a function response: the media waiting
    /// after the function responses go first.
    fn push(&mut self, role: &'static str, part: Value) {
        self.flush_media();
        self.append(role, part);
    }

    /// Adds a `functionResponse` part (the media stay waiting).
    fn push_response(&mut self, part: Value) {
        self.append("user", part);
    }

    fn flush_media(&mut self) {
        for part in std::mem::take(&mut self.after_responses) {
            self.append("user", part);
        }
    }

    fn append(&mut self, role: &'static str, part: Value) {
        match self.contents.last_mut() {
            Some((last, parts)) if *last == role => parts.push(part),
            _ => self.contents.push((role, vec![part])),
        }
    }

    fn finish(mut self) -> Vec<(&'static str, Vec<Value>)> {
        self.flush_media();
        self.contents
    }
}

/// An assistant turn as `model` parts: signed thoughts, the text (with its
/// signature), then the function calls (each with its signature; the first
/// with [`PLACEHOLDER_THOUGHT_SIGNATURE`] when none has a Gemini one).
fn model_parts(assistant: &AssistantMessage) -> Vec<Value> {
    let mut parts = Vec::with_capacity(assistant.tool_calls.len() + 2);
    let mut call_signatures: HashMap<&str, &str> = HashMap::new();
    let mut text_signature = None;
    for block in &assistant.reasoning {
        if !block.is_from(crate::config::PROVIDER_NAME) {
            continue;
        }
        let (Some(signature), Some(data)) = (block.signature.as_deref(), block.data.as_ref()) else {
            continue;
        };
        match data.get("gemini_part").and_then(Value::as_str) {
            Some("function_call") => {
                if let Some(id) = data.get("call_id").and_then(Value::as_str) {
                    call_signatures.insert(id, signature);
                }
            }
            Some("text") => text_signature = Some(signature),
            Some("thought") => parts.push(json!({"text": block.text, "thought": true, "thoughtSignature": signature})),
            _ => {}
        }
    }
    if !assistant.content.is_empty() || text_signature.is_some() {
        let mut part = json!({"text": assistant.content});
        if let Some(signature) = text_signature {
            part["thoughtSignature"] = json!(signature);
        }
        parts.push(part);
    }
    let signed = assistant
        .tool_calls
        .iter()
        .any(|call| call_signatures.contains_key(call.id.as_str()));
    for (index, call) in assistant.tool_calls.iter().enumerate() {
        let args = match (&call.raw_arguments, &call.arguments) {
            (Some(raw), _) => json!({"_raw_arguments": raw}),
            (None, Value::Object(_)) => call.arguments.clone(),
            (None, Value::Null) => json!({}),
            (None, other) => json!({"value": other}),
        };
        let mut function_call = Map::new();
        if !call.id.is_empty() && !is_synthetic(&call.id) {
            function_call.insert("id".into(), json!(call.id));
        }
        function_call.insert("name".into(), json!(call.name));
        function_call.insert("args".into(), args);
        let mut part = json!({"functionCall": function_call});
        if let Some(signature) = call_signatures.get(call.id.as_str()) {
            part["thoughtSignature"] = json!(signature);
        } else if !signed && index == 0 {
            part["thoughtSignature"] = json!(PLACEHOLDER_THOUGHT_SIGNATURE);
        }
        parts.push(part);
    }
    parts
}

/// A tool result as a `functionResponse` part, with `parts` when it
/// carries media (`inside`, Gemini 3's multimodal function responses).
fn function_response(result: &ToolResult, names: &HashMap<&str, &str>, inside: Vec<Value>) -> Value {
    let parsed: Value = serde_json::from_str(&result.content).unwrap_or_else(|_| Value::String(result.content.clone()));
    let response = match parsed {
        value if result.is_error => json!({"error": value}),
        object @ Value::Object(_) => object,
        value => json!({"result": value}),
    };
    let name = if result.name.is_empty() {
        names.get(result.call_id.as_str()).copied().unwrap_or_default()
    } else {
        result.name.as_str()
    };
    let mut function_response = Map::new();
    if !result.call_id.is_empty() && !is_synthetic(&result.call_id) {
        function_response.insert("id".into(), json!(result.call_id));
    }
    function_response.insert("name".into(), json!(name));
    function_response.insert("response".into(), response);
    if !inside.is_empty() {
        function_response.insert("parts".into(), Value::Array(inside));
    }
    json!({"functionResponse": function_response})
}

fn declarations(tools: &[ToolDefinition]) -> Result<Vec<Value>, LlmError> {
    tools
        .iter()
        .map(|tool| {
            let mut declaration = Map::new();
            declaration.insert("name".into(), json!(tool.name));
            if !tool.description.is_empty() {
                declaration.insert("description".into(), json!(tool.description));
            }
            if !tool.input_schema.is_null() {
                let parameters = to_gemini_schema(&tool.input_schema, SchemaOptions::default()).map_err(|error| {
                    LlmError::invalid_request(format!(
                        "tool `{}`: its input schema cannot be sent to Gemini: {error}",
                        tool.name
                    ))
                })?;
                // Gemini rejects an OBJECT without properties as parameters.
                let has_properties = parameters
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_some_and(|properties| !properties.is_empty());
                if has_properties {
                    declaration.insert("parameters".into(), parameters);
                }
            }
            Ok(Value::Object(declaration))
        })
        .collect()
}

fn calling_config(choice: &ToolChoice, tools: &[ToolDefinition]) -> Result<Value, LlmError> {
    Ok(match choice {
        ToolChoice::Auto => json!({"mode": "AUTO"}),
        ToolChoice::None => json!({"mode": "NONE"}),
        ToolChoice::Required => json!({"mode": "ANY"}),
        ToolChoice::Tool { name } => {
            if !tools.iter().any(|tool| &tool.name == name) {
                return Err(LlmError::invalid_request(format!(
                    "tool_choice forces the tool `{name}`, which is not among the request's tools"
                )));
            }
            json!({"mode": "ANY", "allowedFunctionNames": [name]})
        }
    })
}

fn generation_config(request: &ChatRequest, options: &BodyOptions) -> Result<Map<String, Value>, LlmError> {
    let mut config = Map::new();
    if let Some(max_tokens) = request.max_tokens {
        config.insert("maxOutputTokens".into(), json!(max_tokens));
    }
    if let Some(temperature) = request.temperature {
        if !temperature.is_finite() {
            return Err(LlmError::invalid_request(format!(
                "temperature must be a finite number, got {temperature}"
            )));
        }
        // Through the shortest decimal text of the f32, so 0.2 stays 0.2
        // instead of becoming 0.20000000298023224.
        let temperature: f64 = temperature.to_string().parse().unwrap_or(f64::from(temperature));
        config.insert("temperature".into(), json!(temperature));
    }
    if !request.stop.is_empty() {
        config.insert("stopSequences".into(), json!(request.stop));
    }
    if let Some(format) = &request.response_format {
        let schema = to_gemini_schema(
            &format.schema,
            SchemaOptions {
                property_ordering: true,
            },
        )
        .map_err(|error| {
            LlmError::invalid_request(format!(
                "response_format `{}`: the schema cannot be sent to Gemini: {error}",
                format.name
            ))
        })?;
        config.insert("responseMimeType".into(), json!("application/json"));
        config.insert("responseSchema".into(), schema);
    }
    let mut thinking = Map::new();
    if let Some(budget) = options.thinking_budget {
        thinking.insert("thinkingBudget".into(), json!(budget));
    }
    if let Some(level) = options.thinking_level.as_deref().filter(|level| !level.is_empty()) {
        thinking.insert("thinkingLevel".into(), json!(level));
    }
    if let Some(include) = options.include_thoughts {
        thinking.insert("includeThoughts".into(), json!(include));
    }
    if !thinking.is_empty() {
        config.insert("thinkingConfig".into(), Value::Object(thinking));
    }
    Ok(config)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
