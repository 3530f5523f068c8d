//! `POST /v1/chat/completions`: OpenAI's chat completions with the agent as
//! the model, plain or streamed as server-sent events.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use agent_core::{AgentEvent, AgentRunResult, Message, RunEnd};
use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt, stream};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::DropGuard;

use crate::content::Content;
use crate::error::ApiError;
use crate::runs::{RunOptions, RunStart, completed};
use crate::state::{Caller, Shared};

/// The request fields the server reads; the others (sampling settings,
/// tools) are the agent's own and are ignored.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatCompletionRequest {
    #[serde(default)]
    model: Option<String>,
    messages: Vec<ChatMessage>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
}

#[derive(Debug, Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

#[derive(Debug, Deserialize)]
struct ChatMessage {
    role: String,
    #[serde(default)]
    content: Option<Content>,
}

/// The history and the prompt of a request: the last message is the user's
/// prompt, the ones before it the history.
fn conversation(messages: Vec<ChatMessage>) -> Result<(Vec<Message>, Message), ApiError> {
    let mut history = Vec::with_capacity(messages.len());
    for (index, message) in messages.into_iter().enumerate() {
        let at = format!("messages[{index}].content");
        let content = message.content.unwrap_or(Content::Text(String::new()));
        history.push(match message.role.as_str() {
            "system" | "developer" => Message::system(content.into_text(&at)?),
            "user" => {
                let (text, attachments) = content.into_parts(&at)?;
                Message::user_with(text, attachments)
            }
            "assistant" => Message::assistant(content.into_text(&at)?),
            "tool" | "function" => {
                return Err(ApiError::InvalidRequest(format!(
                    "messages[{index}]: tool results are not accepted: the agent calls its own tools"
                )));
            }
            other => {
                return Err(ApiError::InvalidRequest(format!(
                    "messages[{index}]: unknown role `{other}`; expected system, developer, user or assistant"
                )));
            }
        });
    }
    match history.pop() {
        Some(prompt @ Message::User { .. }) => Ok((history, prompt)),
        _ => Err(ApiError::InvalidRequest(
            "the last message must be the user's: it is the prompt".to_owned(),
        )),
    }
}

/// Handles `POST /v1/chat/completions`.
pub(crate) async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    caller: Caller,
    body: Result<Json<ChatCompletionRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let request = shared.body(body)?;
    let (history, prompt) = conversation(request.messages)?;
    let reply = Reply::new(request.model.unwrap_or_else(|| shared.agent.name().to_owned()));
    let start = RunStart::History {
        prompt,
        history,
        options: RunOptions::default(),
        keep_paused: false,
    };
    let entry = shared.launch(caller, start)?;
    if request.stream {
        // Dropping the response (the client went away) cancels the run.
        let cancel_on_drop = entry.cancel.clone().drop_guard();
        let include_usage = request.stream_options.is_some_and(|options| options.include_usage);
        let keep_alive = KeepAlive::new().interval(shared.keep_alive);
        return Ok(Sse::new(chunks(entry.events(), reply, include_usage, cancel_on_drop))
            .keep_alive(keep_alive)
            .into_response());
    }
    let outcome = completed(&entry).await?;
    Ok(Json(reply.completion(&outcome.result)).into_response())
}

/// What every object of one reply shares.
struct Reply {
    id: String,
    created: u64,
    model: String,
}

impl Reply {
    fn new(model: String) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs());
        Self {
            id: format!("chatcmpl-agentry-{created}-{}", NEXT.fetch_add(1, Ordering::Relaxed)),
            created,
            model,
        }
    }

    fn completion(&self, result: &AgentRunResult) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": result.response},
                "finish_reason": finish_reason(result.stop_reason),
            }],
            "usage": usage(result),
        })
    }

    fn chunk(&self, delta: &Value, finish_reason: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        })
    }

    fn usage_chunk(&self, result: &AgentRunResult) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": usage(result),
        })
    }
}

/// `length` when the run stopped on a limit before a finished answer,
/// `stop` otherwise.
fn finish_reason(stop: RunEnd) -> &'static str {
    match stop {
        RunEnd::BudgetExceeded | RunEnd::MaxTokens => "length",
        _ => "stop",
    }
}

fn usage(result: &AgentRunResult) -> Value {
    json!({
        "prompt_tokens": result.usage.input_tokens,
        "completion_tokens": result.usage.output_tokens,
        "total_tokens": result.usage.total_tokens(),
    })
}

/// The run's events as chunks: the role first, the text as it comes, the
/// finish reason, the usage when asked for, then `[DONE]`. A failed run
/// ends with an error object instead. Dropping the stream (the client went
/// away) drops `cancel_on_drop`, which cancels the run.
fn chunks(
    events: impl Stream<Item = AgentEvent> + Send + 'static,
    reply: Reply,
    include_usage: bool,
    cancel_on_drop: DropGuard,
) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static {
    let data = |value: &Value| Ok(Event::default().data(value.to_string()));
    let first = data(&reply.chunk(&json!({"role": "assistant", "content": ""}), None));
    let body = events.flat_map(move |event| {
        let out: Vec<Result<Event, Infallible>> = match event {
            AgentEvent::TextDelta { text } if !text.is_empty() => {
                vec![data(&reply.chunk(&json!({"content": text}), None))]
            }
            AgentEvent::RunFinished { result } if result.stop_reason == RunEnd::Error => {
                let message = result.stop_detail.as_deref().unwrap_or("the run failed");
                vec![data(
                    &json!({"error": {"message": message, "type": "api_error", "code": null}}),
                )]
            }
            AgentEvent::RunFinished { result } => {
                let mut out = vec![data(&reply.chunk(&json!({}), Some(finish_reason(result.stop_reason))))];
                if include_usage {
                    out.push(data(&reply.usage_chunk(&result)));
                }
                out
            }
            _ => Vec::new(),
        };
        stream::iter(out)
    });
    let done = stream::once(async move {
        cancel_on_drop.disarm();
        Ok(Event::default().data("[DONE]"))
    });
    stream::once(async move { first }).chain(body).chain(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_cut_at_a_limit_finishes_with_length() {
        assert_eq!(finish_reason(RunEnd::MaxTokens), "length");
        assert_eq!(finish_reason(RunEnd::BudgetExceeded), "length");
        assert_eq!(finish_reason(RunEnd::Completed), "stop");
    }

    fn messages(value: Value) -> Vec<ChatMessage> {
        serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_last_user_message_is_the_prompt_and_the_rest_the_history() {
        let (history, prompt) = conversation(messages(json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello"},
            {"role": "user", "content": [{"type": "text", "text": "Weather"}, {"type": "text", "text": "in Rome?"}]},
        ])))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(prompt, Message::user("Weather\nin Rome?"));
        assert_eq!(
            history,
            [
                Message::system("Be brief."),
                Message::user("Hi"),
                Message::assistant("Hello")
            ]
        );
    }

    #[test]
    fn requests_the_agent_cannot_take_say_why() {
        for (value, expected) in [
            (json!([]), "last message must be the user's"),
            (
                json!([{"role": "assistant", "content": "x"}]),
                "last message must be the user's",
            ),
            (
                json!([{"role": "tool", "content": "42"}, {"role": "user", "content": "x"}]),
                "messages[0]",
            ),
            (json!([{"role": "robot", "content": "x"}]), "unknown role `robot`"),
            (
                json!([{"role": "user", "content": [{"type": "image_url"}]}]),
                "messages[0].content[0]: an image_url part needs `image_url`",
            ),
            (
                json!([{"role": "user", "content": [{"type": "video_url"}]}]),
                "type `video_url` are not supported",
            ),
        ] {
            let error = conversation(messages(value))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(error.contains(expected), "{error}");
        }
    }
}
