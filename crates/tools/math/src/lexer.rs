//! The tokenizer: turns an expression into tokens that remember the byte
//! offset they start at, so every error can name a column.

use crate::error::{CalcError, ErrorKind};

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinaryOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Remainder,
    Power,
}

impl BinaryOp {
    /// The operator as the model would write it.
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            Self::Add => "+",
            Self::Subtract => "-",
            Self::Multiply => "*",
            Self::Divide => "/",
            Self::Remainder => "%",
            Self::Power => "^",
        }
    }
}

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum TokenKind<'a> {
    Number(f64),
    Identifier(&'a str),
    Operator(BinaryOp),
    LeftParen,
    RightParen,
    Comma,
    End,
}

impl TokenKind<'_> {
    /// How an error message names the token.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Number(value) => format!("number {value}"),
            Self::Identifier(name) => format!("\"{name}\""),
            Self::Operator(op) => format!("\"{}\"", op.symbol()),
            Self::LeftParen => "\"(\"".to_owned(),
            Self::RightParen => "\")\"".to_owned(),
            Self::Comma => "\",\"".to_owned(),
            Self::End => "end of input".to_owned(),
        }
    }
}

/// A token and the byte offset where it starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Token<'a> {
    pub(crate) kind: TokenKind<'a>,
    pub(crate) offset: usize,
}

/// Produces tokens on demand, so the first error in reading order wins.
pub(crate) struct Lexer<'a> {
    source: &'a str,
    offset: usize,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(source: &'a str) -> Self {
        Self { source, offset: 0 }
    }

    /// The next token, or a syntax error for a character that starts none.
    pub(crate) fn next_token(&mut self) -> Result<Token<'a>, CalcError> {
        let rest = &self.source[self.offset..];
        let trimmed = rest.trim_start();
        self.offset += rest.len() - trimmed.len();
        let start = self.offset;
        let Some(first) = trimmed.chars().next() else {
            return Ok(Token {
                kind: TokenKind::End,
                offset: start,
            });
        };
        let (kind, length) = match first {
            '0'..='9' | '.' => return self.number(start),
            c if c.is_alphabetic() || c == '_' => {
                let length = trimmed
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(trimmed.len());
                (TokenKind::Identifier(&trimmed[..length]), length)
            }
            '*' if trimmed.starts_with("**") => (TokenKind::Operator(BinaryOp::Power), 2),
            '+' => (TokenKind::Operator(BinaryOp::Add), 1),
            '-' | '\u{2212}' => (TokenKind::Operator(BinaryOp::Subtract), first.len_utf8()),
            '*' | '\u{d7}' | '\u{22c5}' => (TokenKind::Operator(BinaryOp::Multiply), first.len_utf8()),
            '/' | '\u{f7}' => (TokenKind::Operator(BinaryOp::Divide), first.len_utf8()),
            '%' => (TokenKind::Operator(BinaryOp::Remainder), 1),
            '^' => (TokenKind::Operator(BinaryOp::Power), 1),
            '(' => (TokenKind::LeftParen, 1),
            ')' => (TokenKind::RightParen, 1),
            ',' => (TokenKind::Comma, 1),
            other => {
                return Err(CalcError::new(
                    ErrorKind::Syntax,
                    self.source,
                    start,
                    format!(
                        "unexpected character {other:?}; use numbers, + - * / % ^, parentheses, commas, \
                         and function or constant names"
                    ),
                ));
            }
        };
        self.offset += length;
        Ok(Token { kind, offset: start })
    }

    /// A decimal number: `12`, `3.25`, `.5`, `1.5e3`, `2E-4`.
    fn number(&mut self, start: usize) -> Result<Token<'a>, CalcError> {
        let bytes = self.source.as_bytes();
        let mut end = start;
        let digits = |mut at: usize| {
            while at < bytes.len() && bytes[at].is_ascii_digit() {
                at += 1;
            }
            at
        };
        end = digits(end);
        let integer_digits = end - start;
        let mut fraction_digits = 0;
        if end < bytes.len() && bytes[end] == b'.' {
            let after = digits(end + 1);
            fraction_digits = after - end - 1;
            end = after;
        }
        if integer_digits == 0 && fraction_digits == 0 {
            return Err(CalcError::new(
                ErrorKind::Syntax,
                self.source,
                start,
                "a \".\" must be part of a number such as 0.5",
            ));
        }
        // An exponent only when digits follow: `2e` is the number 2 then the name `e`.
        if end < bytes.len() && (bytes[end] == b'e' || bytes[end] == b'E') {
            let mut at = end + 1;
            if at < bytes.len() && (bytes[at] == b'+' || bytes[at] == b'-') {
                at += 1;
            }
            let after = digits(at);
            if after > at {
                end = after;
            }
        }
        let text = &self.source[start..end];
        let value: f64 = text.parse().map_err(|_| {
            CalcError::new(
                ErrorKind::Syntax,
                self.source,
                start,
                format!("\"{text}\" is not a valid number"),
            )
        })?;
        if !value.is_finite() {
            return Err(CalcError::new(
                ErrorKind::Overflow,
                self.source,
                start,
                format!("the number {text} is too large (the limit is about 1.8e308)"),
            ));
        }
        self.offset = end;
        Ok(Token {
            kind: TokenKind::Number(value),
            offset: start,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::float_cmp)]
mod tests {
    use super::*;

    fn kinds(source: &str) -> Vec<TokenKind<'_>> {
        let mut lexer = Lexer::new(source);
        let mut kinds = Vec::new();
        loop {
            let token = lexer.next_token().unwrap();
            kinds.push(token.kind);
            if token.kind == TokenKind::End {
                return kinds;
            }
        }
    }

    #[test]
    fn reads_numbers_operators_and_names() {
        assert_eq!(
            kinds("1.5e3 + .5*sqrt(x_1, 2) ** 2"),
            vec![
                TokenKind::Number(1500.0),
                TokenKind::Operator(BinaryOp::Add),
                TokenKind::Number(0.5),
                TokenKind::Operator(BinaryOp::Multiply),
                TokenKind::Identifier("sqrt"),
                TokenKind::LeftParen,
                TokenKind::Identifier("x_1"),
                TokenKind::Comma,
                TokenKind::Number(2.0),
                TokenKind::RightParen,
                TokenKind::Operator(BinaryOp::Power),
                TokenKind::Number(2.0),
                TokenKind::End,
            ]
        );
    }

    #[test]
    fn exponent_needs_digits() {
        assert_eq!(
            kinds("2e"),
            vec![TokenKind::Number(2.0), TokenKind::Identifier("e"), TokenKind::End]
        );
        assert_eq!(kinds("2E-2"), vec![TokenKind::Number(0.02), TokenKind::End]);
    }

    #[test]
    fn tokens_remember_byte_offsets() {
        let mut lexer = Lexer::new("  12 ×3");
        assert_eq!(lexer.next_token().unwrap().offset, 2);
        let times = lexer.next_token().unwrap();
        assert_eq!((times.kind, times.offset), (TokenKind::Operator(BinaryOp::Multiply), 5));
        assert_eq!(lexer.next_token().unwrap().offset, 7);
    }

    #[test]
    fn unknown_characters_are_syntax_errors() {
        let mut lexer = Lexer::new("1 $ 2");
        lexer.next_token().unwrap();
        let error = lexer.next_token().unwrap_err();
        assert_eq!(error.column(), 3);
        assert!(
            error
                .to_string()
                .starts_with("syntax error at column 3: unexpected character '$'")
        );
    }
}
