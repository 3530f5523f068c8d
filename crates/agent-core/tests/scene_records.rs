//! The records scenes and handoffs add: serde shapes that leave the
//! existing JSON unchanged when they are not used.

use agent_core::{AgentEvent, CallPurpose, DelegatedUsage, ToolCallRecord, Usage};
use serde_json::json;

#[test]
fn scene_entered_round_trips_and_omits_an_absent_request() {
    let event = AgentEvent::SceneEntered {
        scene: "Calculator".into(),
        requested: Some("calcualtor".into()),
    };
    let value = serde_json::to_value(&event).unwrap_or_default();
    assert_eq!(
        value,
        json!({"type": "scene_entered", "scene": "Calculator", "requested": "calcualtor"})
    );
    assert_eq!(serde_json::from_value::<AgentEvent>(value).ok(), Some(event));
    let default = AgentEvent::SceneEntered {
        scene: "General".into(),
        requested: None,
    };
    let value = serde_json::to_value(&default).unwrap_or_default();
    assert_eq!(value, json!({"type": "scene_entered", "scene": "General"}));
}

#[test]
fn routing_calls_and_delegated_usage_serialise_only_when_present() {
    assert_eq!(
        serde_json::to_value(CallPurpose::Routing).unwrap_or_default(),
        json!("routing")
    );
    assert!(!CallPurpose::Routing.is_chat());
    let record = ToolCallRecord {
        id: "c".into(),
        name: "ask_expert".into(),
        arguments: json!({"task": "x"}),
        result: "y".into(),
        is_error: false,
        duration_ms: 1,
        iteration: 1,
        duplicate_of: None,
        cached: false,
        delegated_usage: None,
    };
    let plain = serde_json::to_value(&record).unwrap_or_default();
    assert!(plain.get("delegated_usage").is_none(), "{plain}");
    let with = ToolCallRecord {
        delegated_usage: Some(DelegatedUsage::new(Usage::new(20, 4), Some(0.5))),
        ..record
    };
    let value = serde_json::to_value(&with).unwrap_or_default();
    assert_eq!(value["delegated_usage"]["usage"]["input_tokens"], json!(20));
    assert_eq!(value["delegated_usage"]["cost_usd"], json!(0.5));
    assert_eq!(serde_json::from_value::<ToolCallRecord>(value).ok(), Some(with));
}
