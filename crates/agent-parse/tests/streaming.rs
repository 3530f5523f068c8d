//! The streaming filter: what is shown when, and equivalence with the one-shot parser.

use agent_parse::{CallFormat, ParsedReply, StreamingToolCallFilter, ToolCallParser};
use serde_json::json;

fn stream(deltas: &[&str]) -> (Vec<String>, ParsedReply) {
    let mut filter = StreamingToolCallFilter::new();
    let shown: Vec<String> = deltas.iter().map(|d| filter.push(d)).collect();
    (shown, filter.finish())
}

#[test]
fn plain_text_is_released_at_once() {
    let (shown, rest) = stream(&["Hello", " world", "!"]);
    assert_eq!(shown, ["Hello", " world", "!"]);
    assert_eq!(rest.text, "");
    assert!(rest.calls.is_empty());
}

#[test]
fn partial_tag_is_held_back_until_decided() {
    let mut filter = StreamingToolCallFilter::new();
    assert_eq!(filter.push("Hi <tool_c"), "Hi");
    assert!(!filter.is_inside_call());
    assert_eq!(filter.push("all>{\"name\": \"x\""), "");
    assert!(filter.is_inside_call());
    assert_eq!(filter.push(", \"arguments\": {}}</tool"), "");
    assert_eq!(filter.push("_call>"), "");
    assert_eq!(filter.completed_calls().len(), 1);
    // The space before the block was held back; it is shown with the next text.
    assert_eq!(filter.push(" bye"), "  bye");
    let rest = filter.finish();
    assert_eq!(rest.calls[0].name, "x");
    assert_eq!(rest.calls[0].format, CallFormat::Tagged);
}

#[test]
fn not_a_tag_after_all_is_released() {
    let mut filter = StreamingToolCallFilter::new();
    assert_eq!(filter.push("a <tool"), "a");
    assert_eq!(filter.push("box> b <"), " <toolbox> b");
    assert_eq!(filter.push("3"), " <3");
    assert_eq!(filter.finish().text, "");
}

#[test]
fn pending_prefix_at_end_is_text() {
    let mut filter = StreamingToolCallFilter::new();
    assert_eq!(filter.push("see <tool_"), "see");
    assert_eq!(filter.finish().text, " <tool_");
}

#[test]
fn whitespace_is_trimmed_like_the_one_shot_parser() {
    let (shown, rest) = stream(&["  \n", " Hi ", "\n", "<tool_call>{\"name\":\"a\"}</tool_call>", "  \n"]);
    assert_eq!(shown.concat() + &rest.text, "Hi");
}

#[test]
fn unterminated_block_at_end() {
    let (shown, rest) = stream(&["ok <tool_call>{\"name\": \"a\", \"arguments\": {\"k\": 1}}"]);
    assert_eq!(shown.concat(), "ok");
    assert_eq!(rest.calls[0].arguments, json!({"k": 1}));
    let (_, rest) = stream(&["<tool_call>{\"name\": \"a\", \"argu"]);
    assert!(rest.calls.is_empty());
    assert_eq!(rest.malformed.len(), 1);
}

#[test]
fn every_split_matches_the_one_shot_parse() {
    let text = "Start 🎉 <tool_call>{\"name\": \"a\", \"arguments\": {\"s\": \"</tool\"}}</tool_call> mid <tool_call>[{\"name\": \"b\"}]</tool_call></tool_call> end <tool_c";
    let expected = ToolCallParser::new().parse(text);
    let boundaries: Vec<usize> = (0..=text.len()).filter(|&i| text.is_char_boundary(i)).collect();
    for &i in &boundaries {
        for &j in boundaries.iter().filter(|&&j| j >= i) {
            let (shown, rest) = stream(&[&text[..i], &text[i..j], &text[j..]]);
            assert_eq!(shown.concat() + &rest.text, expected.text, "split at {i}, {j}");
            assert_eq!(rest.calls, expected.calls, "split at {i}, {j}");
            assert_eq!(rest.malformed, expected.malformed, "split at {i}, {j}");
        }
    }
}

#[test]
fn filter_is_reusable_after_finish() {
    let mut filter = StreamingToolCallFilter::new();
    filter.push("<tool_call>{\"name\": \"a\"}");
    assert_eq!(filter.finish().calls.len(), 1);
    assert_eq!(filter.push("  plain"), "plain");
    assert!(filter.finish().calls.is_empty());
}

#[test]
fn long_stream_of_small_deltas() {
    let mut filter = StreamingToolCallFilter::new();
    let mut shown = String::new();
    let piece = "word <tool_call>{\"name\": \"n\", \"arguments\": {}}</tool_call> ";
    let text = piece.repeat(2_000);
    for ch in text.chars() {
        shown += &filter.push(ch.encode_utf8(&mut [0; 4]));
    }
    let rest = filter.finish();
    shown += &rest.text;
    assert_eq!(rest.calls.len(), 2_000);
    assert_eq!(shown, ToolCallParser::new().parse(&text).text);
}
