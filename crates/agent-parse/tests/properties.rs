//! Property tests: every parser is total (no panic on any input) and the
//! streaming filter agrees with the one-shot parser however the text is split.

use agent_parse::{
    CallFormat, JsonExtractor, StreamingToolCallFilter, ToolCallParser, extract_json, parse_react_step, repair_json,
};
use proptest::prelude::*;
use serde_json::Value;

/// Text made of JSON, protocol and prose fragments, to reach the parsers' corners.
fn fragments() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("\"".to_owned()),
        Just("\\".to_owned()),
        Just("'".to_owned()),
        Just("<".to_owned()),
        Just(">".to_owned()),
        Just(",".to_owned()),
        Just(":".to_owned()),
        Just("\n".to_owned()),
        Just("\r\n".to_owned()),
        Just(" ".to_owned()),
        Just("<tool_call>".to_owned()),
        Just("</tool_call>".to_owned()),
        Just("<tool_c".to_owned()),
        Just("```json\n".to_owned()),
        Just("```".to_owned()),
        Just("\"name\"".to_owned()),
        Just("\"arguments\"".to_owned()),
        Just("\"calc\"".to_owned()),
        Just("{\"name\": \"calc\", \"arguments\": {\"a\": 1}}".to_owned()),
        Just("Thought:".to_owned()),
        Just("Action:".to_owned()),
        Just("Action Input:".to_owned()),
        Just("Observation:".to_owned()),
        Just("Final Answer:".to_owned()),
        Just("use calc with a=1, b=\"x, y\"".to_owned()),
        Just("True".to_owned()),
        Just("None".to_owned()),
        Just("1.5e".to_owned()),
        Just("é".to_owned()),
        Just("🎉".to_owned()),
        Just("東京".to_owned()),
        "[a-z0-9 =(),.]{0,6}",
    ];
    prop::collection::vec(fragment, 0..40).prop_map(|parts| parts.concat())
}

/// Any text: arbitrary Unicode or protocol-heavy fragments.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), fragments(), "[{}\\[\\]\"\\\\'<>a:, ]{0,64}"]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn json_extraction_never_panics(text in any_text()) {
        let strict = extract_json(&text);
        let lenient = JsonExtractor::lenient().extract_value(&text);
        if let Ok(found) = &strict {
            // Lenient mode agrees with strict mode whenever strict succeeds.
            prop_assert_eq!(Some(found), lenient.as_ref().ok());
            prop_assert!(text.is_char_boundary(found.span.start) && text.is_char_boundary(found.span.end));
        }
        if let Ok(found) = &lenient {
            prop_assert!(found.span.end <= text.len());
        }
    }

    #[test]
    fn repair_never_panics_and_valid_json_survives(text in any_text()) {
        let _ = repair_json(&text);
        if let Ok(value) = serde_json::from_str::<Value>(&text)
            && (value.is_object() || value.is_array()) {
                let fixed = repair_json(&text).expect("valid JSON is repairable");
                prop_assert_eq!(serde_json::from_str::<Value>(&fixed).ok(), Some(value));
            }
    }

    #[test]
    fn repair_preserves_arbitrary_json_values(value in arbitrary_json()) {
        let text = serde_json::to_string_pretty(&value).expect("serialises");
        let fixed = repair_json(&text).expect("repairable");
        // Compare with a parse of the same text (float parsing need not round-trip).
        let direct = serde_json::from_str::<Value>(&text).expect("parses");
        prop_assert_eq!(serde_json::from_str::<Value>(&fixed).expect("parses"), direct);
    }

    #[test]
    fn tool_call_parsing_never_panics(text in any_text()) {
        let reply = ToolCallParser::new().parse(&text);
        prop_assert!(!reply.text.contains("<tool_call>") || !text.contains("<tool_call>") || reply.calls.is_empty() || reply.text.len() < text.len());
        let _ = ToolCallParser::new().known_tools(["calc"]).parse(&text);
    }

    #[test]
    fn react_parsing_never_panics(text in any_text()) {
        let _ = parse_react_step(&text);
    }

    #[test]
    fn streaming_matches_one_shot_for_any_split(text in any_text(), cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8)) {
        let expected = ToolCallParser::new().formats([CallFormat::Tagged]).parse(&text);
        let mut boundaries: Vec<usize> = cuts
            .iter()
            .map(|cut| {
                let mut at = cut.index(text.len() + 1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                at
            })
            .collect();
        boundaries.sort_unstable();
        let mut filter = StreamingToolCallFilter::new();
        let mut shown = String::new();
        let mut previous = 0;
        for at in boundaries.into_iter().chain([text.len()]) {
            shown += &filter.push(&text[previous..at]);
            previous = at;
        }
        let rest = filter.finish();
        shown += &rest.text;
        prop_assert_eq!(&shown, &expected.text);
        prop_assert_eq!(&rest.calls, &expected.calls);
        prop_assert_eq!(&rest.malformed, &expected.malformed);
        // Protocol tags are never shown.
        prop_assert!(!shown.contains("<tool_call>") && !shown.contains("</tool_call>"));
        // With at least one block, the full parser gives the same result.
        if text.contains("<tool_call>") {
            let full = ToolCallParser::new().parse(&text);
            prop_assert_eq!(&full, &expected);
        }
    }
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..8)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// Large adversarial inputs (the shapes that make naive parsers quadratic or
/// recurse deeply) are handled without panicking. Timing lives in the
/// `parse_throughput` benchmark.
#[test]
fn adversarial_inputs_do_not_panic() {
    const SIZE: usize = 64 * 1024;
    let shapes = [
        "{",
        "[",
        "[{\"a\":",
        "[\"",
        "[see \"",
        "{'a': '",
        "<tool_call>",
        "<tool_ca",
        "Action: a\n",
        "Action: a\nAction Input: {\"x\": [1, {\"y\": \n",
        "use calc with a=\"1, 2\", b=3\n",
        "```\n",
        "{\"name\": \"a\", \"arguments\": {}}",
        "}]",
        "{[{[\"a\\\"",
        "{a:",
        "[\"\\",
        "Thought: x\nObservation: y\n",
    ];
    for shape in shapes {
        let text = shape.repeat(SIZE / shape.len());
        let _ = extract_json(&text);
        let _ = JsonExtractor::lenient().extract_value(&text);
        let _ = ToolCallParser::new().parse(&text);
        let _ = parse_react_step(&text);
        let _ = repair_json(&text);
        let mut filter = StreamingToolCallFilter::new();
        for chunk in text.as_bytes().chunks(1000) {
            let _ = filter.push(std::str::from_utf8(chunk).unwrap_or_default());
        }
        let _ = filter.finish();
    }
}
