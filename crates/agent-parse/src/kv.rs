//! `key=value, key2="quoted, value"` argument lists, as in `Action: tool(a=1)`
//! and `use tool with a=1, b="x, y"`.

use serde_json::{Map, Value};

use crate::repair::repair_json;
use crate::scan::string_end;
use crate::text::split_name;

/// Parses `a=1, b="x, y", c='it''s', d={"k": 1}` into an object.
///
/// Keys are names (`[A-Za-z_][A-Za-z0-9_.-]*`, `:` may replace `=`). Quoted
/// values may contain commas and `=`; `{...}` / `[...]` values are JSON;
/// unquoted values that are JSON numbers or booleans become those, anything
/// else a string. Returns `None` when the text is not such a list (or is empty).
pub(crate) fn parse_pairs(text: &str) -> Option<Map<String, Value>> {
    let bytes = text.as_bytes();
    let mut map = Map::new();
    let mut i = 0;
    loop {
        i = skip_spaces(bytes, i);
        if i >= bytes.len() {
            break;
        }
        let (key, _) = split_name(text.get(i..)?)?;
        i += key.len();
        i = skip_spaces(bytes, i);
        if !matches!(bytes.get(i), Some(b'=' | b':')) {
            return None;
        }
        i = skip_spaces(bytes, i + 1);
        let (value, end) = parse_value(text, i)?;
        map.insert(key.to_owned(), value);
        i = skip_spaces(bytes, end);
        match bytes.get(i) {
            None => break,
            Some(b',') => i += 1,
            Some(_) => return None,
        }
    }
    (!map.is_empty()).then_some(map)
}

fn skip_spaces(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// One value starting at `i`; returns it and the index after it.
fn parse_value(text: &str, i: usize) -> Option<(Value, usize)> {
    let bytes = text.as_bytes();
    match bytes.get(i) {
        Some(b'"') => {
            let end = string_end(bytes, i + 1, b'"')?;
            let quoted = text.get(i..=end)?;
            let value = serde_json::from_str::<String>(quoted)
                .unwrap_or_else(|_| text.get(i + 1..end).unwrap_or_default().to_owned());
            Some((Value::String(value), end + 1))
        }
        Some(b'\'') => {
            let end = string_end(bytes, i + 1, b'\'')?;
            let inner = text.get(i + 1..end)?.replace("\\'", "'");
            Some((Value::String(inner), end + 1))
        }
        Some(b'{' | b'[') => {
            let end = balanced_end(bytes, i)?;
            let raw = text.get(i..=end)?;
            let value = serde_json::from_str(raw)
                .ok()
                .or_else(|| repair_json(raw).and_then(|fixed| serde_json::from_str(&fixed).ok()))
                .unwrap_or_else(|| Value::String(raw.to_owned()));
            Some((value, end + 1))
        }
        _ => {
            let end = memchr::memchr(b',', bytes.get(i..)?).map_or(bytes.len(), |n| i + n);
            Some((scalar(text.get(i..end)?.trim()), end))
        }
    }
}

/// An unquoted value: a JSON number or boolean, else the text itself.
pub(crate) fn scalar(raw: &str) -> Value {
    match serde_json::from_str::<Value>(raw) {
        Ok(value @ (Value::Number(_) | Value::Bool(_))) => value,
        _ => Value::String(raw.to_owned()),
    }
}

/// The index of the bracket closing the one at `start` (string-aware).
fn balanced_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i);
                }
            }
            b'"' => i = string_end(bytes, i + 1, b'"')?,
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(text: &str) -> Option<Value> {
        parse_pairs(text).map(Value::Object)
    }

    #[test]
    fn typed_and_quoted_values() {
        assert_eq!(
            pairs(r#"a=1, b="x, y", c='it\'s = ok', d=true, e=2.5, f=hello world, g=null"#),
            Some(json!({"a": 1, "b": "x, y", "c": "it's = ok", "d": true, "e": 2.5, "f": "hello world", "g": "null"}))
        );
        assert_eq!(
            pairs(r#"q: "\"quoted\"", n = -3"#),
            Some(json!({"q": "\"quoted\"", "n": -3}))
        );
        assert_eq!(
            pairs(r#"obj={"k": [1, "]"]}, list=[1,2]"#),
            Some(json!({"obj": {"k": [1, "]"]}, "list": [1, 2]}))
        );
        assert_eq!(pairs("city=東京 🗼"), Some(json!({"city": "東京 🗼"})));
    }

    #[test]
    fn not_pairs() {
        assert_eq!(pairs(""), None);
        assert_eq!(pairs("just words"), None);
        assert_eq!(pairs(r#"a="unterminated"#), None);
        assert_eq!(pairs(r#"a="x" junk"#), None);
    }
}
