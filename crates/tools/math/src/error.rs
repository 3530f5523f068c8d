//! [`CalcError`]: why an expression could not be evaluated, and where.

use std::fmt;

/// The kind of problem, which also opens the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The text is not a well-formed expression.
    Syntax,
    /// A name that is neither a known function nor a known constant.
    UnknownName,
    /// A function called with too few or too many arguments.
    ArgumentCount,
    /// Division or remainder by zero, or zero raised to a negative power.
    DivisionByZero,
    /// A result that is not a real number: `sqrt(-1)`, `ln(0)`, `(-8)^0.5`.
    Undefined,
    /// A result too large to represent (beyond about 1.8e308).
    Overflow,
    /// Parentheses, function calls or powers nested deeper than
    /// [`MAX_DEPTH`](crate::MAX_DEPTH).
    TooDeep,
}

impl ErrorKind {
    /// The words that open the message.
    pub fn label(self) -> &'static str {
        match self {
            Self::Syntax => "syntax error",
            Self::UnknownName => "unknown name",
            Self::ArgumentCount => "wrong number of arguments",
            Self::DivisionByZero => "division by zero",
            Self::Undefined => "undefined result",
            Self::Overflow => "overflow",
            Self::TooDeep => "expression too deeply nested",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Why an expression failed, with the 1-based column (in characters) of the
/// token at fault. Displayed as `{kind} at column {column}: {reason}`, e.g.
/// `syntax error at column 5: expected ")" but found end of input`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalcError {
    kind: ErrorKind,
    column: usize,
    reason: String,
}

impl CalcError {
    /// An error at byte `offset` of `source`.
    pub(crate) fn new(kind: ErrorKind, source: &str, offset: usize, reason: impl Into<String>) -> Self {
        let offset = offset.min(source.len());
        let column = source.get(..offset).map_or(offset, |prefix| prefix.chars().count()) + 1;
        Self {
            kind,
            column,
            reason: reason.into(),
        }
    }

    /// What kind of problem it is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The 1-based column, counted in characters, of the token at fault.
    /// The end of the input is one past the last character.
    pub fn column(&self) -> usize {
        self.column
    }

    /// The explanation, without the kind and column.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for CalcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at column {}: {}", self.kind, self.column, self.reason)
    }
}

impl std::error::Error for CalcError {}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_characters_not_bytes() {
        let error = CalcError::new(ErrorKind::Syntax, "2×3 $", 5, "unexpected");
        assert_eq!(error.column(), 5);
        assert_eq!(error.to_string(), "syntax error at column 5: unexpected");
    }

    #[test]
    fn end_of_input_is_one_past_the_last_character() {
        let error = CalcError::new(ErrorKind::Syntax, "(1+2", 4, "expected \")\" but found end of input");
        assert_eq!(
            error.to_string(),
            "syntax error at column 5: expected \")\" but found end of input"
        );
    }
}
