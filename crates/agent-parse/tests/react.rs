//! ReAct step parsing.

use agent_parse::{ReactKind, parse_react_step};
use serde_json::json;

fn action(tool: &str, input: serde_json::Value) -> ReactKind {
    ReactKind::Action {
        tool: tool.into(),
        input,
    }
}

#[test]
fn thought_action_input() {
    let step = parse_react_step("Thought: look it up\nAction: search\nAction Input: {\"q\": \"rust\"}");
    assert_eq!(step.thought.as_deref(), Some("look it up"));
    assert_eq!(step.kind, action("search", json!({"q": "rust"})));
}

#[test]
fn final_answer_multiline() {
    let step = parse_react_step("Thought: I now know the final answer\nFinal Answer: Line one.\nLine two.\n");
    assert_eq!(step.kind, ReactKind::FinalAnswer("Line one.\nLine two.".into()));
}

#[test]
fn case_insensitive_labels_and_crlf() {
    let step = parse_react_step("THOUGHT: hm\r\naction: calc\r\nACTION INPUT: {\"e\": \"1+1\"}\r\n");
    assert_eq!(step.thought.as_deref(), Some("hm"));
    assert_eq!(step.kind, action("calc", json!({"e": "1+1"})));
}

#[test]
fn fake_observation_and_everything_after_is_discarded() {
    let step = parse_react_step(
        "Thought: x\nAction: calc\nAction Input: {\"e\": \"1\"}\nObservation: 1\nThought: done\nFinal Answer: 1",
    );
    assert_eq!(step.kind, action("calc", json!({"e": "1"})));
    let step = parse_react_step("Thought: x\nObservation: invented\nFinal Answer: 1");
    assert!(matches!(step.kind, ReactKind::Malformed(_)));
}

#[test]
fn first_of_action_and_final_answer_wins() {
    let step = parse_react_step("Final Answer: 42\nAction: calc");
    assert_eq!(step.kind, ReactKind::FinalAnswer("42".into()));
    let step = parse_react_step("Action: calc\nAction Input: {}\nFinal Answer: 42");
    assert_eq!(step.kind, action("calc", json!({})));
}

#[test]
fn missing_input_is_empty_object_and_plain_input_is_a_string() {
    assert_eq!(parse_react_step("Action: clock").kind, action("clock", json!({})));
    assert_eq!(
        parse_react_step("Action: search\nAction Input: the weather in Paris").kind,
        action("search", json!("the weather in Paris"))
    );
    assert_eq!(
        parse_react_step("Action: search\nAction Input: \"quoted\"").kind,
        action("search", json!("quoted"))
    );
}

#[test]
fn multiline_and_fenced_and_sloppy_input() {
    let step = parse_react_step("Action: calc\nAction Input: {\n  \"e\": \"1+1\",\n}\n");
    assert_eq!(step.kind, action("calc", json!({"e": "1+1"})));
    let step = parse_react_step("Action: calc\nAction Input:\n```json\n{\"e\": \"2\"}\n```");
    assert_eq!(step.kind, action("calc", json!({"e": "2"})));
    let step = parse_react_step("Action: calc\nAction Input: {'e': '3'}");
    assert_eq!(step.kind, action("calc", json!({"e": "3"})));
}

#[test]
fn inline_arguments() {
    let step = parse_react_step("Action: weather(city=\"New York, NY\", days=3)");
    assert_eq!(step.kind, action("weather", json!({"city": "New York, NY", "days": 3})));
    let step = parse_react_step("Action: weather({\"city\": \"Oslo\"})");
    assert_eq!(step.kind, action("weather", json!({"city": "Oslo"})));
    let step = parse_react_step("Action: `weather`");
    assert_eq!(step.kind, action("weather", json!({})));
}

#[test]
fn untagged_preface_is_the_thought() {
    let step = parse_react_step("I should search.\nAction: search\nAction Input: {}");
    assert_eq!(step.thought.as_deref(), Some("I should search."));
}

#[test]
fn malformed_steps() {
    let ReactKind::Malformed(reason) = parse_react_step("I think the answer is 42.").kind else {
        panic!("expected malformed");
    };
    assert!(reason.contains("Final Answer"));
    assert!(matches!(
        parse_react_step("Action:\nAction Input: {}").kind,
        ReactKind::Malformed(_)
    ));
    assert!(matches!(
        parse_react_step("Action: search the web").kind,
        ReactKind::Malformed(_)
    ));
    assert!(matches!(
        parse_react_step("Action Input: {}").kind,
        ReactKind::Malformed(_)
    ));
    assert!(matches!(parse_react_step("").kind, ReactKind::Malformed(_)));
}

#[test]
fn unicode() {
    let step = parse_react_step("Thought: 東京の天気 🌤\nAction: weather\nAction Input: {\"city\": \"東京\"}");
    assert_eq!(step.thought.as_deref(), Some("東京の天気 🌤"));
    assert_eq!(step.kind, action("weather", json!({"city": "東京"})));
    assert_eq!(
        parse_react_step("Final Answer: 晴れ ☀️").kind,
        ReactKind::FinalAnswer("晴れ ☀️".into())
    );
}
