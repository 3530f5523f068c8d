//! Tool calls in text: every format and the nasty cases.

use agent_parse::{CallFormat, ParsedReply, ToolCallParser};
use serde_json::{Value, json};

fn parse(text: &str) -> ParsedReply {
    ToolCallParser::new().parse(text)
}

fn names_and_args(reply: &ParsedReply) -> Vec<(String, Value)> {
    reply
        .calls
        .iter()
        .map(|c| (c.name.clone(), c.arguments.clone()))
        .collect()
}

#[test]
fn tagged_single_call() {
    let reply =
        parse("<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2+2\"}}\n</tool_call>");
    assert_eq!(reply.text, "");
    assert_eq!(
        names_and_args(&reply),
        [("calculator".into(), json!({"expression": "2+2"}))]
    );
    assert_eq!(reply.calls[0].format, CallFormat::Tagged);
}

#[test]
fn two_tagged_calls_and_prose() {
    let text = "Let me check both.\n<tool_call>{\"name\": \"weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>\n<tool_call>{\"name\": \"weather\", \"arguments\": {\"city\": \"Rome\"}}</tool_call>\nOne moment.";
    let reply = parse(text);
    assert_eq!(reply.text, "Let me check both.\n\n\nOne moment.");
    assert_eq!(
        names_and_args(&reply),
        [
            ("weather".into(), json!({"city": "Oslo"})),
            ("weather".into(), json!({"city": "Rome"}))
        ]
    );
    let calls = reply.tool_calls("run1_");
    assert_eq!(calls[0].id, "run1_0");
    assert_eq!(calls[1].id, "run1_1");
    assert_eq!(reply.clone().into_tool_calls()[1].id, "call_1");
}

#[test]
fn tagged_call_followed_by_prose() {
    let reply = parse("<tool_call>{\"name\": \"clock\", \"arguments\": {}}</tool_call> and then I'll answer.");
    assert_eq!(reply.text, "and then I'll answer.");
    assert_eq!(names_and_args(&reply), [("clock".into(), json!({}))]);
}

#[test]
fn braces_and_tags_in_string_values() {
    let reply = parse(r#"<tool_call>{"name": "echo", "arguments": {"text": "a } { \" ] b"}}</tool_call>"#);
    assert_eq!(reply.calls[0].arguments, json!({"text": "a } { \" ] b"}));
}

#[test]
fn unterminated_final_tag_with_complete_json() {
    let reply = parse("Checking.\n<tool_call>{\"name\": \"clock\", \"arguments\": {}}");
    assert_eq!(reply.text, "Checking.");
    assert_eq!(names_and_args(&reply), [("clock".into(), json!({}))]);
}

#[test]
fn unterminated_final_tag_with_incomplete_json_is_malformed_not_repaired() {
    let reply = parse("Checking.\n<tool_call>{\"name\": \"delete\", \"arguments\": {\"path\": \"/tmp/x");
    assert_eq!(reply.text, "Checking.");
    assert!(reply.calls.is_empty());
    assert_eq!(reply.malformed.len(), 1);
    assert!(
        reply.malformed[0].reason.contains("ended inside a <tool_call> block"),
        "{:?}",
        reply.malformed
    );
}

#[test]
fn closed_tag_with_sloppy_json_is_repaired() {
    let reply = parse("<tool_call>{'name': 'search', 'arguments': {'q': 'rust', 'exact': True,},}</tool_call>");
    assert_eq!(
        names_and_args(&reply),
        [("search".into(), json!({"q": "rust", "exact": true}))]
    );
    assert!(reply.calls[0].repaired);
}

#[test]
fn tagged_block_without_name_is_malformed() {
    let reply = parse("<tool_call>{\"arguments\": {}}</tool_call>");
    assert!(reply.calls.is_empty());
    assert!(reply.malformed[0].reason.contains("no \"name\""));
    let reply = parse("<tool_call></tool_call>ok");
    assert_eq!(reply.text, "ok");
    assert!(reply.malformed[0].reason.contains("empty"));
}

#[test]
fn tagged_blocks_ignore_known_tools() {
    let reply = ToolCallParser::new()
        .known_tools(["calculator"])
        .parse("<tool_call>{\"name\": \"unknown_tool\", \"arguments\": {}}</tool_call>");
    assert_eq!(reply.calls[0].name, "unknown_tool");
}

#[test]
fn empty_arguments_and_missing_arguments() {
    let reply = parse(
        "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"b\"}</tool_call><tool_call>{\"name\": \"c\", \"arguments\": null}</tool_call><tool_call>{\"name\": \"d\", \"arguments\": \"\"}</tool_call>",
    );
    assert_eq!(
        names_and_args(&reply),
        [
            ("a".into(), json!({})),
            ("b".into(), json!({})),
            ("c".into(), json!({})),
            ("d".into(), json!({}))
        ]
    );
}

#[test]
fn arguments_as_a_string_of_json() {
    let reply = parse(r#"<tool_call>{"name": "calc", "arguments": "{\"expression\": \"1+1\"}"}</tool_call>"#);
    assert_eq!(reply.calls[0].arguments, json!({"expression": "1+1"}));
    assert_eq!(reply.calls[0].raw_arguments, None);
    let reply = parse(r#"{"name": "calc", "arguments": "{\"expression\": \"1+1\"}"}"#);
    assert_eq!(reply.calls[0].arguments, json!({"expression": "1+1"}));
}

#[test]
fn arguments_as_a_string_that_is_not_json_are_kept_raw() {
    let reply = parse(r#"<tool_call>{"name": "calc", "arguments": "expression=1+1"}</tool_call>"#);
    assert_eq!(reply.calls[0].arguments, Value::Null);
    assert_eq!(reply.calls[0].raw_arguments.as_deref(), Some("expression=1+1"));
    let call = reply.tool_calls("c")[0].clone();
    assert_eq!(call.raw_arguments.as_deref(), Some("expression=1+1"));
}

#[test]
fn array_of_calls_in_a_tag_and_bare() {
    let reply = parse(
        "<tool_call>[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"x\": 1}}]</tool_call>",
    );
    assert_eq!(
        names_and_args(&reply),
        [("a".into(), json!({})), ("b".into(), json!({"x": 1}))]
    );
    let reply = parse("[{\"tool\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"parameters\": {\"x\": 1}}]");
    assert_eq!(
        names_and_args(&reply),
        [("a".into(), json!({})), ("b".into(), json!({"x": 1}))]
    );
    assert_eq!(reply.calls[0].format, CallFormat::Json);
}

#[test]
fn bare_json_objects() {
    let reply = parse("I will call it: {\"tool\": \"search\", \"arguments\": {\"q\": \"rust\"}}");
    assert_eq!(reply.text, "I will call it:");
    assert_eq!(names_and_args(&reply), [("search".into(), json!({"q": "rust"}))]);
    let reply = parse("{\"name\": \"search\", \"parameters\": {\"q\": \"rust\"}}");
    assert_eq!(names_and_args(&reply), [("search".into(), json!({"q": "rust"}))]);
    let reply = parse("{\"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}}");
    assert_eq!(names_and_args(&reply), [("f".into(), json!({"a": 1}))]);
}

#[test]
fn fenced_json_call() {
    let text =
        "Calling the tool:\n```json\n{\"name\": \"calc\", \"arguments\": {\"expression\": \"3*3\"}}\n```\nWait for it.";
    let reply = parse(text);
    assert_eq!(reply.text, "Calling the tool:\nWait for it.");
    assert_eq!(names_and_args(&reply), [("calc".into(), json!({"expression": "3*3"}))]);
}

#[test]
fn ordinary_json_answers_are_not_calls() {
    let reply = parse("{\"name\": \"Ada\", \"age\": 36}");
    assert!(reply.calls.is_empty());
    assert_eq!(reply.text, "{\"name\": \"Ada\", \"age\": 36}");
    let parser = ToolCallParser::new().known_tools(["calculator"]);
    let text = "{\"name\": \"summary\", \"arguments\": [\"a\"]}";
    let reply = parser.parse(text);
    assert!(reply.calls.is_empty());
    assert_eq!(reply.text, text);
    let reply = parser.parse("{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1\"}}");
    assert_eq!(reply.calls.len(), 1);
    let reply = parser.parse("{\"tool\": \"calculator\"}");
    assert_eq!(names_and_args(&reply), [("calculator".into(), json!({}))]);
}

#[test]
fn react_action_with_input() {
    let text = "Thought: I need to compute.\r\nAction: calculator\r\nAction Input: {\"expression\": \"2*21\"}\r\nObservation: 42\r\nThought: made up";
    let reply = parse(text);
    assert_eq!(
        names_and_args(&reply),
        [("calculator".into(), json!({"expression": "2*21"}))]
    );
    assert_eq!(reply.text, "Thought: I need to compute.");
    assert_eq!(reply.calls[0].format, CallFormat::ReactAction);
}

#[test]
fn react_inline_action() {
    let reply = parse("Action: search(query=\"rust, the language\", limit=5, exact=false)");
    assert_eq!(
        names_and_args(&reply),
        [(
            "search".into(),
            json!({"query": "rust, the language", "limit": 5, "exact": false})
        )]
    );
    let reply = parse("action: `clock`");
    assert_eq!(names_and_args(&reply), [("clock".into(), json!({}))]);
}

#[test]
fn plain_use_form() {
    let reply = parse("use calculator with expression=\"1, 2 = 3\", precision=2, round=true, label=hi there");
    assert_eq!(
        names_and_args(&reply),
        [(
            "calculator".into(),
            json!({"expression": "1, 2 = 3", "precision": 2, "round": true, "label": "hi there"})
        )]
    );
    assert_eq!(reply.calls[0].format, CallFormat::PlainUse);
    // Prose that starts with "use" is not a call.
    assert!(parse("Use the oven with care.").calls.is_empty());
    // Without arguments, only known tools count.
    assert!(parse("use clock").calls.is_empty());
    assert_eq!(
        ToolCallParser::new()
            .known_tools(["clock"])
            .parse("Use clock")
            .calls
            .len(),
        1
    );
    assert!(
        ToolCallParser::new()
            .known_tools(["clock"])
            .parse("use calc with a=1")
            .calls
            .is_empty()
    );
}

#[test]
fn unicode_around_and_inside_calls() {
    let text = "好的 🎉\n<tool_call>{\"name\": \"translate\", \"arguments\": {\"text\": \"こんにちは 👋\", \"to\": \"en\"}}</tool_call>\n完了 ✅";
    let reply = parse(text);
    assert_eq!(reply.text, "好的 🎉\n\n完了 ✅");
    assert_eq!(reply.calls[0].arguments, json!({"text": "こんにちは 👋", "to": "en"}));
    let reply = parse("使用 ✅ use translate with text=\"日本語, ok\", to=en");
    assert!(reply.calls.is_empty());
    let reply = parse("use translate with text=\"日本語, ok\", to=en 🎌");
    assert_eq!(reply.calls[0].arguments, json!({"text": "日本語, ok", "to": "en 🎌"}));
}

#[test]
fn stray_closing_tag_is_dropped() {
    let reply = parse("{\"name\": \"calc\", \"arguments\": {\"e\": \"1\"}}</tool_call>");
    assert_eq!(reply.text, "");
    assert_eq!(reply.calls.len(), 1);
}

#[test]
fn opener_inside_block_closes_previous_block() {
    let reply = parse(
        "<tool_call>{\"name\": \"a\", \"arguments\": {}}\n<tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call>",
    );
    assert_eq!(
        names_and_args(&reply),
        [("a".into(), json!({})), ("b".into(), json!({}))]
    );
}

#[test]
fn formats_can_be_restricted() {
    let only_tags = ToolCallParser::new().formats([CallFormat::Tagged]);
    assert!(only_tags.parse("{\"name\": \"a\", \"arguments\": {}}").calls.is_empty());
    let no_tags = ToolCallParser::new().formats([CallFormat::Json]);
    let reply = no_tags.parse("<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>");
    assert_eq!(reply.calls.len(), 1);
    assert_eq!(reply.calls[0].format, CallFormat::Json);
}

#[test]
fn plain_text_stays_text() {
    let reply = parse("  Just an answer with {braces} and [1] and <b>html</b>.  ");
    assert!(reply.calls.is_empty());
    assert_eq!(reply.text, "Just an answer with {braces} and [1] and <b>html</b>.");
}

#[test]
fn crlf_line_ends() {
    let text = "Sure.\r\n<tool_call>\r\n{\"name\": \"calc\",\r\n \"arguments\": {\"e\": \"1\"}}\r\n</tool_call>\r\n";
    let reply = parse(text);
    assert_eq!(reply.text, "Sure.");
    assert_eq!(names_and_args(&reply), [("calc".into(), json!({"e": "1"}))]);
    let reply = parse("Calling:\r\n```json\r\n{\"name\": \"calc\", \"arguments\": {}}\r\n```\r\nok");
    assert_eq!(reply.text, "Calling:\r\nok");
    assert_eq!(reply.calls.len(), 1);
}

#[test]
fn json_call_inside_a_fence_with_fence_and_braces_in_a_string() {
    let text = "```json\n{\"name\": \"write_file\", \"arguments\": {\"content\": \"```json\\n{\\\"a\\\": [1, 2]}\\n``` }{\"}}\n```\nDone.";
    let reply = parse(text);
    assert_eq!(reply.text, "Done.");
    assert_eq!(
        names_and_args(&reply),
        [(
            "write_file".into(),
            json!({"content": "```json\n{\"a\": [1, 2]}\n``` }{"})
        )]
    );
}

#[test]
fn action_names_that_are_not_tools_stay_text() {
    let text = "Action: Final Answer\nAction Input: 42";
    assert_eq!(parse(text).text, text);
    assert!(parse(text).calls.is_empty());
}

#[test]
fn calls_wrapped_in_made_up_tags_leave_no_markup_behind() {
    let reply = ToolCallParser::new()
        .known_tools(["get_weather"])
        .parse("<tools>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Tokyo\"}}\n</tools>");
    assert_eq!(reply.calls.len(), 1);
    assert_eq!(reply.text, "");
    let reply = ToolCallParser::new().known_tools(["get_weather"]).parse(
        "Checking.\n<function_call>{\"name\": \"get_weather\", \"arguments\": {}}\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Oslo\"}}</function_call>",
    );
    assert_eq!(reply.calls.len(), 2);
    assert_eq!(reply.text, "Checking.");
}
