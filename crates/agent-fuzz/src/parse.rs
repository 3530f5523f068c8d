//! `agent_parse`: JSON, ReAct steps and tool calls pulled out of model text.

use agent_parse::{
    StreamingToolCallFilter, ToolCallParser, extract_json, extract_json_lenient, parse_react_step, repair_json,
};

use crate::pieces::text_pieces;

/// Runs every parser of agent-parse over `data` (as UTF-8, lossily): none
/// panics, and the streaming tool-call filter, fed the text in pieces,
/// shows the same text and finds the same calls and malformed blocks as
/// fed it whole.
pub fn agent_parse(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();
    if let Ok(extracted) = extract_json(text) {
        // What strict extraction finds, lenient extraction finds too.
        assert!(
            extract_json_lenient(text).is_ok(),
            "strict extraction found {extracted:?}, lenient none"
        );
    }
    let _ = repair_json(text);
    let _ = parse_react_step(text);
    let _ = ToolCallParser::new().parse(text);

    let whole = filtered([text]);
    let split = filtered(text_pieces(text));
    assert_eq!(whole, split, "the streaming filter read the text differently in pieces");
}

/// What the filter shows of `pieces` and what it finds at the end.
fn filtered<'a>(pieces: impl IntoIterator<Item = &'a str>) -> (String, String) {
    let mut filter = StreamingToolCallFilter::new();
    let mut shown = String::new();
    for piece in pieces {
        shown.push_str(&filter.push(piece));
    }
    let rest = filter.finish();
    shown.push_str(&rest.text);
    (shown, format!("{:?} {:?}", rest.calls, rest.malformed))
}
