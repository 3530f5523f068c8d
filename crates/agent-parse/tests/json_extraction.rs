//! JSON extraction: sources, order, errors, lenient repair.

use agent_parse::{ExtractError, JsonExtractor, JsonKind, JsonSource, extract, extract_json, extract_json_lenient};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Deserialize, PartialEq)]
struct Person {
    name: String,
    age: u32,
}

fn strict(text: &str) -> Option<(Value, JsonSource)> {
    extract_json(text).ok().map(|found| (found.value, found.source))
}

#[test]
fn whole_text() {
    let found = extract_json("  {\"a\": 1}\n").expect("whole text");
    assert_eq!(found.value, json!({"a": 1}));
    assert_eq!(found.source, JsonSource::Whole);
    assert_eq!(found.span, 2..10);
    assert!(!found.repaired);
    assert_eq!(strict("42"), Some((json!(42), JsonSource::Whole)));
    assert_eq!(strict("[1, 2]"), Some((json!([1, 2]), JsonSource::Whole)));
}

#[test]
fn json_fence_wins_over_other_fences_and_prose() {
    let text = "Example:\n```\n{\"example\": true}\n```\nAnswer:\n```json\n{\"answer\": 1}\n```\n";
    assert_eq!(strict(text), Some((json!({"answer": 1}), JsonSource::Fence)));
}

#[test]
fn any_fence_whose_body_is_json() {
    let text = "Here:\n~~~\n[{\"a\": 1}]\n~~~\nbye";
    assert_eq!(strict(text), Some((json!([{"a": 1}]), JsonSource::Fence)));
}

#[test]
fn json_inside_a_string_inside_a_fence() {
    let text = "```json\n{\"text\": \"use ```json {\\\"a\\\": 1}``` here\", \"n\": \"}\"}\n```";
    let (value, source) = strict(text).expect("fence");
    assert_eq!(source, JsonSource::Fence);
    assert_eq!(value, json!({"text": "use ```json {\"a\": 1}``` here", "n": "}"}));
}

#[test]
fn scanned_object_with_braces_in_strings() {
    let text = r#"The result is {"msg": "a } b { c", "esc": "q\"}"} as requested."#;
    let found = extract_json(text).expect("scan");
    assert_eq!(found.value, json!({"msg": "a } b { c", "esc": "q\"}"}));
    assert_eq!(found.source, JsonSource::Scan);
    assert_eq!(&text[found.span.clone()], r#"{"msg": "a } b { c", "esc": "q\"}"}"#);
}

#[test]
fn objects_preferred_over_citation_arrays() {
    let text = "As shown in [1], the answer is {\"x\": 2}.";
    assert_eq!(strict(text), Some((json!({"x": 2}), JsonSource::Scan)));
    assert_eq!(
        strict("Values: [1, 2, 3] done"),
        Some((json!([1, 2, 3]), JsonSource::Scan))
    );
}

#[test]
fn next_candidate_when_one_fails() {
    let text = "First {not json} then {\"ok\": true}";
    assert_eq!(strict(text), Some((json!({"ok": true}), JsonSource::Scan)));
}

#[test]
fn typed_extraction_skips_non_matching_candidates() {
    let text = r#"{"other": 1} and then {"name": "Ada", "age": 36}"#;
    let person: Person = extract(text).expect("second object matches");
    assert_eq!(
        person,
        Person {
            name: "Ada".into(),
            age: 36
        }
    );
}

#[test]
fn mismatch_error_names_what_was_found() {
    let error = extract::<Person>("Result: {\"name\": \"Ada\"}").expect_err("missing field");
    match &error {
        ExtractError::Mismatch {
            kind,
            offset,
            found_in,
            reason,
        } => {
            assert_eq!((*kind, *offset, *found_in), (JsonKind::Object, 8, JsonSource::Scan));
            assert!(reason.contains("missing field `age`"), "{reason}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        error
            .to_string()
            .starts_with("found a JSON object in the text at byte 8 but it does not match: missing field `age`")
    );
}

#[test]
fn not_found_error_gives_length() {
    let error = extract_json("no json here at all").expect_err("none");
    assert_eq!(error, ExtractError::NotFound { len: 19 });
    assert_eq!(
        error.to_string(),
        "no JSON object or array found in the text (19 bytes)"
    );
}

#[test]
fn invalid_error_for_truncated_json() {
    let text = "Answer: {\"name\": \"Ada\", \"tags\": [\"x\", {\"k\": 1}";
    let error = extract_json(text).expect_err("truncated");
    match error {
        ExtractError::Invalid { kind, offset, .. } => assert_eq!((kind, offset), (JsonKind::Object, 8)),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn invalid_error_for_broken_json_fence() {
    let error = extract_json("```json\n{\"a\": 1,}\n```").expect_err("trailing comma");
    assert!(
        error
            .to_string()
            .starts_with("found a JSON object in a code fence at byte 8 but it is not valid JSON: trailing comma"),
        "{error}"
    );
}

#[test]
fn lenient_repairs_and_reports_it() {
    let cases = [
        ("{\"a\": 1, \"b\": [1, 2,],}", json!({"a": 1, "b": [1, 2]})),
        (
            "Here: {'name': 'Ada', 'ok': True, 'x': None}",
            json!({"name": "Ada", "ok": true, "x": null}),
        ),
        ("{name: \"Ada\", age: 36}", json!({"name": "Ada", "age": 36})),
        (
            "```json\n{\"a\": [1, {\"b\": \"trunc",
            json!({"a": [1, {"b": "trunc"}]}),
        ),
        (
            "Sure: {\"a\": {\"b\": 1}, \"c\": [1, 2",
            json!({"a": {"b": 1}, "c": [1, 2]}),
        ),
    ];
    for (text, expected) in cases {
        let found = extract_json_lenient(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(found.value, expected, "{text}");
        assert!(found.repaired, "{text}");
    }
}

#[test]
fn lenient_equals_strict_when_strict_succeeds() {
    let text = "{'a': 1} and {\"b\": 2}";
    let strict = extract_json(text).expect("strict finds b");
    let lenient = extract_json_lenient(text).expect("lenient");
    assert_eq!(strict, lenient);
    assert!(!lenient.repaired);
}

#[test]
fn truncated_json_with_complete_inner_object_is_repaired_as_a_whole() {
    let text = "{\"person\": {\"name\": \"Ada\"}, \"tags\": [\"a\"";
    assert!(extract_json(text).is_err());
    let found = extract_json_lenient(text).expect("repaired");
    assert_eq!(found.value, json!({"person": {"name": "Ada"}, "tags": ["a"]}));
}

#[test]
fn truncated_inside_a_string() {
    let text = "Answer: {\"name\": \"Ada\", \"bio\": {\"born\": 1815}, \"note\": \"trunc";
    match extract_json(text) {
        Err(ExtractError::Invalid { offset, reason, .. }) => {
            assert_eq!(offset, 8);
            assert!(reason.contains("EOF while parsing"), "{reason}");
        }
        other => panic!("unexpected {other:?}"),
    }
    let found = extract_json_lenient(text).expect("repaired");
    assert_eq!(
        found.value,
        json!({"name": "Ada", "bio": {"born": 1815}, "note": "trunc"})
    );
    assert_eq!(found.span, 8..text.len());
}

#[test]
fn prose_brace_before_json() {
    let text = "Use { to open a block. Result: {\"a\": 1}";
    assert_eq!(strict(text), Some((json!({"a": 1}), JsonSource::Scan)));
}

#[test]
fn unicode_around_and_inside() {
    let text = "结果 🎉: {\"城市\": \"東京\", \"emoji\": \"🗼\"} ✅";
    let found = extract_json(text).expect("unicode");
    assert_eq!(found.value, json!({"城市": "東京", "emoji": "🗼"}));
    assert!(text.is_char_boundary(found.span.start) && text.is_char_boundary(found.span.end));
}

#[test]
fn crlf_fences() {
    let text = "Result:\r\n```json\r\n{\"a\": 1}\r\n```\r\n";
    assert_eq!(strict(text), Some((json!({"a": 1}), JsonSource::Fence)));
}

#[test]
fn deep_nesting_does_not_overflow() {
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    assert!(extract_json(&deep).is_err());
    assert!(extract_json_lenient(&deep).is_err());
    let open = "[{\"a\":".repeat(50_000);
    assert!(extract_json_lenient(&open).is_err());
    assert!(JsonExtractor::lenient().extract_value(&"{".repeat(100_000)).is_err());
}

#[test]
fn typed_lenient() {
    let person: Person = agent_parse::extract_lenient("{name: 'Ada', age: 36,}").expect("lenient typed");
    assert_eq!(person.age, 36);
}
