//! Wire types shared by whole responses and stream chunks (a stream chunk
//! *is* a `GenerateContentResponse`), plus what both mappings agree on:
//! usage, finish reasons, call ids, thought signatures, error objects.

use std::borrow::Cow;

use agent_core::{LlmError, LlmErrorKind, ReasoningBlock, StopReason, Usage};
use serde::Deserialize;
use serde_json::{Value, json};

/// The prefix of call ids this crate makes up when Gemini gives none. A call
/// id with this prefix is never sent back to Gemini (its `functionCall` and
/// `functionResponse` parts go without `id`, as Gemini sent them).
pub const SYNTHETIC_ID_PREFIX: &str = "gemini_synth_";

/// `GenerateContentResponse` (or one stream chunk of it).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireResponse<'a> {
    #[serde(default, borrow)]
    pub(crate) candidates: Option<Vec<WireCandidate<'a>>>,
    #[serde(default)]
    pub(crate) prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    pub(crate) usage_metadata: Option<WireUsage>,
    #[serde(default, borrow)]
    pub(crate) model_version: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) response_id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(crate) error: Option<Box<Value>>,
}

impl<'a> WireResponse<'a> {
    /// The first candidate (index 0, or the first one when none says its
    /// index). Gemini returns one unless `candidateCount` asks for more.
    pub(crate) fn take_candidate(&mut self) -> Option<WireCandidate<'a>> {
        let candidates = self.candidates.as_mut()?;
        let position = candidates
            .iter()
            .position(|candidate| candidate.index.unwrap_or(0) == 0)
            .unwrap_or(0);
        (position < candidates.len()).then(|| candidates.swap_remove(position))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireCandidate<'a> {
    #[serde(default, borrow)]
    pub(crate) content: Option<WireContent<'a>>,
    #[serde(default, borrow)]
    pub(crate) finish_reason: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) finish_message: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(crate) index: Option<u32>,
}

#[derive(Deserialize)]
pub(crate) struct WireContent<'a> {
    #[serde(default, borrow)]
    pub(crate) parts: Option<Vec<WirePart<'a>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WirePart<'a> {
    #[serde(default, borrow)]
    pub(crate) text: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(crate) thought: Option<bool>,
    #[serde(default, borrow)]
    pub(crate) thought_signature: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) function_call: Option<WireFunctionCall<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireFunctionCall<'a> {
    #[serde(default, borrow)]
    pub(crate) id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) name: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(crate) args: Option<Value>,
    /// Vertex AI's streamed arguments (`streamFunctionCallArguments`).
    #[serde(default)]
    pub(crate) partial_args: Option<Vec<PartialArg>>,
    #[serde(default)]
    pub(crate) will_continue: Option<bool>,
}

/// One piece of streamed arguments: a value (or a piece of a string) at a
/// JSON path such as `$.location` or `$.stops[1].city`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PartialArg {
    #[serde(default)]
    pub(crate) json_path: String,
    #[serde(default)]
    pub(crate) string_value: Option<String>,
    #[serde(default)]
    pub(crate) number_value: Option<serde_json::Number>,
    #[serde(default)]
    pub(crate) bool_value: Option<bool>,
    #[serde(default)]
    pub(crate) null_value: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptFeedback {
    #[serde(default)]
    pub(crate) block_reason: Option<String>,
    #[serde(default)]
    pub(crate) block_reason_message: Option<String>,
}

/// `usageMetadata` (field names as on the wire).
#[allow(clippy::struct_field_names)]
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireUsage {
    #[serde(default)]
    prompt_token_count: Option<u64>,
    #[serde(default)]
    candidates_token_count: Option<u64>,
    #[serde(default)]
    thoughts_token_count: Option<u64>,
    #[serde(default)]
    cached_content_token_count: Option<u64>,
    #[serde(default)]
    tool_use_prompt_token_count: Option<u64>,
}

impl WireUsage {
    /// Normalised usage: `promptTokenCount` already counts cached tokens;
    /// tool-use prompt tokens are input too; thoughts are output (and
    /// reported apart as reasoning tokens).
    pub(crate) fn to_usage(self) -> Usage {
        let thoughts = self.thoughts_token_count.unwrap_or(0);
        Usage {
            input_tokens: self.prompt_token_count.unwrap_or(0) + self.tool_use_prompt_token_count.unwrap_or(0),
            output_tokens: self.candidates_token_count.unwrap_or(0) + thoughts,
            cache_read_tokens: self.cached_content_token_count.unwrap_or(0),
            cache_write_tokens: 0,
            reasoning_tokens: thoughts,
        }
    }
}

/// What a `finishReason` means for the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Finish {
    /// A normal stop ([`StopReason`] decided with the tool calls in view).
    Stop(StopReason),
    /// The model's function call could not be used: no reply, this error.
    BadCall(LlmError),
}

/// Maps a `finishReason` to its meaning. `STOP` (and unknown or missing
/// reasons) end the turn, or ask for tools when the reply holds function
/// calls; safety-type reasons are a content filter. A function call Gemini
/// could not parse (`MALFORMED_FUNCTION_CALL`) is a fault of the model's
/// output ([`LlmErrorKind::MalformedToolCall`]), which the agent loop asks
/// the model to correct; its message is `finishMessage`, the words the
/// model is shown. A call where none may be made (`UNEXPECTED_TOOL_CALL`)
/// or too many calls (`TOO_MANY_TOOL_CALLS`) remain decode errors.
pub(crate) fn finish(reason: Option<&str>, message: Option<&str>, has_calls: bool) -> Finish {
    let default = if has_calls {
        StopReason::ToolUse
    } else {
        StopReason::EndTurn
    };
    let detail = || {
        message
            .map(str::trim)
            .filter(|message| !message.is_empty())
            .unwrap_or("Gemini gave no finishMessage")
    };
    match reason.unwrap_or_default() {
        "MAX_TOKENS" => Finish::Stop(StopReason::MaxTokens),
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION"
        | "LANGUAGE" => Finish::Stop(StopReason::ContentFilter),
        "MALFORMED_FUNCTION_CALL" => Finish::BadCall(LlmError::malformed_tool_call(format!(
            "the function call could not be parsed (finishReason MALFORMED_FUNCTION_CALL): {}",
            detail()
        ))),
        reason @ ("UNEXPECTED_TOOL_CALL" | "TOO_MANY_TOOL_CALLS") => Finish::BadCall(LlmError::decode(format!(
            "Gemini could not produce a usable function call (finishReason {reason}): {}",
            detail()
        ))),
        _ => Finish::Stop(default),
    }
}

/// A prompt that Gemini refused to answer at all (`promptFeedback.blockReason`,
/// no candidates): an error, since there is no reply to return.
pub(crate) fn blocked_prompt(feedback: &PromptFeedback) -> Option<LlmError> {
    let reason = feedback.block_reason.as_deref().filter(|reason| !reason.is_empty())?;
    let detail = feedback
        .block_reason_message
        .as_deref()
        .map(|message| format!(": {message}"))
        .unwrap_or_default();
    Some(LlmError::invalid_request(format!(
        "Gemini blocked the prompt (promptFeedback.blockReason {reason}){detail}; no reply was generated. \
         Rephrase the request or adjust the safety settings"
    )))
}

/// Makes up stable call ids for function calls that came without one:
/// `gemini_synth_{responseId}_{n}` (the n-th call of the reply), or, with no
/// `responseId`, `gemini_synth_{hash}_{n}` where the hash covers the call's
/// name and arguments. No randomness and no clock: the same reply always
/// gets the same ids, streamed or not.
#[derive(Debug, Default, Clone)]
pub(crate) struct CallIds {
    response_id: Option<String>,
    calls: usize,
}

impl CallIds {
    /// Uses `response_id` (the first one seen) in made-up ids.
    pub(crate) fn set_response_id(&mut self, response_id: Option<&str>) {
        if self.response_id.is_none() {
            self.response_id = response_id.filter(|id| !id.is_empty()).map(str::to_owned);
        }
    }

    /// The id of the next call: Gemini's own when it gave one.
    pub(crate) fn next(&mut self, given: Option<&str>, name: &str, arguments: &str) -> String {
        let n = self.calls;
        self.calls += 1;
        if let Some(id) = given.filter(|id| !id.is_empty()) {
            return id.to_owned();
        }
        match &self.response_id {
            Some(response_id) => format!("{SYNTHETIC_ID_PREFIX}{response_id}_{n}"),
            None => format!("{SYNTHETIC_ID_PREFIX}{:016x}_{n}", fnv1a(&[name, "\u{0}", arguments])),
        }
    }
}

/// Whether a call id was made up here (and so is not sent back).
pub(crate) fn is_synthetic(id: &str) -> bool {
    id.starts_with(SYNTHETIC_ID_PREFIX)
}

fn fnv1a(pieces: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for piece in pieces {
        for byte in piece.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// The `data` of a [`ReasoningBlock`] that carries a `thoughtSignature`,
/// saying which part the signature came on (and goes back on):
/// `{"gemini_part": "function_call", "call_id": ...}`, `{"gemini_part":
/// "text"}` or `{"gemini_part": "thought"}`.
pub(crate) fn signature_block(kind: &str, call_id: Option<&str>, text: &str, signature: &str) -> ReasoningBlock {
    let data = match call_id {
        Some(id) => json!({"gemini_part": kind, "call_id": id}),
        None => json!({"gemini_part": kind}),
    };
    ReasoningBlock {
        text: text.to_owned(),
        signature: Some(signature.to_owned()),
        data: Some(data),
        provider: None,
    }
}

/// Turns an `{"error": {"code", "message", "status"}}` object (a 200 body
/// or a stream chunk) into an [`LlmError`], keeping Google's words.
pub(crate) fn error_from_object(raw: &[u8], error: &Value) -> LlmError {
    let message = agent_http::error::provider_message(raw);
    let status = error.get("status").and_then(Value::as_str).unwrap_or_default();
    let code = error.get("code").and_then(Value::as_u64);
    let kind = match (status, code) {
        ("RESOURCE_EXHAUSTED", _) | (_, Some(429)) => LlmErrorKind::RateLimited,
        ("UNAUTHENTICATED" | "PERMISSION_DENIED", _) | (_, Some(401 | 403)) => LlmErrorKind::Auth,
        ("UNAVAILABLE", _) | (_, Some(503)) => LlmErrorKind::Overloaded,
        ("DEADLINE_EXCEEDED", _) | (_, Some(504)) => LlmErrorKind::Timeout,
        ("CANCELLED", _) | (_, Some(499)) => LlmErrorKind::Server,
        ("INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "NOT_FOUND", _) | (_, Some(400..=499)) => {
            LlmErrorKind::InvalidRequest
        }
        _ => LlmErrorKind::Server,
    };
    let mut error = LlmError::new(kind, message);
    if let Some(code) = code.and_then(|code| u16::try_from(code).ok()) {
        error = error.with_status(code);
    }
    error
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_cached_tool_prompt_and_thought_tokens() {
        let usage: WireUsage = serde_json::from_str(
            r#"{"promptTokenCount":120,"candidatesTokenCount":20,"thoughtsTokenCount":179,
                "cachedContentTokenCount":100,"toolUsePromptTokenCount":7,"totalTokenCount":326}"#,
        )
        .unwrap();
        assert_eq!(
            usage.to_usage(),
            Usage {
                input_tokens: 127,
                output_tokens: 199,
                cache_read_tokens: 100,
                cache_write_tokens: 0,
                reasoning_tokens: 179,
            }
        );
        let empty: WireUsage = serde_json::from_str("{}").unwrap();
        assert!(empty.to_usage().is_empty());
    }

    #[test]
    fn finish_reasons_map_as_documented() {
        assert_eq!(finish(Some("STOP"), None, false), Finish::Stop(StopReason::EndTurn));
        assert_eq!(finish(Some("STOP"), None, true), Finish::Stop(StopReason::ToolUse));
        assert_eq!(
            finish(Some("MAX_TOKENS"), None, true),
            Finish::Stop(StopReason::MaxTokens)
        );
        for reason in [
            "SAFETY",
            "RECITATION",
            "BLOCKLIST",
            "PROHIBITED_CONTENT",
            "SPII",
            "IMAGE_SAFETY",
        ] {
            assert_eq!(
                finish(Some(reason), None, false),
                Finish::Stop(StopReason::ContentFilter),
                "{reason}"
            );
        }
        assert_eq!(
            finish(Some("SOMETHING_NEW"), None, false),
            Finish::Stop(StopReason::EndTurn)
        );
        assert_eq!(finish(Some("OTHER"), None, true), Finish::Stop(StopReason::ToolUse));
        assert_eq!(finish(None, None, false), Finish::Stop(StopReason::EndTurn));
        let Finish::BadCall(error) = finish(
            Some("MALFORMED_FUNCTION_CALL"),
            Some("Malformed function call: print(text='hi'"),
            false,
        ) else {
            panic!("a malformed call is an error");
        };
        assert_eq!(error.kind, LlmErrorKind::MalformedToolCall);
        assert!(error.message.contains("MALFORMED_FUNCTION_CALL"), "{}", error.message);
        assert!(error.message.contains("print(text='hi'"), "{}", error.message);
        let Finish::BadCall(error) = finish(Some("TOO_MANY_TOOL_CALLS"), None, true) else {
            panic!("too many calls is an error");
        };
        assert_eq!(error.kind, LlmErrorKind::Decode);
        assert!(error.message.contains("no finishMessage"), "{}", error.message);
    }

    #[test]
    fn synthetic_ids_are_stable_unique_and_recognisable() {
        let mut ids = CallIds::default();
        ids.set_response_id(Some("resp1"));
        ids.set_response_id(Some("ignored"));
        assert_eq!(ids.next(None, "f", "{}"), "gemini_synth_resp1_0");
        assert_eq!(ids.next(Some("given"), "f", "{}"), "given");
        assert_eq!(ids.next(Some(""), "f", "{}"), "gemini_synth_resp1_2");
        let hashed = |args: &str| CallIds::default().next(None, "f", args);
        assert_eq!(hashed("{\"a\":1}"), hashed("{\"a\":1}"));
        assert_ne!(hashed("{\"a\":1}"), hashed("{\"a\":2}"));
        assert!(is_synthetic(&hashed("{}")));
        assert!(!is_synthetic("call_123"));
    }

    #[test]
    fn error_objects_are_classified_by_status() {
        let classify = |raw: &str| {
            let value: Value = serde_json::from_str(raw).unwrap();
            error_from_object(raw.as_bytes(), &value["error"])
        };
        let error = classify(r#"{"error":{"code":500,"message":"Error","status":"INTERNAL"}}"#);
        assert_eq!((error.kind, error.status), (LlmErrorKind::Server, Some(500)));
        assert_eq!(error.message, "INTERNAL: Error");
        let error = classify(r#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}"#);
        assert_eq!(error.kind, LlmErrorKind::RateLimited);
        let error = classify(r#"{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}"#);
        assert_eq!(error.kind, LlmErrorKind::InvalidRequest);
        let error = classify(r#"{"error":{"code":503,"message":"busy","status":"UNAVAILABLE"}}"#);
        assert_eq!(error.kind, LlmErrorKind::Overloaded);
        let error = classify(r#"{"error":{"code":403,"message":"no","status":"PERMISSION_DENIED"}}"#);
        assert_eq!(error.kind, LlmErrorKind::Auth);
    }

    #[test]
    fn blocked_prompts_name_the_reason() {
        let feedback: PromptFeedback = serde_json::from_str(r#"{"blockReason":"SAFETY","safetyRatings":[]}"#).unwrap();
        let error = blocked_prompt(&feedback).unwrap();
        assert!(error.message.contains("blockReason SAFETY"), "{}", error.message);
        let fine: PromptFeedback = serde_json::from_str("{}").unwrap();
        assert!(blocked_prompt(&fine).is_none());
    }
}
