//! JSON extraction from model text.

use std::fmt;
use std::ops::Range;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::Value;
use serde_json::error::Category;

use crate::fence::{Fence, fences};
use crate::repair::repair_json;
use crate::scan::{Quotes, Scan, scan};

/// Where in the text the JSON was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JsonSource {
    /// The whole text (trimmed) is the JSON.
    Whole,
    /// The body of a Markdown code fence.
    Fence,
    /// A balanced `{...}` or `[...]` found by scanning the text.
    Scan,
}

impl fmt::Display for JsonSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Whole => "the whole text",
            Self::Fence => "a code fence",
            Self::Scan => "the text",
        })
    }
}

/// What kind of JSON value a candidate looked like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JsonKind {
    /// `{...}`
    Object,
    /// `[...]`
    Array,
    /// Anything else (string, number, literal).
    Value,
}

impl JsonKind {
    fn of(json: &str) -> Self {
        match json.trim_start().as_bytes().first() {
            Some(b'{') => Self::Object,
            Some(b'[') => Self::Array,
            _ => Self::Value,
        }
    }
}

impl fmt::Display for JsonKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Object => "object",
            Self::Array => "array",
            Self::Value => "value",
        })
    }
}

/// A value extracted from text, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted<T> {
    /// The value.
    pub value: T,
    /// Whether it was the whole text, a code fence or found by scanning.
    pub source: JsonSource,
    /// Byte range of the JSON text in the input.
    pub span: Range<usize>,
    /// Whether lenient repair was needed (see [`repair_json`]).
    pub repaired: bool,
}

/// Why no value could be extracted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    /// Nothing JSON-like in the text.
    #[error("no JSON object or array found in the text ({len} bytes)")]
    NotFound {
        /// Length of the text in bytes.
        len: usize,
    },
    /// Something JSON-like was found but it is not valid JSON (even after
    /// repair, in lenient mode).
    #[error("found a JSON {kind} in {found_in} at byte {offset} but it is not valid JSON: {reason}")]
    Invalid {
        /// What it looked like.
        kind: JsonKind,
        /// Byte offset of its start in the text.
        offset: usize,
        /// Where it was found.
        found_in: JsonSource,
        /// The JSON parser's message.
        reason: String,
    },
    /// Valid JSON was found but it does not deserialize into the requested type.
    #[error("found a JSON {kind} in {found_in} at byte {offset} but it does not match: {reason}")]
    Mismatch {
        /// What it was.
        kind: JsonKind,
        /// Byte offset of its start in the text.
        offset: usize,
        /// Where it was found.
        found_in: JsonSource,
        /// The deserializer's message (e.g. "missing field `name`").
        reason: String,
    },
}

/// Finds JSON in model output.
///
/// Candidates are tried in this order, and the first that parses (and
/// deserializes into the requested type) wins:
///
/// 1. the whole text, trimmed;
/// 2. the bodies of Markdown code fences, `json` fences first;
/// 3. balanced `{...}` / `[...]` spans found by a string-aware scan (braces
///    inside strings and escapes are handled), objects before arrays so that
///    citations like `[1]` are not taken for the answer. A never-closed
///    bracket that looks like JSON (`{"a": 1, "b": [`) is reported as
///    invalid JSON; spans nested inside it are not used in strict mode.
///
/// In lenient mode, when nothing parses strictly, the same candidates are
/// repaired with [`repair_json`] (trailing commas, single quotes, Python
/// literals, unquoted keys, truncation) and tried again, followed by the
/// never-closed tails. Lenient mode therefore returns the same result as
/// strict mode whenever strict mode succeeds.
///
/// Every step is linear in the length of the text.
///
/// ```
/// use agent_parse::{JsonExtractor, JsonSource};
/// use serde_json::json;
///
/// let reply = "Sure! Here it is: {'city': 'Paris', 'days': 3,} Enjoy.";
/// assert!(JsonExtractor::strict().extract_value(reply).is_err());
/// let found = JsonExtractor::lenient().extract_value(reply)?;
/// assert_eq!(found.value, json!({"city": "Paris", "days": 3}));
/// assert_eq!(found.source, JsonSource::Scan);
/// assert!(found.repaired);
/// # Ok::<(), agent_parse::ExtractError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JsonExtractor {
    lenient: bool,
}

impl JsonExtractor {
    /// Only valid JSON is accepted.
    pub const fn strict() -> Self {
        Self { lenient: false }
    }

    /// Common model mistakes are repaired when nothing parses strictly.
    pub const fn lenient() -> Self {
        Self { lenient: true }
    }

    /// Whether this extractor repairs.
    pub const fn is_lenient(&self) -> bool {
        self.lenient
    }

    /// The first JSON value in `text`.
    pub fn extract_value(&self, text: &str) -> Result<Extracted<Value>, ExtractError> {
        self.extract(text)
    }

    /// The first JSON value in `text` that deserializes into `T`.
    pub fn extract<T: DeserializeOwned>(&self, text: &str) -> Result<Extracted<T>, ExtractError> {
        let mut attempts = Attempts::default();
        if let Some(found) = self.extract_inner(text, &mut attempts) {
            return Ok(found);
        }
        Err(attempts.into_error(text.len()))
    }

    fn extract_inner<T: DeserializeOwned>(self, text: &str, attempts: &mut Attempts) -> Option<Extracted<T>> {
        // 1. The whole text.
        let leading = text.len() - text.trim_start().len();
        let whole = text.trim();
        if !whole.is_empty() {
            let report = whole.starts_with(['{', '[']);
            let span = leading..leading + whole.len();
            if let Some(found) = attempts.try_parse(whole, span, JsonSource::Whole, false, report) {
                return Some(found);
            }
        }
        // 2. Code fences, `json` ones first.
        let all_fences = fences(text);
        let ordered: Vec<&Fence<'_>> = all_fences
            .iter()
            .filter(|f| f.is_json())
            .chain(all_fences.iter().filter(|f| !f.is_json()))
            .collect();
        for fence in &ordered {
            let Some((body, span)) = trimmed(text, fence.body.clone()) else {
                continue;
            };
            let report = fence.is_json() || body.starts_with(['{', '[']);
            if let Some(found) = attempts.try_parse(body, span, JsonSource::Fence, false, report) {
                return Some(found);
            }
        }
        // 3. Balanced spans.
        let strict_scan = scan(text, Quotes::Double);
        let limit = strict_scan.first_json_like_unclosed();
        for span in objects_then_arrays(text, &strict_scan, ..limit.unwrap_or(usize::MAX)) {
            let json = text.get(span.clone())?;
            if let Some(found) = attempts.try_parse(json, span, JsonSource::Scan, false, true) {
                return Some(found);
            }
        }
        if let Some(at) = limit
            && let Some((json, span)) = trimmed(text, at..text.len())
            && let Some(found) = attempts.try_parse(json, span, JsonSource::Scan, false, true)
        {
            return Some(found);
        }
        if self.lenient {
            // Without single quotes, the lenient scan would find the same spans.
            let lenient_scan = if memchr::memchr(b'\'', text.as_bytes()).is_some() {
                scan(text, Quotes::DoubleAndSingle)
            } else {
                strict_scan
            };
            return Self::extract_repaired(text, &ordered, &lenient_scan, attempts);
        }
        None
    }

    /// The lenient pass: the same candidates, repaired.
    fn extract_repaired<T: DeserializeOwned>(
        text: &str,
        fences: &[&Fence<'_>],
        lenient_scan: &Scan,
        attempts: &mut Attempts,
    ) -> Option<Extracted<T>> {
        for fence in fences {
            let Some((body, span)) = trimmed(text, fence.body.clone()) else {
                continue;
            };
            if let Some(found) = attempts.try_repaired(body, span, JsonSource::Fence) {
                return Some(found);
            }
        }
        let limit = lenient_scan.first_json_like_unclosed();
        for span in objects_then_arrays(text, lenient_scan, ..limit.unwrap_or(usize::MAX)) {
            let json = text.get(span.clone())?;
            if let Some(found) = attempts.try_repaired(json, span, JsonSource::Scan) {
                return Some(found);
            }
        }
        for &at in &lenient_scan.json_like_tails {
            let json = text.get(at..)?;
            if let Some(found) = attempts.try_repaired(json, at..text.len(), JsonSource::Scan) {
                return Some(found);
            }
        }
        // Last resort: spans nested inside a never-closed bracket.
        if let Some(limit) = limit {
            for span in objects_then_arrays(text, lenient_scan, limit..) {
                let json = text.get(span.clone())?;
                if let Some(found) = attempts.try_parse(json, span.clone(), JsonSource::Scan, false, false) {
                    return Some(found);
                }
                if let Some(found) = attempts.try_repaired(json, span, JsonSource::Scan) {
                    return Some(found);
                }
            }
        }
        None
    }
}

/// `text[range]` trimmed, with its own range; `None` when empty.
fn trimmed(text: &str, range: Range<usize>) -> Option<(&str, Range<usize>)> {
    let raw = text.get(range.clone())?;
    let start = range.start + (raw.len() - raw.trim_start().len());
    let body = raw.trim();
    if body.is_empty() {
        return None;
    }
    Some((body, start..start + body.len()))
}

/// The scan's spans starting within `starts`: objects first, then arrays.
fn objects_then_arrays<'a>(
    text: &'a str,
    scan: &'a Scan,
    starts: impl std::ops::RangeBounds<usize> + Clone + 'a,
) -> impl Iterator<Item = Range<usize>> + 'a {
    let of_kind = move |opener: u8| {
        let starts = starts.clone();
        scan.spans
            .iter()
            .filter(move |span| starts.contains(&span.start) && text.as_bytes().get(span.start) == Some(&opener))
            .cloned()
    };
    of_kind(b'{').chain(of_kind(b'['))
}

/// Bookkeeping of failed candidates, for the error message.
#[derive(Debug, Default)]
struct Attempts {
    invalid: Option<ExtractError>,
    mismatch: Option<ExtractError>,
}

impl Attempts {
    /// Parses `json` (the text at `span`) into `T`; records the first failure of each kind.
    fn try_parse<T: DeserializeOwned>(
        &mut self,
        json: &str,
        span: Range<usize>,
        source: JsonSource,
        repaired: bool,
        report_invalid: bool,
    ) -> Option<Extracted<T>> {
        match serde_json::from_str::<T>(json) {
            Ok(value) => Some(Extracted {
                value,
                source,
                span,
                repaired,
            }),
            Err(error) => {
                let kind = JsonKind::of(json);
                // A data error may hide a syntax error further on: check the syntax alone.
                let syntax_error = if error.classify() == Category::Data {
                    serde_json::from_str::<IgnoredAny>(json).err().map(|e| e.to_string())
                } else {
                    Some(error.to_string())
                };
                match syntax_error {
                    None => {
                        if self.mismatch.is_none() {
                            self.mismatch = Some(ExtractError::Mismatch {
                                kind,
                                offset: span.start,
                                found_in: source,
                                reason: error.to_string(),
                            });
                        }
                    }
                    Some(syntax) => {
                        if report_invalid && self.invalid.is_none() {
                            self.invalid = Some(ExtractError::Invalid {
                                kind,
                                offset: span.start,
                                found_in: source,
                                reason: syntax,
                            });
                        }
                    }
                }
                None
            }
        }
    }

    fn try_repaired<T: DeserializeOwned>(
        &mut self,
        json: &str,
        span: Range<usize>,
        source: JsonSource,
    ) -> Option<Extracted<T>> {
        let fixed = repair_json(json)?;
        self.try_parse(&fixed, span, source, true, false)
    }

    fn into_error(self, len: usize) -> ExtractError {
        self.mismatch.or(self.invalid).unwrap_or(ExtractError::NotFound { len })
    }
}

/// The first JSON value in `text` (strict). See [`JsonExtractor`].
///
/// ```
/// let found = agent_parse::extract_json("The answer is ```json\n{\"ok\": true}\n```")?;
/// assert_eq!(found.value, serde_json::json!({"ok": true}));
/// # Ok::<(), agent_parse::ExtractError>(())
/// ```
pub fn extract_json(text: &str) -> Result<Extracted<Value>, ExtractError> {
    JsonExtractor::strict().extract_value(text)
}

/// The first JSON value in `text`, repairing common mistakes. See [`JsonExtractor`].
pub fn extract_json_lenient(text: &str) -> Result<Extracted<Value>, ExtractError> {
    JsonExtractor::lenient().extract_value(text)
}

/// The first JSON value in `text` that deserializes into `T` (strict).
///
/// ```
/// #[derive(Debug, serde::Deserialize)]
/// struct Person { name: String }
///
/// let person: Person = agent_parse::extract("Found: {\"name\": \"Ada\"}.")?;
/// assert_eq!(person.name, "Ada");
///
/// let error = agent_parse::extract::<Person>("Found: {\"nom\": \"Ada\"}.").unwrap_err();
/// assert_eq!(
///     error.to_string(),
///     "found a JSON object in the text at byte 7 but it does not match: missing field `name` at line 1 column 14"
/// );
/// # Ok::<(), agent_parse::ExtractError>(())
/// ```
pub fn extract<T: DeserializeOwned>(text: &str) -> Result<T, ExtractError> {
    JsonExtractor::strict().extract(text).map(|found| found.value)
}

/// The first JSON value in `text` that deserializes into `T`, repairing common mistakes.
pub fn extract_lenient<T: DeserializeOwned>(text: &str) -> Result<T, ExtractError> {
    JsonExtractor::lenient().extract(text).map(|found| found.value)
}
