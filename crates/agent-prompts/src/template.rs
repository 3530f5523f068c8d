//! [`PromptTemplate`]: `{{name}}` placeholders, parsed once, rendered strictly.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use crate::error::{PromptError, SyntaxErrorKind};

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// Literal text (escapes already resolved).
    Text(String),
    /// A placeholder: index into [`PromptTemplate::variables`].
    Var(usize),
}

/// A prompt with `{{name}}` placeholders.
///
/// Syntax:
///
/// - `{{name}}` or `{{ name }}` (any whitespace inside the braces) is replaced
///   by the value of `name`. Names match `[A-Za-z_][A-Za-z0-9_.-]*`.
/// - `{{{{` is a literal `{{`. A lone `}}` needs no escape.
/// - Everything else is literal, including single braces, so JSON examples
///   such as `{"name": "x"}` can be written as they are.
///
/// The text is parsed once, by [`PromptTemplate::parse`]; a malformed
/// placeholder is an error with its line and column. [`render`](Self::render)
/// inserts values literally: a value containing `{{x}}` is never expanded.
///
/// ```
/// use agent_prompts::PromptTemplate;
///
/// let template = PromptTemplate::parse("Hello {{ name }}, literal {{{{braces}}!")?;
/// assert_eq!(template.required_variables(), ["name"]);
/// let text = template.render([("name", "{{name}}")])?;
/// assert_eq!(text, "Hello {{name}}, literal {{braces}}!");
/// # Ok::<(), agent_prompts::PromptError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptTemplate {
    source: String,
    segments: Vec<Segment>,
    variables: Vec<String>,
}

const OPEN: &str = "{{";
const CLOSE: &str = "}}";

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

/// 1-based line and column (in characters) of byte offset `at` of `text`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

impl PromptTemplate {
    /// Parses template text.
    ///
    /// Fails with [`PromptError::Syntax`] (line and column of the offending
    /// `{{`) when a placeholder is malformed.
    pub fn parse(text: impl Into<String>) -> Result<Self, PromptError> {
        let source = text.into();
        let (segments, variables) = parse_segments(&source).map_err(|(at, kind)| {
            let (line, column) = line_column(&source, at);
            PromptError::Syntax {
                origin: "template text".to_owned(),
                line,
                column,
                kind,
            }
        })?;
        Ok(Self {
            source,
            segments,
            variables,
        })
    }

    /// The text the template was parsed from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The variables the template needs, in order of first appearance, without duplicates.
    pub fn required_variables(&self) -> &[String] {
        &self.variables
    }

    /// Renders with values from pairs: a `&HashMap<String, String>`, a
    /// `&BTreeMap<_, _>`, an array or `Vec` of `(&str, String)`, ...
    ///
    /// Every variable must have a value, otherwise the error lists *all* the
    /// missing ones. Extra values are ignored; when a name appears twice the
    /// last value wins.
    pub fn render<I, K, V>(&self, vars: I) -> Result<String, PromptError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let pairs: Vec<(K, V)> = vars.into_iter().collect();
        let map: HashMap<&str, &str> = pairs.iter().map(|(k, v)| (k.as_ref(), v.as_ref())).collect();
        self.render_with(|name| map.get(name).copied())
    }

    /// Renders with values from a lookup function, called once per distinct
    /// variable. `None` means "missing"; all missing variables are reported
    /// together.
    ///
    /// ```
    /// # use agent_prompts::PromptTemplate;
    /// let template = PromptTemplate::parse("{{a}} and {{b}}")?;
    /// let text = template.render_with(|name| Some(name.to_uppercase()))?;
    /// assert_eq!(text, "A and B");
    /// # Ok::<(), agent_prompts::PromptError>(())
    /// ```
    pub fn render_with<F, S>(&self, mut lookup: F) -> Result<String, PromptError>
    where
        F: FnMut(&str) -> Option<S>,
        S: AsRef<str>,
    {
        let values: Vec<Option<S>> = self.variables.iter().map(|name| lookup(name)).collect();
        let missing: Vec<String> = self
            .variables
            .iter()
            .zip(&values)
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name.clone())
            .collect();
        if !missing.is_empty() {
            return Err(PromptError::MissingVariables { missing });
        }
        let mut out = String::with_capacity(self.source.len());
        for segment in &self.segments {
            match segment {
                Segment::Text(text) => out.push_str(text),
                Segment::Var(index) => {
                    if let Some(Some(value)) = values.get(*index) {
                        out.push_str(value.as_ref());
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Splits `text` into segments; on error returns the byte offset of the
/// offending `{{` and what is wrong.
fn parse_segments(text: &str) -> Result<(Vec<Segment>, Vec<String>), (usize, SyntaxErrorKind)> {
    let mut segments = Vec::new();
    let mut variables: Vec<String> = Vec::new();
    let mut literal = String::new();
    let mut pos = 0;
    while let Some(relative) = text.get(pos..).and_then(|rest| rest.find(OPEN)) {
        let open = pos + relative;
        literal.push_str(text.get(pos..open).unwrap_or_default());
        let after_open = open + OPEN.len();
        let rest = text.get(after_open..).unwrap_or_default();
        if rest.starts_with(OPEN) {
            // `{{{{` is a literal `{{`.
            literal.push_str(OPEN);
            pos = after_open + OPEN.len();
            continue;
        }
        let (name, consumed) = parse_placeholder(rest).map_err(|kind| (open, kind))?;
        if !literal.is_empty() {
            segments.push(Segment::Text(std::mem::take(&mut literal)));
        }
        let index = if let Some(index) = variables.iter().position(|v| v == name) {
            index
        } else {
            variables.push(name.to_owned());
            variables.len() - 1
        };
        segments.push(Segment::Var(index));
        pos = after_open + consumed;
    }
    literal.push_str(text.get(pos..).unwrap_or_default());
    if !literal.is_empty() {
        segments.push(Segment::Text(literal));
    }
    Ok((segments, variables))
}

/// Parses ` name }}` (the text after an opening `{{`); returns the name and
/// the number of bytes consumed including the closing `}}`.
fn parse_placeholder(rest: &str) -> Result<(&str, usize), SyntaxErrorKind> {
    let name_start = rest.len() - rest.trim_start().len();
    let after_ws = &rest[name_start..];
    let Some(first) = after_ws.chars().next() else {
        return Err(SyntaxErrorKind::Unclosed);
    };
    if !is_name_start(first) {
        return Err(if after_ws.starts_with(CLOSE) {
            SyntaxErrorKind::EmptyName
        } else {
            SyntaxErrorKind::InvalidName { found: first }
        });
    }
    let name_len = after_ws.find(|c: char| !is_name_char(c)).unwrap_or(after_ws.len());
    let name = &after_ws[..name_len];
    let after_name = &after_ws[name_len..];
    let trailing_ws = after_name.len() - after_name.trim_start().len();
    let tail = &after_name[trailing_ws..];
    if tail.starts_with(CLOSE) {
        return Ok((name, name_start + name_len + trailing_ws + CLOSE.len()));
    }
    match tail.chars().next() {
        None => Err(SyntaxErrorKind::Unclosed),
        Some(found) => Err(SyntaxErrorKind::ExpectedClose {
            name: name.to_owned(),
            found,
        }),
    }
}

impl fmt::Display for PromptTemplate {
    /// Writes the template's source text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl FromStr for PromptTemplate {
    type Err = PromptError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl TryFrom<&str> for PromptTemplate {
    type Error = PromptError;

    fn try_from(text: &str) -> Result<Self, Self::Error> {
        Self::parse(text)
    }
}

impl TryFrom<String> for PromptTemplate {
    type Error = PromptError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        Self::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_characters() {
        assert_eq!(line_column("ab\ncdé{{", 7), (2, 4));
        assert_eq!(line_column("{{", 0), (1, 1));
    }

    #[test]
    fn variable_index_is_shared_by_repeats() {
        let template = PromptTemplate::parse("{{a}}{{b}}{{a}}").expect("valid template");
        assert_eq!(
            template.segments,
            vec![Segment::Var(0), Segment::Var(1), Segment::Var(0)]
        );
    }
}
