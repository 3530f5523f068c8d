//! Every DTO survives a JSON round trip unchanged.

use agent_core::{
    AgentEvent, AgentRunResult, AssistantMessage, CallPurpose, Capabilities, ChatRequest, ChatResponse,
    CompactionRecord, CompactionTrigger, LlmError, LlmErrorKind, Message, ModelCallRecord, ModelProgress,
    ReasoningBlock, ResponseFormat, RunEnd, StopReason, StreamEvent, ToolCall, ToolCallRecord, ToolChoice,
    ToolDefinition, ToolOutput, ToolResult, Usage,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) {
    let text = serde_json::to_string(value).unwrap_or_else(|e| panic!("serialize {value:?}: {e}"));
    let back: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("deserialize {text}: {e}"));
    assert_eq!(&back, value, "{text}");
}

fn conversation() -> Vec<Message> {
    vec![
        Message::system("be brief"),
        Message::user("weather in Tokyo and 2+2?"),
        Message::Assistant(AssistantMessage {
            content: "Checking.".into(),
            tool_calls: vec![
                ToolCall::new(
                    "call_1",
                    "get_weather",
                    json!({"location": "Tokyo", "units": "celsius"}),
                ),
                ToolCall::from_argument_text("call_2", "calculator", "{not json"),
            ],
            reasoning: vec![ReasoningBlock {
                text: "need two tools".into(),
                signature: Some("c2lnbmF0dXJl".into()),
                data: Some(json!({"encrypted": "xyz"})),
                provider: Some("anthropic".into()),
            }],
        }),
        Message::tool(ToolResult::success("call_1", "get_weather", r#"{"temp":21}"#)),
        Message::tool(ToolResult::error(
            "call_2",
            "calculator",
            "arguments are not valid JSON",
        )),
        Message::assistant("21°C in Tokyo."),
    ]
}

#[test]
fn messages_and_requests_round_trip() {
    for message in conversation() {
        round_trip(&message);
    }
    let request = ChatRequest {
        model: Some("gpt-4o".into()),
        system: Some("sys".into()),
        messages: conversation(),
        tools: vec![ToolDefinition::new(
            "get_weather",
            "Weather",
            json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}),
        )]
        .into(),
        tool_choice: ToolChoice::Tool {
            name: "get_weather".into(),
        },
        parallel_tool_calls: Some(true),
        max_tool_calls: Some(4),
        max_tokens: Some(100),
        temperature: Some(0.5),
        stop: vec!["Observation:".into()],
        response_format: Some(ResponseFormat {
            name: "answer".into(),
            schema: json!({"type": "object"}),
            strict: true,
        }),
        prompt_caching: true,
    };
    round_trip(&request);
    for choice in [ToolChoice::Auto, ToolChoice::None, ToolChoice::Required] {
        round_trip(&choice);
    }
}

#[test]
fn message_wire_shape_is_role_tagged() {
    let text = serde_json::to_value(Message::user("hi")).unwrap_or_default();
    assert_eq!(text, json!({"role": "user", "content": "hi"}));
    let text = serde_json::to_value(Message::tool(ToolResult::error("c", "t", "boom"))).unwrap_or_default();
    assert_eq!(
        text,
        json!({"role": "tool", "call_id": "c", "name": "t", "content": "boom", "is_error": true})
    );
}

#[test]
fn responses_events_errors_and_records_round_trip() {
    let response = ChatResponse {
        message: AssistantMessage::with_tool_calls("", vec![ToolCall::new("a", "t", json!({}))]),
        stop_reason: StopReason::ToolUse,
        usage: Usage {
            input_tokens: 5,
            output_tokens: 3,
            cache_read_tokens: 2,
            cache_write_tokens: 1,
            reasoning_tokens: 1,
        },
        model: "m".into(),
        id: Some("id".into()),
        route: None,
    };
    round_trip(&response);
    for event in agent_core::response_to_events(response.clone()) {
        round_trip(&event);
    }
    round_trip(&StreamEvent::ReasoningSignature { signature: "s".into() });
    round_trip(&Capabilities {
        native_tools: true,
        streaming: true,
        ..Capabilities::default()
    });
    round_trip(
        &LlmError::new(LlmErrorKind::RateLimited, "slow down")
            .with_status(429)
            .with_retry_after(Some(std::time::Duration::from_secs(2))),
    );
    round_trip(&ToolOutput::Json(json!({"ok": true})));
    round_trip(&ToolOutput::Text("plain".into()));

    let result = AgentRunResult {
        response: "done".into(),
        stop_reason: RunEnd::MaxIterations,
        stop_detail: Some("limit 10".into()),
        iterations: 11,
        tool_calls: vec![ToolCallRecord {
            id: "a".into(),
            name: "t".into(),
            arguments: json!({"x": 1}),
            result: "2".into(),
            is_error: false,
            duration_ms: 3,
            duplicate_of: Some("a".into()),
            cached: true,
            iteration: 1,
            delegated_usage: Some(agent_core::DelegatedUsage::new(Usage::new(7, 3), Some(0.01))),
        }],
        model_calls: vec![ModelCallRecord {
            iteration: 1,
            model: "m".into(),
            usage: Usage::new(1, 2),
            cost_usd: Some(0.5),
            stop_reason: StopReason::EndTurn,
            duration_ms: 9,
            purpose: CallPurpose::Chat,
            route: None,
        }],
        usage: Usage::new(1, 2),
        cost_usd: None,
        provider: "p".into(),
        model: "m".into(),
        messages: conversation(),
        compactions: Vec::new(),
        pending_approvals: Vec::new(),
        scene: None,
        grounding: None,
        guardrail: None,
    };
    round_trip(&result);
    let compacted = AgentRunResult {
        model_calls: vec![
            ModelCallRecord {
                purpose: CallPurpose::Summary,
                ..result.model_calls[0].clone()
            },
            ModelCallRecord {
                route: Some(agent_core::Route {
                    provider: "second".into(),
                    model: "m".into(),
                    failed: vec![agent_core::ProviderAttempt {
                        provider: "first".into(),
                        model: "m".into(),
                        error: agent_core::LlmError::new(agent_core::LlmErrorKind::CircuitOpen, "open"),
                        duration_ms: 0,
                    }],
                }),
                ..result.model_calls[0].clone()
            },
        ],
        compactions: vec![compaction()],
        pending_approvals: Vec::new(),
        scene: None,
        grounding: None,
        ..result.clone()
    };
    round_trip(&compacted);
    let record = compaction();
    round_trip(&AgentEvent::ContextCompacted {
        iteration: record.iteration,
        trigger: record.trigger,
        estimated_tokens_before: record.estimated_tokens_before,
        estimated_tokens_after: record.estimated_tokens_after,
        elided_results: record.elided_results,
        elided_bytes: record.elided_bytes,
        replaced_messages: record.replaced_messages,
        summary_calls: record.summary_calls,
        summary_usage: record.summary_usage,
    });
    round_trip(&AgentEvent::LoopDetected { iteration: 2 });
    round_trip(&AgentEvent::ModelRequestStarted {
        iteration: 1,
        tool_choice: ToolChoice::None,
    });
    round_trip(&AgentEvent::RunFinished {
        result: Box::new(result),
    });
    let writing = AgentEvent::ModelProgress {
        progress: ModelProgress::Writing {
            tokens: 37,
            elapsed_ms: 3000,
        },
    };
    round_trip(&writing);
    assert_eq!(
        serde_json::to_value(&writing).unwrap_or_default(),
        json!({"type": "model_progress", "progress": {"phase": "writing", "tokens": 37, "elapsed_ms": 3000}})
    );
    round_trip(&AgentEvent::ModelProgress {
        progress: ModelProgress::ReadingPrompt { done: 512, total: 2045 },
    });
    assert_eq!(
        serde_json::to_value(RunEnd::BudgetExceeded).unwrap_or_default(),
        json!("budget_exceeded")
    );
}

/// Records saved before the tool-result cache existed still load (not
/// cached), and a call that ran writes no `cached` field.
#[test]
fn tool_call_records_without_cached_read_as_run() {
    let old = json!({
        "id": "a", "name": "t", "arguments": {"x": 1}, "result": "2",
        "is_error": false, "duration_ms": 3, "iteration": 1
    });
    let record: ToolCallRecord = serde_json::from_value(old.clone()).unwrap_or_else(|e| panic!("{e}"));
    assert!(!record.cached);
    assert_eq!(serde_json::to_value(&record).unwrap_or_default(), old);
    let cached = ToolCallRecord { cached: true, ..record };
    assert_eq!(serde_json::to_value(&cached).unwrap_or_default()["cached"], json!(true));
}

fn compaction() -> CompactionRecord {
    CompactionRecord {
        trigger: CompactionTrigger::ContextLengthError,
        iteration: 3,
        estimated_tokens_before: 9000,
        estimated_tokens_after: 1200,
        elided_results: 2,
        elided_bytes: 20_000,
        replaced_messages: 4,
        summary: Some("Summary of the earlier conversation:\nThe user asked.".into()),
        summary_calls: 1,
        summary_usage: Usage::new(900, 40),
    }
}

/// Records and results written before compaction existed still load, and
/// ones without a compaction or a summary call are written as before.
#[test]
fn records_without_compaction_fields_read_and_write_as_before() {
    let old_call = json!({
        "iteration": 1, "model": "m", "usage": {"input_tokens": 1, "output_tokens": 2},
        "cost_usd": null, "stop_reason": "end_turn", "duration_ms": 9
    });
    let call: ModelCallRecord = serde_json::from_value(old_call).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(call.purpose, CallPurpose::Chat);
    let written = serde_json::to_value(&call).unwrap_or_default();
    assert_eq!(written.get("purpose"), None);
    let summary = ModelCallRecord {
        purpose: CallPurpose::Summary,
        ..call
    };
    assert_eq!(
        serde_json::to_value(&summary).unwrap_or_default()["purpose"],
        json!("summary")
    );

    let old_result = json!({
        "response": "done", "stop_reason": "completed", "iterations": 1, "tool_calls": [],
        "model_calls": [], "usage": {}, "cost_usd": null, "provider": "p", "model": "m", "messages": []
    });
    let result: AgentRunResult = serde_json::from_value(old_result).unwrap_or_else(|e| panic!("{e}"));
    assert!(result.compactions.is_empty());
    assert_eq!(
        serde_json::to_value(&result).unwrap_or_default().get("compactions"),
        None
    );
    assert_eq!(
        serde_json::to_value(CompactionTrigger::ContextLengthError).unwrap_or_default(),
        json!("context_length_error")
    );
}

/// The messages a run added are found after its compactions: each summary
/// replaced leading messages of the history with one message.
#[test]
fn the_added_messages_are_found_after_compactions() {
    let run_messages = vec![
        Message::system("Summary of the earlier conversation:\nsecond"),
        Message::user("recent"),
        Message::assistant("ok"),
        Message::user("new question"),
        Message::assistant("answer"),
    ];
    let first = CompactionRecord {
        replaced_messages: 5,
        ..compaction()
    };
    let second = CompactionRecord {
        replaced_messages: 3,
        ..compaction()
    };
    let elided_only = CompactionRecord {
        replaced_messages: 0,
        summary: None,
        ..compaction()
    };
    let result = |compactions: Vec<CompactionRecord>| AgentRunResult {
        response: "answer".into(),
        stop_reason: RunEnd::Completed,
        stop_detail: None,
        iterations: 1,
        tool_calls: Vec::new(),
        model_calls: Vec::new(),
        usage: Usage::default(),
        cost_usd: None,
        provider: "p".into(),
        model: "m".into(),
        messages: run_messages.clone(),
        compactions,
        pending_approvals: Vec::new(),
        scene: None,
        grounding: None,
        guardrail: None,
    };
    // A history of 9: the first summary left 1 + 4, the second replaced
    // that summary and 2 more, leaving 1 + 2; the run's messages start at 3.
    let compacted = result(vec![first.clone(), elided_only.clone(), second]);
    assert_eq!(compacted.added_messages_start(9), Some(3));
    assert_eq!(compacted.messages[3], Message::user("new question"));
    assert_eq!(result(vec![elided_only]).added_messages_start(3), Some(3));
    assert_eq!(result(Vec::new()).added_messages_start(5), None, "past the end");
    assert_eq!(
        result(vec![first]).added_messages_start(4),
        None,
        "more replaced than the history had"
    );
}
