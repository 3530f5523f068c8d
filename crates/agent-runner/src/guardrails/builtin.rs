//! The built-in guardrails: a size limit, a deny list, redaction of
//! secrets and personal data, and a JSON Schema check of the answer.
//!
//! Each works at any place of [`Guardrails`](super::Guardrails); the
//! usual ones are a size limit and a deny list on the input, redaction on
//! tool results, the schema check on the output.

use async_trait::async_trait;
use regex::{Regex, RegexBuilder};
use serde_json::Value;

use super::{Checked, Guardrail, Verdict};
use crate::typed::{CompiledSchema, TypedError};

/// Trips on a text longer than `max_chars` characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxInputSize {
    max_chars: usize,
}

impl MaxInputSize {
    /// At most `max_chars` characters (Unicode scalar values).
    pub fn new(max_chars: usize) -> Self {
        Self { max_chars }
    }
}

#[async_trait]
impl Guardrail for MaxInputSize {
    fn name(&self) -> &'static str {
        "max_input_size"
    }

    async fn check_text(&self, text: &str, _at: Checked<'_>) -> Verdict<String> {
        // Counting stops one past the limit: a huge text costs no more.
        let counted = text.chars().take(self.max_chars.saturating_add(1)).count();
        if counted > self.max_chars {
            Verdict::trip(format!(
                "the text is longer than the {} characters allowed",
                self.max_chars
            ))
        } else {
            Verdict::Pass
        }
    }
}

/// Trips on a text holding one of its keywords (any case, any spacing
/// between words) or matching one of its regular expressions. The reason
/// names the rule, not the text.
#[derive(Debug, Clone)]
pub struct DenyList {
    keywords: Option<Regex>,
    keyword_list: Vec<String>,
    patterns: Vec<Regex>,
}

impl DenyList {
    /// Denies `keywords` only.
    ///
    /// # Errors
    ///
    /// The keywords make a regular expression over the size limit (many
    /// thousands of them).
    pub fn keywords<K: Into<String>>(keywords: impl IntoIterator<Item = K>) -> Result<Self, regex::Error> {
        Self::new(keywords, std::iter::empty::<&str>())
    }

    /// Denies `keywords` and texts matching `patterns` (the `regex`
    /// crate's syntax; add `(?i)` for any case).
    ///
    /// # Errors
    ///
    /// The first pattern that is not a valid regular expression.
    pub fn new<K, P>(
        keywords: impl IntoIterator<Item = K>,
        patterns: impl IntoIterator<Item = P>,
    ) -> Result<Self, regex::Error>
    where
        K: Into<String>,
        P: AsRef<str>,
    {
        let keyword_list: Vec<String> = keywords
            .into_iter()
            .map(Into::into)
            .filter(|keyword| !keyword.trim().is_empty())
            .collect();
        let keywords = if keyword_list.is_empty() {
            None
        } else {
            let alternatives: Vec<String> = keyword_list
                .iter()
                .map(|keyword| {
                    keyword
                        .split_whitespace()
                        .map(regex::escape)
                        .collect::<Vec<_>>()
                        .join(r"\s+")
                })
                .collect();
            Some(
                RegexBuilder::new(&alternatives.join("|"))
                    .case_insensitive(true)
                    .build()?,
            )
        };
        let patterns = patterns
            .into_iter()
            .map(|pattern| Regex::new(pattern.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            keywords,
            keyword_list,
            patterns,
        })
    }
}

#[async_trait]
impl Guardrail for DenyList {
    fn name(&self) -> &'static str {
        "deny_list"
    }

    async fn check_text(&self, text: &str, _at: Checked<'_>) -> Verdict<String> {
        if let Some(found) = self.keywords.as_ref().and_then(|keywords| keywords.find(text)) {
            let words: Vec<&str> = found.as_str().split_whitespace().collect();
            let keyword = self
                .keyword_list
                .iter()
                .find(|keyword| {
                    keyword
                        .split_whitespace()
                        .map(str::to_lowercase)
                        .eq(words.iter().map(|word| word.to_lowercase()))
                })
                .map_or(found.as_str(), String::as_str);
            return Verdict::trip(format!("it holds the denied phrase `{keyword}`"));
        }
        if let Some(pattern) = self.patterns.iter().find(|pattern| pattern.is_match(text)) {
            return Verdict::trip(format!("it matches the denied pattern `{}`", pattern.as_str()));
        }
        Verdict::Pass
    }
}

/// One kind of text [`Redactor`] hides: a name (in the replacement,
/// `[redacted NAME]`) and a regular expression. A group named `secret`
/// limits the replacement to it (`api_key=(?P<secret>\S+)` keeps
/// `api_key=`).
#[derive(Debug, Clone)]
pub struct RedactionPattern {
    name: String,
    regex: Regex,
    /// Whether a match really is one (the card numbers' checksum).
    confirm: Confirm,
}

/// Whether a match of a pattern really is one.
type Confirm = Option<fn(&str) -> bool>;

/// The names of the built-in patterns.
pub const BUILTIN_PATTERNS: [&str; 3] = ["api_key", "email", "card_number"];

impl RedactionPattern {
    /// A pattern of your own.
    ///
    /// # Errors
    ///
    /// `regex` is not a valid regular expression.
    pub fn new(name: impl Into<String>, regex: &str) -> Result<Self, regex::Error> {
        Ok(Self {
            name: name.into(),
            regex: Regex::new(regex)?,
            confirm: None,
        })
    }

    /// A built-in pattern by name ([`BUILTIN_PATTERNS`]): `api_key`
    /// (provider key formats such as `sk-…`, `AKIA…`, `ghp_…`, `AIza…`,
    /// `xox…-`, bearer tokens, and the values of `api_key=`/`token:`/
    /// `password=`-style assignments), `email`, `card_number` (13 to 19
    /// digits, spaced or not, that pass the Luhn check).
    pub fn builtin(name: &str) -> Option<Self> {
        let (regex, confirm): (&str, Confirm) = match name {
            "api_key" => (
                r#"(?i:\b(?:api[_-]?key|secret|token|password|passwd)\b["']?\s*[:=]\s*["']?)(?P<secret>[^\s"',;]{6,})|(?i:\bbearer\s+)(?P<bearer>[A-Za-z0-9._~+/-]{16,}=*)|\b(?:sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|AIza[0-9A-Za-z_-]{35}|xox[abprs]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20,})"#,
                None,
            ),
            "email" => (r"(?i)\b[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b", None),
            "card_number" => (r"\b\d(?:[ -]?\d){12,18}\b", Some(luhn_valid)),
            _ => return None,
        };
        let regex = Regex::new(regex).ok()?;
        Some(Self {
            name: name.to_owned(),
            regex,
            confirm,
        })
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `text` with every match replaced, and how many were.
    fn redact(&self, text: &str) -> (String, usize) {
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        let mut count = 0;
        for captures in self.regex.captures_iter(text) {
            let Some(span) = captures
                .name("secret")
                .or_else(|| captures.name("bearer"))
                .or_else(|| captures.get(0))
            else {
                continue;
            };
            if self.confirm.is_some_and(|confirm| !confirm(span.as_str())) {
                continue;
            }
            out.push_str(&text[last..span.start()]);
            out.push_str("[redacted ");
            out.push_str(&self.name);
            out.push(']');
            last = span.end();
            count += 1;
        }
        out.push_str(&text[last..]);
        (out, count)
    }
}

/// Whether the digits of `candidate` (spaces and dashes aside) pass the
/// Luhn checksum of card numbers.
fn luhn_valid(candidate: &str) -> bool {
    let digits: Vec<u32> = candidate.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(position, digit)| {
            if position % 2 == 1 {
                let doubled = digit * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                *digit
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Replaces secrets and personal data with `[redacted NAME]`; never trips.
#[derive(Debug, Clone)]
pub struct Redactor {
    patterns: Vec<RedactionPattern>,
}

impl Redactor {
    /// Hides what `patterns` match.
    pub fn new(patterns: impl IntoIterator<Item = RedactionPattern>) -> Self {
        Self {
            patterns: patterns.into_iter().collect(),
        }
    }

    /// Hides API keys, e-mail addresses and card numbers ([`BUILTIN_PATTERNS`]).
    pub fn builtin() -> Self {
        Self::new(
            BUILTIN_PATTERNS
                .iter()
                .filter_map(|name| RedactionPattern::builtin(name)),
        )
    }

    /// The patterns' names, in order.
    pub fn pattern_names(&self) -> Vec<&str> {
        self.patterns.iter().map(RedactionPattern::name).collect()
    }
}

#[async_trait]
impl Guardrail for Redactor {
    fn name(&self) -> &'static str {
        "redact"
    }

    async fn check_text(&self, text: &str, _at: Checked<'_>) -> Verdict<String> {
        let mut current: Option<String> = None;
        for pattern in &self.patterns {
            let (redacted, count) = pattern.redact(current.as_deref().unwrap_or(text));
            if count > 0 {
                current = Some(redacted);
            }
        }
        current.map_or(Verdict::Pass, Verdict::Rewrite)
    }

    /// Redacts inside the arguments' strings, so they stay JSON.
    async fn check_arguments(&self, call: &agent_core::ToolCall) -> Verdict<Value> {
        let mut arguments = call.arguments.clone();
        let mut changed = false;
        redact_strings(&mut arguments, &mut |text| {
            let mut current: Option<String> = None;
            for pattern in &self.patterns {
                let (redacted, count) = pattern.redact(current.as_deref().unwrap_or(text));
                if count > 0 {
                    current = Some(redacted);
                }
            }
            if let Some(redacted) = current {
                changed = true;
                Some(redacted)
            } else {
                None
            }
        });
        if changed {
            Verdict::Rewrite(arguments)
        } else {
            Verdict::Pass
        }
    }
}

/// Replaces every string of `value` for which `redact` gives a new one.
fn redact_strings(value: &mut Value, redact: &mut dyn FnMut(&str) -> Option<String>) {
    match value {
        Value::String(text) => {
            if let Some(redacted) = redact(text) {
                *text = redacted;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| redact_strings(item, redact)),
        Value::Object(fields) => fields.values_mut().for_each(|field| redact_strings(field, redact)),
        _ => {}
    }
}

/// Trips on an answer that is not JSON matching the schema (JSON inside
/// prose or a code fence counts, as for typed runs); the reason lists the
/// violations.
pub struct OutputSchema {
    schema: CompiledSchema,
}

impl OutputSchema {
    /// Checks answers against `schema`.
    ///
    /// # Errors
    ///
    /// [`TypedError::Schema`] when `schema` is not a JSON Schema that
    /// compiles.
    pub fn new(schema: Value) -> Result<Self, TypedError> {
        Ok(Self {
            schema: CompiledSchema::new(schema)?,
        })
    }
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSchema").finish_non_exhaustive()
    }
}

#[async_trait]
impl Guardrail for OutputSchema {
    fn name(&self) -> &'static str {
        "json_schema"
    }

    async fn check_text(&self, text: &str, _at: Checked<'_>) -> Verdict<String> {
        match self.schema.check(text) {
            Ok(_) => Verdict::Pass,
            Err(violations) => {
                let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
                Verdict::trip(format!("the answer does not match the schema: {}", list.join("; ")))
            }
        }
    }
}

#[cfg(test)]
mod tests;
