//! `GenerateContentResponse` body -> `ChatResponse`, and the reading of one
//! part that whole responses and stream chunks share.

use std::borrow::Cow;

use agent_core::{AssistantMessage, ChatResponse, LlmError, ReasoningBlock, ToolCall};
use serde_json::Value;

use agent_http::error::snippet;

use super::wire::{
    CallIds, Finish, WirePart, WireResponse, blocked_prompt, error_from_object, finish, signature_block,
};

/// Reads a (non-streamed) `generateContent` response.
///
/// The first candidate is the answer: its text parts joined are the
/// content; `thought: true` parts become reasoning blocks (not content);
/// `functionCall` parts become tool calls (with stable made-up ids when
/// Gemini gives none, see [`SYNTHETIC_ID_PREFIX`](super::SYNTHETIC_ID_PREFIX));
/// every `thoughtSignature` is kept in a reasoning block naming its part, so
/// the next request can send it back. `usageMetadata` is normalised.
///
/// Errors: an `{"error": ...}` body; a prompt blocked before any candidate
/// (`promptFeedback.blockReason`, an invalid-request error naming the
/// reason); a `MALFORMED_FUNCTION_CALL` finish, a
/// [`MalformedToolCall`](agent_core::LlmErrorKind::MalformedToolCall) error
/// carrying `finishMessage` (the agent loop asks the model to write the
/// call again); an `UNEXPECTED_TOOL_CALL` or `TOO_MANY_TOOL_CALLS` finish, a
/// decode error carrying `finishMessage`; and anything unreadable.
pub fn parse_response(body: &[u8]) -> Result<ChatResponse, LlmError> {
    let mut wire: WireResponse<'_> = serde_json::from_slice(body).map_err(|error| {
        LlmError::decode(format!(
            "the response is not a GenerateContentResponse ({error}); it starts with {:?}",
            snippet(body)
        ))
    })?;
    if let Some(error) = wire.error.as_deref().filter(|error| !error.is_null()) {
        return Err(error_from_object(body, error));
    }
    let mut ids = CallIds::default();
    ids.set_response_id(wire.response_id.as_deref());
    let Some(candidate) = wire.take_candidate() else {
        if let Some(error) = wire.prompt_feedback.as_ref().and_then(blocked_prompt) {
            return Err(error);
        }
        return Err(LlmError::decode(format!(
            "the response has no candidates and gives no reason; it starts with {:?}",
            snippet(body)
        )));
    };

    let mut message = AssistantMessage::default();
    let parts = candidate.content.and_then(|content| content.parts).unwrap_or_default();
    for part in parts {
        read_part(part, &mut ids, &mut |piece| match piece {
            Piece::Text(text) => message.content.push_str(&text),
            Piece::Thought(text) => open_reasoning(&mut message.reasoning).text.push_str(&text),
            Piece::Signed(block) => message.reasoning.push(block),
            Piece::Call { id, name, arguments } => {
                message
                    .tool_calls
                    .push(ToolCall::from_argument_text(id, name, &arguments));
            }
        });
    }
    let stop_reason = match finish(
        candidate.finish_reason.as_deref(),
        candidate.finish_message.as_deref(),
        !message.tool_calls.is_empty(),
    ) {
        Finish::Stop(reason) => reason,
        Finish::BadCall(error) => return Err(error),
    };
    Ok(ChatResponse {
        message,
        stop_reason,
        usage: wire
            .usage_metadata
            .map(super::wire::WireUsage::to_usage)
            .unwrap_or_default(),
        model: wire.model_version.map(Cow::into_owned).unwrap_or_default(),
        id: wire.response_id.map(Cow::into_owned).filter(|id| !id.is_empty()),
        route: None,
    })
}

/// The block unsigned thought text goes to: the last one while it is open
/// (no signature, no data), else a new one. The same rule as
/// [`StreamAccumulator`](agent_core::StreamAccumulator), so a streamed and a
/// whole reply keep the same blocks.
fn open_reasoning(blocks: &mut Vec<ReasoningBlock>) -> &mut ReasoningBlock {
    let closed = |block: &ReasoningBlock| block.signature.is_some() || block.data.is_some();
    if blocks.last().is_none_or(closed) {
        blocks.push(ReasoningBlock::default());
    }
    let last = blocks.len() - 1;
    &mut blocks[last]
}

/// What one part means.
pub(crate) enum Piece<'a> {
    /// Visible text.
    Text(Cow<'a, str>),
    /// Unsigned thought text.
    Thought(Cow<'a, str>),
    /// A block carrying a `thoughtSignature` (for a function call, the
    /// text, or a signed thought).
    Signed(ReasoningBlock),
    /// A complete function call, arguments as JSON text.
    Call {
        id: String,
        name: String,
        arguments: String,
    },
}

/// Reads a part: a function call (after its signature block, if any), a
/// thought (signed: one block with its text; unsigned: thought text), or
/// text (followed by its signature block, if any). Parts of other kinds
/// (inline data, executable code) carry nothing Agentry can show.
pub(crate) fn read_part<'a>(part: WirePart<'a>, ids: &mut CallIds, out: &mut impl FnMut(Piece<'a>)) {
    let signature = part.thought_signature.filter(|signature| !signature.is_empty());
    if let Some(call) = part.function_call {
        let name = call.name.map(Cow::into_owned).unwrap_or_default();
        let arguments = match call.args {
            Some(Value::Null) | None => "{}".to_owned(),
            Some(args) => args.to_string(),
        };
        let id = ids.next(call.id.as_deref(), &name, &arguments);
        if let Some(signature) = signature {
            out(Piece::Signed(signature_block(
                "function_call",
                Some(&id),
                "",
                &signature,
            )));
        }
        out(Piece::Call { id, name, arguments });
        return;
    }
    let text = part.text.unwrap_or_default();
    if part.thought == Some(true) {
        match signature {
            Some(signature) => out(Piece::Signed(signature_block("thought", None, &text, &signature))),
            None if !text.is_empty() => out(Piece::Thought(text)),
            None => {}
        }
        return;
    }
    if !text.is_empty() {
        out(Piece::Text(text));
    }
    if let Some(signature) = signature {
        out(Piece::Signed(signature_block("text", None, "", &signature)));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agent_core::{LlmErrorKind, StopReason, Usage};
    use serde_json::json;

    use super::*;

    fn parse(value: &Value) -> Result<ChatResponse, LlmError> {
        parse_response(value.to_string().as_bytes())
    }

    fn reply(parts: &Value, finish_reason: &str) -> Value {
        json!({
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish_reason, "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 4, "totalTokenCount": 14},
            "modelVersion": "gemini-2.5-flash",
            "responseId": "resp-1"
        })
    }

    #[test]
    fn text_thoughts_and_signatures_are_separated() {
        let parts = json!([
            {"text": "Let me think.", "thought": true},
            {"text": " More.", "thought": true},
            {"text": "The answer"},
            {"text": " is 4.", "thoughtSignature": "SIG"}
        ]);
        let response = parse(&reply(&parts, "STOP")).unwrap();
        assert_eq!(response.message.content, "The answer is 4.");
        assert_eq!(response.message.reasoning.len(), 2);
        assert_eq!(response.message.reasoning[0].text, "Let me think. More.");
        assert_eq!(response.message.reasoning[0].signature, None);
        assert_eq!(response.message.reasoning[1].signature.as_deref(), Some("SIG"));
        assert_eq!(response.message.reasoning[1].data, Some(json!({"gemini_part": "text"})));
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        assert_eq!(response.usage, Usage::new(10, 4));
        assert_eq!(response.model, "gemini-2.5-flash");
        assert_eq!(response.id.as_deref(), Some("resp-1"));
    }

    #[test]
    fn calls_get_stable_ids_and_their_signatures_name_them() {
        let parts = json!([
            {"functionCall": {"name": "print", "args": {"text": "hi"}}, "thoughtSignature": "SIG1"},
            {"functionCall": {"name": "beep", "args": {}}},
            {"functionCall": {"id": "own-id", "name": "beep"}}
        ]);
        let body = reply(&parts, "STOP");
        let response = parse(&body).unwrap();
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        let ids: Vec<&str> = response
            .message
            .tool_calls
            .iter()
            .map(|call| call.id.as_str())
            .collect();
        assert_eq!(ids, ["gemini_synth_resp-1_0", "gemini_synth_resp-1_1", "own-id"]);
        assert_eq!(response.message.tool_calls[2].arguments, json!({}));
        assert_eq!(
            response.message.reasoning[0].data,
            Some(json!({"gemini_part": "function_call", "call_id": "gemini_synth_resp-1_0"}))
        );
        assert_eq!(parse(&body).unwrap(), response, "the same reply maps to the same ids");

        let mut anonymous = body.clone();
        anonymous.as_object_mut().unwrap().remove("responseId");
        let first = parse(&anonymous).unwrap().message.tool_calls;
        let again = parse(&anonymous).unwrap().message.tool_calls;
        assert_eq!(first, again);
        assert_ne!(first[0].id, first[1].id);
        assert!(first[0].id.starts_with("gemini_synth_"));
    }

    #[test]
    fn max_tokens_without_parts_maps_to_an_empty_reply() {
        let body = json!({"candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS", "index": 0}],
            "usageMetadata": {"promptTokenCount": 7, "thoughtsTokenCount": 19, "totalTokenCount": 26}});
        let response = parse(&body).unwrap();
        assert_eq!(response.stop_reason, StopReason::MaxTokens);
        assert!(response.message.content.is_empty());
        assert_eq!(response.usage.output_tokens, 19);
        assert_eq!(response.usage.reasoning_tokens, 19);
    }

    #[test]
    fn a_malformed_call_is_a_model_output_fault_carrying_the_finish_message() {
        let body = json!({"candidates": [{"content": {"parts": []}, "finishReason": "MALFORMED_FUNCTION_CALL",
            "finishMessage": "Malformed function call: print(text=\"hi\""}],
            "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10}});
        let error = parse(&body).unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::MalformedToolCall);
        assert!(!error.is_retryable());
        assert!(error.message.contains("MALFORMED_FUNCTION_CALL"), "{}", error.message);
        assert!(error.message.contains("print(text=\"hi\""), "{}", error.message);

        // Without a finishMessage the fault is still named.
        let bare = json!({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL"}]});
        let error = parse(&bare).unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::MalformedToolCall);
        assert!(error.message.contains("MALFORMED_FUNCTION_CALL"), "{}", error.message);

        // A call where none may be made is no malformed call: still a decode error.
        let unexpected = json!({"candidates": [{"finishReason": "UNEXPECTED_TOOL_CALL", "finishMessage": "no tools"}]});
        assert_eq!(parse(&unexpected).unwrap_err().kind, LlmErrorKind::Decode);
    }

    #[test]
    fn error_bodies_blocked_prompts_and_garbage_are_errors() {
        let error =
            parse(&json!({"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}})).unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
        let error = parse(&json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}})).unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
        assert!(error.message.contains("PROHIBITED_CONTENT"));
        let error = parse(&json!({"candidates": []})).unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Decode);
        let error = parse_response(b"<html>502</html>").unwrap_err();
        assert_eq!(error.kind, LlmErrorKind::Decode);
        assert!(error.message.contains("<html>502"));
    }
}
