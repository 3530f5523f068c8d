//! The one error type of this crate.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// What is wrong with a placeholder in a template's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyntaxErrorKind {
    /// `{{` with no `}}` after the name (the text ends first).
    Unclosed,
    /// `{{ }}`: a placeholder without a name.
    EmptyName,
    /// The name does not start with a letter or `_` (it starts with `found`).
    InvalidName {
        /// The character where a name was expected.
        found: char,
    },
    /// After the name, something other than `}}` (and whitespace) follows.
    ExpectedClose {
        /// The name read so far.
        name: String,
        /// The character found instead of `}}`.
        found: char,
    },
}

impl fmt::Display for SyntaxErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unclosed => f.write_str("`{{` is never closed with `}}`"),
            Self::EmptyName => f.write_str("the placeholder has no variable name"),
            Self::InvalidName { found } => write!(
                f,
                "expected a variable name (a letter or `_` first), found {found:?}; \
                 write `{{{{{{{{` for a literal `{{{{`"
            ),
            Self::ExpectedClose { name, found } => {
                write!(f, "expected `}}}}` after the variable name `{name}`, found {found:?}")
            }
        }
    }
}

/// A place that was searched for a template and did not have it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchLocation {
    /// A template directory, with the file names tried in it.
    Directory {
        /// The directory.
        path: PathBuf,
        /// File names tried, in order (e.g. `greeting.md`, `greeting.txt`).
        tried: Vec<String>,
    },
    /// The built-in templates.
    Builtins {
        /// Names of the built-in templates.
        available: Vec<String>,
    },
}

impl fmt::Display for SearchLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Directory { path, tried } => {
                write!(f, "directory `{}` (tried {})", path.display(), tried.join(", "))
            }
            Self::Builtins { available } => write!(f, "built-in templates (available: {})", available.join(", ")),
        }
    }
}

/// Errors from parsing, rendering and loading templates.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PromptError {
    /// A placeholder in the template text is malformed.
    #[error("malformed placeholder in {origin} at line {line}, column {column}: {kind}")]
    Syntax {
        /// Where the text came from: `template text`, a file path or `built-in template NAME`.
        origin: String,
        /// 1-based line of the opening `{{`.
        line: usize,
        /// 1-based column (in characters) of the opening `{{`.
        column: usize,
        /// What is wrong.
        kind: SyntaxErrorKind,
    },
    /// `render` was not given a value for every variable.
    #[error("missing values for template variables: {}", quote_list(missing))]
    MissingVariables {
        /// Every missing variable, in order of first appearance in the template.
        missing: Vec<String>,
    },
    /// No source had a template of this name.
    #[error("prompt template `{name}` not found; searched {}", join_locations(searched))]
    NotFound {
        /// The requested name.
        name: String,
        /// Every place that was searched, in order.
        searched: Vec<SearchLocation>,
    },
    /// The name cannot be a template name (empty, absolute, or containing `..`).
    #[error("invalid prompt template name {name:?}: use a relative name like `greeting` or `agents/travel`")]
    InvalidName {
        /// The rejected name.
        name: String,
    },
    /// A template file exists but could not be read.
    #[error("cannot read prompt template file `{}`: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: Arc<std::io::Error>,
    },
}

impl PromptError {
    /// Replaces the origin of a syntax error (e.g. with the file it was read from).
    #[must_use]
    pub fn with_origin(self, new_origin: impl Into<String>) -> Self {
        match self {
            Self::Syntax { line, column, kind, .. } => Self::Syntax {
                origin: new_origin.into(),
                line,
                column,
                kind,
            },
            other => other,
        }
    }
}

fn quote_list(names: &[String]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn join_locations(locations: &[SearchLocation]) -> String {
    if locations.is_empty() {
        return "nowhere (no sources configured)".to_owned();
    }
    locations.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}
