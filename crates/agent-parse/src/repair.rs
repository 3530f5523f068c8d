//! Lenient JSON repair: turns the JSON-ish text models write into JSON.
//!
//! One forward pass with an explicit stack (no recursion, so no stack
//! overflow on deep input; nesting deeper than [`MAX_DEPTH`] is refused, as
//! serde_json would refuse it anyway). Repairs:
//!
//! - trailing commas (`[1, 2,]`), doubled commas and missing commas between members;
//! - single-quoted strings (`{'a': 'b'}`), raw line breaks and tabs inside strings,
//!   invalid escapes such as `\'` or `\d`;
//! - Python and JavaScript literals: `True`, `False`, `None`, `undefined`;
//! - unquoted keys (`{name: "x"}`, `{1: "a"}`) and a missing `:` after a key;
//! - `//`, `/* */` and `#` comments;
//! - numbers written `+1`, `.5` or `1.`;
//! - truncated input: an open string is closed, a dangling key, an incomplete
//!   number or literal is dropped, and open arrays and objects are closed.
//!
//! Text after the first complete value is ignored.

use std::fmt::Write as _;

/// Nesting depth beyond which repair gives up (serde_json's own limit).
pub const MAX_DEPTH: usize = 128;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A key or the end of the object.
    Key,
    /// The `:` after a key.
    Colon,
    /// A value (after `:` in an object; an element or the end in an array).
    Value,
    /// `,` or the end of the container.
    CommaOrEnd,
}

#[derive(Debug)]
struct Frame {
    object: bool,
    expect: Expect,
    /// Whether a member has been written (so the next needs a comma).
    members: bool,
    /// Output length before the member being written, to drop it when it
    /// turns out incomplete.
    mark: usize,
}

impl Frame {
    fn closer(&self) -> char {
        if self.object { '}' } else { ']' }
    }
}

/// How a scalar ended.
enum Scalar {
    /// Written to the output; parsing resumes at this byte.
    Done(usize),
    /// The input ended inside it and it cannot be kept (`tru`, `-`).
    Truncated,
}

/// Repairs JSON-ish text into valid JSON text, or `None` when it is not
/// JSON-like enough to repair. The result is not guaranteed to parse (for
/// example a number like `01` is passed through); parse it to be sure.
///
/// ```
/// use agent_parse::repair_json;
///
/// let fixed = repair_json("{name: 'Ada', admin: True, tags: ['x',], bio: \"trunc").unwrap();
/// assert_eq!(fixed, r#"{"name":"Ada","admin":true,"tags":["x"],"bio":"trunc"}"#);
/// ```
pub fn repair_json(input: &str) -> Option<String> {
    let bytes = input.as_bytes();
    let mut out = String::with_capacity(input.len() + 16);
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    loop {
        i = skip_trivia(bytes, i);
        let Some(&c) = bytes.get(i) else { break };
        let depth = stack.len();
        let Some(frame) = stack.last_mut() else {
            // The top-level value.
            if c == b'{' || c == b'[' {
                out.push(char::from(c));
                stack.push(Frame {
                    object: c == b'{',
                    expect: if c == b'{' { Expect::Key } else { Expect::Value },
                    members: false,
                    mark: out.len(),
                });
                i += 1;
                continue;
            }
            return match parse_scalar(input, i, &mut out)? {
                Scalar::Done(_) => Some(out),
                Scalar::Truncated => None,
            };
        };
        match frame.expect {
            Expect::Key => match c {
                b'}' | b']' => {
                    if close(&mut stack, &mut out) {
                        return Some(out);
                    }
                    i += 1;
                }
                b',' => i += 1,
                _ => {
                    frame.mark = out.len();
                    if frame.members {
                        out.push(',');
                    }
                    if c == b'"' || c == b'\'' {
                        i = parse_string(input, i, c, &mut out)?;
                    } else if is_word_byte(c) {
                        let end = word_end(bytes, i);
                        out.push('"');
                        out.push_str(input.get(i..end)?);
                        out.push('"');
                        i = end;
                    } else {
                        return None;
                    }
                    frame.expect = Expect::Colon;
                }
            },
            Expect::Colon => match c {
                b':' => {
                    out.push(':');
                    frame.expect = Expect::Value;
                    i += 1;
                }
                b'}' | b']' => {
                    out.truncate(frame.mark);
                    if close(&mut stack, &mut out) {
                        return Some(out);
                    }
                    i += 1;
                }
                _ if starts_value(c) => {
                    out.push(':');
                    frame.expect = Expect::Value;
                }
                _ => return None,
            },
            Expect::Value => match c {
                b'}' | b']' => {
                    if frame.object {
                        out.truncate(frame.mark);
                    }
                    if close(&mut stack, &mut out) {
                        return Some(out);
                    }
                    i += 1;
                }
                b',' => {
                    if frame.object {
                        // `"key": ,` has no value: drop the member.
                        out.truncate(frame.mark);
                        frame.expect = Expect::Key;
                    }
                    i += 1;
                }
                _ => {
                    if !frame.object {
                        frame.mark = out.len();
                        if frame.members {
                            out.push(',');
                        }
                    }
                    if c == b'{' || c == b'[' {
                        if depth >= MAX_DEPTH {
                            return None;
                        }
                        frame.members = true;
                        frame.expect = Expect::CommaOrEnd;
                        out.push(char::from(c));
                        stack.push(Frame {
                            object: c == b'{',
                            expect: if c == b'{' { Expect::Key } else { Expect::Value },
                            members: false,
                            mark: out.len(),
                        });
                        i += 1;
                    } else {
                        match parse_scalar(input, i, &mut out)? {
                            Scalar::Done(end) => {
                                frame.members = true;
                                frame.expect = Expect::CommaOrEnd;
                                i = end;
                            }
                            Scalar::Truncated => {
                                out.truncate(frame.mark);
                                i = bytes.len();
                            }
                        }
                    }
                }
            },
            Expect::CommaOrEnd => match c {
                b',' => {
                    frame.expect = if frame.object { Expect::Key } else { Expect::Value };
                    i += 1;
                }
                b'}' | b']' => {
                    if close(&mut stack, &mut out) {
                        return Some(out);
                    }
                    i += 1;
                }
                // A missing comma: the next member starts right away.
                _ if frame.object && (c == b'"' || c == b'\'' || is_word_byte(c)) => frame.expect = Expect::Key,
                _ if !frame.object && starts_value(c) => frame.expect = Expect::Value,
                _ => return None,
            },
        }
    }
    // The input ended: drop incomplete members and close what is open.
    if stack.is_empty() {
        return None;
    }
    while let Some(frame) = stack.pop() {
        if frame.object && matches!(frame.expect, Expect::Colon | Expect::Value) {
            out.truncate(frame.mark);
        }
        out.push(frame.closer());
    }
    Some(out)
}

/// Closes the innermost container; returns whether that completed the top-level value.
fn close(stack: &mut Vec<Frame>, out: &mut String) -> bool {
    if let Some(frame) = stack.pop() {
        out.push(frame.closer());
    }
    stack.is_empty()
}

fn starts_value(c: u8) -> bool {
    matches!(c, b'{' | b'[' | b'"' | b'\'' | b'-' | b'+' | b'.' | b'0'..=b'9') || c.is_ascii_alphabetic()
}

/// Bytes of unquoted keys and literals: ASCII letters, digits, `_ $ -`, and
/// any non-ASCII byte (so a word never ends inside a UTF-8 sequence).
fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'-') || c >= 0x80
}

fn word_end(bytes: &[u8], from: usize) -> usize {
    from + bytes
        .get(from..)
        .unwrap_or_default()
        .iter()
        .take_while(|&&b| is_word_byte(b))
        .count()
}

/// Skips whitespace and comments.
fn skip_trivia(bytes: &[u8], mut i: usize) -> usize {
    loop {
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        match (bytes.get(i), bytes.get(i + 1)) {
            (Some(b'/'), Some(b'/')) | (Some(b'#'), _) => {
                i = memchr::memchr(b'\n', bytes.get(i..).unwrap_or_default()).map_or(bytes.len(), |n| i + n);
            }
            (Some(b'/'), Some(b'*')) => {
                i = memchr::memmem::find(bytes.get(i + 2..).unwrap_or_default(), b"*/")
                    .map_or(bytes.len(), |n| i + 2 + n + 2);
            }
            _ => return i,
        }
    }
}

/// Parses a string, number or literal at `i` and writes it as JSON.
fn parse_scalar(input: &str, i: usize, out: &mut String) -> Option<Scalar> {
    let bytes = input.as_bytes();
    let c = *bytes.get(i)?;
    match c {
        b'"' | b'\'' => parse_string(input, i, c, out).map(Scalar::Done),
        b'-' | b'+' | b'.' | b'0'..=b'9' => {
            let end = i + bytes
                .get(i..)?
                .iter()
                .take_while(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                .count();
            let raw = input.get(i..end)?;
            let trimmed = raw.trim_end_matches(['.', 'e', 'E', '+', '-']);
            let number = trimmed.strip_prefix('+').unwrap_or(trimmed);
            if number.is_empty() || number == "-" {
                return if end == bytes.len() {
                    Some(Scalar::Truncated)
                } else {
                    None
                };
            }
            if let Some(fraction) = number.strip_prefix("-.") {
                out.push_str("-0.");
                out.push_str(fraction);
            } else if number.starts_with('.') {
                out.push('0');
                out.push_str(number);
            } else {
                out.push_str(number);
            }
            Some(Scalar::Done(end))
        }
        _ if is_word_byte(c) => {
            let end = word_end(bytes, i);
            let word = input.get(i..end)?;
            let literal = match word {
                "true" | "True" | "TRUE" => "true",
                "false" | "False" | "FALSE" => "false",
                "null" | "Null" | "NULL" | "None" | "undefined" | "nil" => "null",
                _ => {
                    const LITERALS: [&str; 6] = ["true", "True", "false", "False", "null", "None"];
                    let truncated = end == bytes.len() && LITERALS.iter().any(|l| l.starts_with(word));
                    return if truncated { Some(Scalar::Truncated) } else { None };
                }
            };
            out.push_str(literal);
            Some(Scalar::Done(end))
        }
        _ => None,
    }
}

/// Parses a string opened by `quote` at `i`, writes it as a JSON string and
/// returns the index after the closing quote (the end of the input when the
/// string is unterminated: it is closed).
fn parse_string(input: &str, i: usize, quote: u8, out: &mut String) -> Option<usize> {
    let bytes = input.as_bytes();
    out.push('"');
    let mut run = i + 1;
    let mut j = run;
    loop {
        let special = bytes
            .get(j..)?
            .iter()
            .position(|&b| b == quote || b == b'\\' || b == b'"' || b < 0x20);
        let Some(offset) = special else {
            out.push_str(input.get(run..)?);
            out.push('"');
            return Some(bytes.len());
        };
        let k = j + offset;
        out.push_str(input.get(run..k)?);
        match bytes[k] {
            b if b == quote => {
                out.push('"');
                return Some(k + 1);
            }
            b'"' => {
                out.push_str("\\\"");
                j = k + 1;
            }
            b'\\' => match bytes.get(k + 1) {
                None => {
                    out.push('"');
                    return Some(bytes.len());
                }
                Some(&e @ (b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't')) => {
                    out.push('\\');
                    out.push(char::from(e));
                    j = k + 2;
                }
                Some(b'u')
                    if bytes
                        .get(k + 2..k + 6)
                        .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit)) =>
                {
                    out.push_str(input.get(k..k + 6)?);
                    j = k + 6;
                }
                Some(b'\'') => {
                    out.push('\'');
                    j = k + 2;
                }
                Some(_) => {
                    // Not a JSON escape: keep the backslash as a character.
                    out.push_str("\\\\");
                    j = k + 1;
                }
            },
            control => {
                match control {
                    b'\n' => out.push_str("\\n"),
                    b'\r' => out.push_str("\\r"),
                    b'\t' => out.push_str("\\t"),
                    other => {
                        let _ = write!(out, "\\u{other:04x}");
                    }
                }
                j = k + 1;
            }
        }
        run = j;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn fix(text: &str) -> Option<Value> {
        serde_json::from_str(&repair_json(text)?).ok()
    }

    #[test]
    fn valid_json_round_trips() {
        let text = r#"{"a": [1, 2.5e3, -0.1, true, false, null, "s\"\\\/\b\f\n\r\t\u00e9"], "b": {}}"#;
        assert_eq!(fix(text), serde_json::from_str::<Value>(text).ok());
    }

    #[test]
    fn common_model_mistakes() {
        assert_eq!(fix("[1, 2,]"), Some(json!([1, 2])));
        assert_eq!(fix("{'a': 'it\\'s \"x\"'}"), Some(json!({"a": "it's \"x\""})));
        assert_eq!(
            fix("{a: True, b: None, c: False,}"),
            Some(json!({"a": true, "b": null, "c": false}))
        );
        assert_eq!(fix("{1: 'one'}"), Some(json!({"1": "one"})));
        assert_eq!(fix("{\"a\": 1 \"b\": 2}"), Some(json!({"a": 1, "b": 2})));
        assert_eq!(fix("{\"a\" 1}"), Some(json!({"a": 1})));
        assert_eq!(fix("[1 2,, 3]"), Some(json!([1, 2, 3])));
        assert_eq!(fix("{\"a\": \"line\nbreak\"}"), Some(json!({"a": "line\nbreak"})));
        assert_eq!(fix("{\"a\": \"\\d+\"}"), Some(json!({"a": "\\d+"})));
        assert_eq!(fix("{// c\n\"a\": /* x */ 1 # y\n}"), Some(json!({"a": 1})));
        assert_eq!(fix("[+1, .5, -.5, 2.]"), Some(json!([1, 0.5, -0.5, 2])));
        assert_eq!(fix("{\"a\": ,\"b\": 1}"), Some(json!({"b": 1})));
        assert_eq!(fix("{\"a\": 1] trailing"), Some(json!({"a": 1})));
    }

    #[test]
    fn truncated_input_is_closed() {
        assert_eq!(fix(r#"{"a": "hel"#), Some(json!({"a": "hel"})));
        assert_eq!(fix(r#"{"a": 1, "b"#), Some(json!({"a": 1})));
        assert_eq!(fix(r#"{"a": 1, "b":"#), Some(json!({"a": 1})));
        assert_eq!(fix(r#"{"a": [1, 2, {"c": tr"#), Some(json!({"a": [1, 2, {}]})));
        assert_eq!(fix("[1, -"), Some(json!([1])));
        assert_eq!(fix("[1.5e"), Some(json!([1.5])));
        assert_eq!(fix(r#"{"a": "x\"#), Some(json!({"a": "x"})));
        assert_eq!(fix(r#"{"a": [{"b": 1}, {"#), Some(json!({"a": [{"b": 1}, {}]})));
        assert_eq!(fix("{"), Some(json!({})));
    }

    #[test]
    fn garbage_is_refused() {
        assert_eq!(repair_json(""), None);
        assert_eq!(repair_json("{ braces are fun }"), None);
        assert_eq!(repair_json("{=}"), None);
        assert_eq!(repair_json("hello"), None);
        assert_eq!(repair_json(&"[".repeat(10_000)), None);
    }

    #[test]
    fn non_ascii_keys_and_values() {
        assert_eq!(
            fix("{名前: '太郎 🎉', ключ: 1}"),
            Some(json!({"名前": "太郎 🎉", "ключ": 1}))
        );
    }
}
