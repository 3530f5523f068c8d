//! Enforcing a request's `tool_choice` on a local model.
//!
//! A local model has no API switch for "you must call a tool", so the
//! provider enforces it while generating: a required call is generated
//! under the tool-call grammar from the first token, so it is a call of an
//! offered tool with schema-valid arguments. Should the grammar be
//! unavailable, the reply is started for the model (prefilled) with the
//! opening of a call instead, which it can only continue as one.

use agent_core::{ChatRequest, LlmError, Message, ToolChoice, ToolDefinition};

/// How one request constrains the tool calls of the reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallPlan {
    /// Tools whose calls are read out of the reply (empty: the reply is text).
    pub callable: Vec<ToolDefinition>,
    /// Ban the tool-call opening token (`tool_choice = none`).
    pub suppress_tool_calls: bool,
    /// A call is required: the grammar applies from the first token.
    pub required: bool,
    /// For a required call: the text the reply is made to start with when no
    /// grammar is available.
    pub prefill: Option<String>,
    /// The model may call a tool or answer, and the reply answers a user
    /// message: whether it is a call is decided from the model's odds of
    /// starting one (`call_threshold`). After tool results the model
    /// decides by its first token, as it does without tools.
    pub decided_by_odds: bool,
}

impl CallPlan {
    /// The plan for `request`. `tagged`: the model has a `<tool_call>` token.
    pub fn for_request(request: &ChatRequest, tagged: bool) -> Result<Self, LlmError> {
        let callable: Vec<ToolDefinition> = request.callable_tools()?.into_iter().cloned().collect();
        let required =
            !callable.is_empty() && matches!(request.tool_choice, ToolChoice::Required | ToolChoice::Tool { .. });
        let prefill = required.then(|| {
            let opening = if tagged { "<tool_call>\n" } else { "" };
            match &request.tool_choice {
                ToolChoice::Tool { name } => {
                    let name = serde_json::Value::String(name.clone());
                    format!("{opening}{{\"name\": {name}, \"arguments\": {{")
                }
                _ => format!("{opening}{{\"name\": \""),
            }
        });
        let suppress_tool_calls = request.tool_choice == ToolChoice::None;
        let answers_user = matches!(request.messages.last(), Some(Message::User { .. }));
        Ok(Self {
            decided_by_odds: answers_user && !callable.is_empty() && !required && !suppress_tool_calls,
            callable,
            suppress_tool_calls,
            required,
            prefill,
        })
    }

    /// Names of the tools whose calls are read out of the reply.
    pub fn callable_names(&self) -> Vec<String> {
        self.callable.iter().map(|tool| tool.name.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use agent_core::{AssistantMessage, ToolCall, ToolResult};
    use serde_json::json;

    use super::*;

    fn request(choice: ToolChoice) -> ChatRequest {
        let mut request = ChatRequest::new(vec![Message::user("hi")]);
        request.tools = vec![
            ToolDefinition::new("calculator", "Math.", json!({"type": "object"})),
            ToolDefinition::new("get_weather", "Weather.", json!({"type": "object"})),
        ]
        .into();
        request.tool_choice = choice;
        request
    }

    #[test]
    fn auto_reads_every_tool_and_forces_nothing() {
        let plan = CallPlan::for_request(&request(ToolChoice::Auto), true).expect("plan");
        assert_eq!(plan.callable_names(), ["calculator", "get_weather"]);
        assert!(!plan.required && !plan.suppress_tool_calls);
        assert_eq!(plan.prefill, None);
    }

    #[test]
    fn only_a_free_reply_to_a_user_message_is_decided_by_the_odds_of_a_call() {
        assert!(
            CallPlan::for_request(&request(ToolChoice::Auto), true)
                .expect("plan")
                .decided_by_odds
        );
        for choice in [ToolChoice::None, ToolChoice::Required] {
            let plan = CallPlan::for_request(&request(choice), true).expect("plan");
            assert!(!plan.decided_by_odds, "{plan:?}");
        }
        let mut after_result = request(ToolChoice::Auto);
        after_result
            .messages
            .push(Message::Assistant(AssistantMessage::with_tool_calls(
                "",
                vec![ToolCall::new("call_1", "calculator", json!({"expression": "1+1"}))],
            )));
        after_result
            .messages
            .push(Message::tool(ToolResult::success("call_1", "calculator", "2")));
        let plan = CallPlan::for_request(&after_result, true).expect("plan");
        assert!(!plan.decided_by_odds, "{plan:?}");
        let mut without_tools = request(ToolChoice::Auto);
        without_tools.tools = std::sync::Arc::default();
        let plan = CallPlan::for_request(&without_tools, true).expect("plan");
        assert!(!plan.decided_by_odds, "{plan:?}");
    }

    #[test]
    fn none_reads_no_call_and_bans_the_opening() {
        let plan = CallPlan::for_request(&request(ToolChoice::None), true).expect("plan");
        assert!(plan.callable.is_empty());
        assert!(plan.suppress_tool_calls && !plan.required);
        assert_eq!(plan.prefill, None);
    }

    #[test]
    fn required_starts_the_reply_with_a_call_opening() {
        let tagged = CallPlan::for_request(&request(ToolChoice::Required), true).expect("plan");
        assert!(tagged.required);
        assert_eq!(tagged.prefill.as_deref(), Some("<tool_call>\n{\"name\": \""));
        let bare = CallPlan::for_request(&request(ToolChoice::Required), false).expect("plan");
        assert_eq!(bare.prefill.as_deref(), Some("{\"name\": \""));
    }

    #[test]
    fn a_named_tool_is_prefilled_with_its_name_and_is_the_only_one_read() {
        let choice = ToolChoice::Tool {
            name: "get_weather".into(),
        };
        let plan = CallPlan::for_request(&request(choice), true).expect("plan");
        assert_eq!(plan.callable_names(), ["get_weather"]);
        assert_eq!(
            plan.prefill.as_deref(),
            Some("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {")
        );
    }

    #[test]
    fn a_forced_call_without_tools_forces_nothing() {
        let mut request = request(ToolChoice::Required);
        request.tools = std::sync::Arc::default();
        let plan = CallPlan::for_request(&request, true).expect("plan");
        assert!(!plan.required);
        assert_eq!(plan.prefill, None);
    }

    #[test]
    fn naming_an_unknown_tool_is_a_clear_error() {
        let choice = ToolChoice::Tool { name: "search".into() };
        let error = CallPlan::for_request(&request(choice), true).expect_err("unknown tool");
        assert!(
            error.message.contains("`search`") && error.message.contains("calculator, get_weather"),
            "{error}"
        );
    }
}
