//! A recursive-descent parser that compiles an expression to postfix
//! operations ([`Op`]), evaluated afterwards by [`crate::eval`].
//!
//! Grammar, loosest binding first:
//!
//! ```text
//! expression := term (("+" | "-") term)*            left-associative
//! term       := unary (("*" | "/" | "%") unary)*    left-associative
//! unary      := ("-" | "+")* power                  so -2^2 = -(2^2)
//! power      := primary ("^" unary)?                right-associative: 2^3^2 = 2^9
//! primary    := number | constant | function "(" expression ("," expression)* ")"
//!             | "(" expression ")"
//! ```
//!
//! Chains of `+ - * / %` and of unary signs are loops; only parentheses,
//! function arguments and the right side of `^` recurse, and each of those
//! counts towards [`MAX_DEPTH`], so no input can overflow the stack.
//! Postfix output keeps evaluation iterative too.

use crate::error::{CalcError, ErrorKind};
use crate::functions::{self, Function};
use crate::lexer::{BinaryOp, Lexer, Token, TokenKind};

/// How deeply parentheses, function calls and powers may nest.
pub const MAX_DEPTH: usize = 256;

/// One step of the compiled expression, applied to a value stack.
pub(crate) enum Op {
    Push(f64),
    Negate,
    Binary {
        op: BinaryOp,
        offset: usize,
    },
    Call {
        function: &'static Function,
        args: usize,
        offset: usize,
    },
}

/// Compiles `source`, reporting the first syntax error in reading order.
pub(crate) fn compile(source: &str) -> Result<Vec<Op>, CalcError> {
    let mut lexer = Lexer::new(source);
    let current = lexer.next_token()?;
    let mut parser = Parser {
        source,
        lexer,
        current,
        depth: 0,
        ops: Vec::new(),
    };
    if parser.current.kind == TokenKind::End {
        return Err(parser.error(
            ErrorKind::Syntax,
            parser.current.offset,
            "the expression is empty; write one such as 2 * (3 + 4)",
        ));
    }
    parser.expression()?;
    match parser.current.kind {
        TokenKind::End => Ok(parser.ops),
        TokenKind::RightParen => Err(parser.error(
            ErrorKind::Syntax,
            parser.current.offset,
            "unmatched \")\" with no \"(\" before it",
        )),
        _ => Err(parser.unexpected("an operator (+ - * / % ^) or the end of the expression")),
    }
}

struct Parser<'a> {
    source: &'a str,
    lexer: Lexer<'a>,
    current: Token<'a>,
    depth: usize,
    ops: Vec<Op>,
}

impl<'a> Parser<'a> {
    fn advance(&mut self) -> Result<Token<'a>, CalcError> {
        let next = self.lexer.next_token()?;
        Ok(std::mem::replace(&mut self.current, next))
    }

    fn error(&self, kind: ErrorKind, offset: usize, reason: impl Into<String>) -> CalcError {
        CalcError::new(kind, self.source, offset, reason)
    }

    /// `expected X but found Y` at the current token.
    fn unexpected(&self, expected: &str) -> CalcError {
        let found = self.current.kind;
        let hint = match found {
            TokenKind::Number(_) | TokenKind::Identifier(_) | TokenKind::LeftParen => {
                "; write multiplication explicitly, e.g. 2*(3+4) or 2*pi"
            }
            _ => "",
        };
        self.error(
            ErrorKind::Syntax,
            self.current.offset,
            format!("expected {expected} but found {}{hint}", found.describe()),
        )
    }

    /// Enters one level of nesting at `offset`.
    fn enter(&mut self, offset: usize) -> Result<(), CalcError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(
                ErrorKind::TooDeep,
                offset,
                format!(
                    "more than {MAX_DEPTH} levels of parentheses, function calls or \"^\"; simplify the expression"
                ),
            ));
        }
        Ok(())
    }

    fn expression(&mut self) -> Result<(), CalcError> {
        self.term()?;
        while let TokenKind::Operator(op @ (BinaryOp::Add | BinaryOp::Subtract)) = self.current.kind {
            let offset = self.advance()?.offset;
            self.term()?;
            self.ops.push(Op::Binary { op, offset });
        }
        Ok(())
    }

    fn term(&mut self) -> Result<(), CalcError> {
        self.unary()?;
        while let TokenKind::Operator(op @ (BinaryOp::Multiply | BinaryOp::Divide | BinaryOp::Remainder)) =
            self.current.kind
        {
            let offset = self.advance()?.offset;
            self.unary()?;
            self.ops.push(Op::Binary { op, offset });
        }
        Ok(())
    }

    fn unary(&mut self) -> Result<(), CalcError> {
        let mut negations = 0_usize;
        while let TokenKind::Operator(op @ (BinaryOp::Add | BinaryOp::Subtract)) = self.current.kind {
            if op == BinaryOp::Subtract {
                negations += 1;
            }
            self.advance()?;
        }
        self.power()?;
        self.ops.extend((0..negations).map(|_| Op::Negate));
        Ok(())
    }

    fn power(&mut self) -> Result<(), CalcError> {
        self.primary()?;
        if let TokenKind::Operator(BinaryOp::Power) = self.current.kind {
            let offset = self.advance()?.offset;
            self.enter(offset)?;
            self.unary()?;
            self.depth -= 1;
            self.ops.push(Op::Binary {
                op: BinaryOp::Power,
                offset,
            });
        }
        Ok(())
    }

    fn primary(&mut self) -> Result<(), CalcError> {
        match self.current.kind {
            TokenKind::Number(value) => {
                self.advance()?;
                self.ops.push(Op::Push(value));
                Ok(())
            }
            TokenKind::Identifier(name) => {
                let offset = self.advance()?.offset;
                if self.current.kind == TokenKind::LeftParen {
                    self.call(name, offset)
                } else {
                    self.constant(name, offset)
                }
            }
            TokenKind::LeftParen => {
                let offset = self.advance()?.offset;
                self.enter(offset)?;
                self.expression()?;
                self.depth -= 1;
                self.expect_right_paren()
            }
            _ => Err(self.unexpected("a number, a name or \"(\"")),
        }
    }

    fn constant(&mut self, name: &str, offset: usize) -> Result<(), CalcError> {
        if let Some(value) = functions::constant(name) {
            self.ops.push(Op::Push(value));
            return Ok(());
        }
        if let Some(function) = functions::function(name) {
            return Err(self.error(
                ErrorKind::Syntax,
                offset,
                format!(
                    "\"{name}\" is a function; call it with parentheses, e.g. {}(2)",
                    function.name
                ),
            ));
        }
        Err(self.unknown(name, offset))
    }

    fn call(&mut self, name: &str, offset: usize) -> Result<(), CalcError> {
        let Some(function) = functions::function(name) else {
            if functions::constant(name).is_some() {
                return Err(self.error(
                    ErrorKind::Syntax,
                    offset,
                    format!("\"{name}\" is a constant, not a function; write {name}*(...) to multiply"),
                ));
            }
            return Err(self.unknown(name, offset));
        };
        let open = self.advance()?.offset;
        self.enter(open)?;
        let mut args = 0;
        if self.current.kind != TokenKind::RightParen {
            loop {
                self.expression()?;
                args += 1;
                match self.current.kind {
                    TokenKind::Comma => {
                        self.advance()?;
                    }
                    TokenKind::RightParen => break,
                    _ => return Err(self.unexpected("\",\" or \")\"")),
                }
            }
        }
        self.depth -= 1;
        self.expect_right_paren()?;
        if !function.accepts(args) {
            return Err(self.error(
                ErrorKind::ArgumentCount,
                offset,
                format!("{} takes {}, got {args}", function.name, function.arity()),
            ));
        }
        self.ops.push(Op::Call { function, args, offset });
        Ok(())
    }

    fn expect_right_paren(&mut self) -> Result<(), CalcError> {
        if self.current.kind == TokenKind::RightParen {
            self.advance()?;
            Ok(())
        } else {
            Err(self.unexpected("\")\""))
        }
    }

    fn unknown(&self, name: &str, offset: usize) -> CalcError {
        let hint = match name.to_ascii_lowercase().as_str() {
            "log" => " (use ln for the natural logarithm or log10 for base 10)",
            "sqr" | "square" => " (write x^2)",
            "mod" => " (write a % b)",
            "pow" => " (write a ^ b)",
            _ => "",
        };
        self.error(
            ErrorKind::UnknownName,
            offset,
            format!(
                "\"{name}\" is not a known function or constant{hint}; known {}",
                functions::known_names()
            ),
        )
    }
}
