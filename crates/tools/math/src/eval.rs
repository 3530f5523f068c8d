//! Evaluation: runs compiled postfix operations on a value stack, checking
//! every step for division by zero, undefined results and overflow.

use crate::error::{CalcError, ErrorKind};
use crate::lexer::BinaryOp;
use crate::number::format_number;
use crate::parser::{Op, compile};

/// Evaluates an arithmetic expression.
///
/// Numbers (`12`, `3.5`, `.5`, `1.5e3`), `+ - * / % ^` (also `**` for
/// `^`), parentheses, unary minus, the functions `sqrt abs ln log10 exp sin
/// cos tan min max round floor ceil` (trigonometry in radians; `min` and
/// `max` take one or more arguments; `round(x)` or `round(x, digits)`) and
/// the constants `pi` and `e`. Names ignore case.
///
/// `^` is right-associative and binds tighter than unary minus (`2^3^2` is
/// 512, `-2^2` is -4); `%` is the remainder with the sign of the dividend
/// (`-7 % 3` is -1).
///
/// ```
/// use agent_tools_math::{ErrorKind, evaluate};
///
/// assert_eq!(evaluate("1234 * 5678")?, 7_006_652.0);
/// assert_eq!(evaluate("-2^2 + max(1, 2, 3)")?, -1.0);
///
/// let error = evaluate("(1+2").unwrap_err();
/// assert_eq!(error.to_string(), "syntax error at column 5: expected \")\" but found end of input");
/// assert_eq!(evaluate("1 / (2 - 2)").unwrap_err().kind(), ErrorKind::DivisionByZero);
/// # Ok::<(), agent_tools_math::CalcError>(())
/// ```
pub fn evaluate(expression: &str) -> Result<f64, CalcError> {
    let ops = compile(expression)?;
    let mut stack: Vec<f64> = Vec::new();
    let internal = || {
        CalcError::new(
            ErrorKind::Syntax,
            expression,
            0,
            "internal error: the expression compiled to an unbalanced program",
        )
    };
    for op in ops {
        match op {
            Op::Push(value) => stack.push(value),
            Op::Negate => {
                let value = stack.pop().ok_or_else(internal)?;
                stack.push(-value);
            }
            Op::Binary { op, offset } => {
                let right = stack.pop().ok_or_else(internal)?;
                let left = stack.pop().ok_or_else(internal)?;
                let value = binary(op, left, right)
                    .map_err(|(kind, reason)| CalcError::new(kind, expression, offset, reason))?;
                stack.push(value);
            }
            Op::Call { function, args, offset } => {
                let start = stack.len().checked_sub(args).ok_or_else(internal)?;
                let value = function
                    .call(&stack[start..])
                    .map_err(|(kind, reason)| CalcError::new(kind, expression, offset, reason))?;
                stack.truncate(start);
                stack.push(value);
            }
        }
    }
    match (stack.pop(), stack.is_empty()) {
        (Some(value), true) => Ok(value),
        _ => Err(internal()),
    }
}

/// Applies a binary operator to finite operands.
fn binary(op: BinaryOp, left: f64, right: f64) -> Result<f64, (ErrorKind, String)> {
    let shown = || format!("{} {} {}", format_number(left), op.symbol(), format_number(right));
    let value = match op {
        BinaryOp::Add => left + right,
        BinaryOp::Subtract => left - right,
        BinaryOp::Multiply => left * right,
        BinaryOp::Divide if right == 0.0 => {
            return Err((
                ErrorKind::DivisionByZero,
                format!("{} cannot be divided by zero", format_number(left)),
            ));
        }
        BinaryOp::Divide => left / right,
        BinaryOp::Remainder if right == 0.0 => {
            return Err((
                ErrorKind::DivisionByZero,
                format!(
                    "{} % 0 is undefined (remainder of a division by zero)",
                    format_number(left)
                ),
            ));
        }
        BinaryOp::Remainder => left % right,
        BinaryOp::Power if left == 0.0 && right < 0.0 => {
            return Err((
                ErrorKind::DivisionByZero,
                format!(
                    "{} is undefined: zero raised to a negative power divides by zero",
                    shown()
                ),
            ));
        }
        BinaryOp::Power if left < 0.0 && right.fract() != 0.0 => {
            return Err((
                ErrorKind::Undefined,
                format!(
                    "{} is not a real number: a negative number raised to a fractional power",
                    shown()
                ),
            ));
        }
        BinaryOp::Power => left.powf(right),
    };
    if value.is_finite() {
        Ok(value)
    } else if value.is_nan() {
        Err((ErrorKind::Undefined, format!("{} is not a real number", shown())))
    } else {
        Err((
            ErrorKind::Overflow,
            format!("{} is too large (the limit is about 1.8e308)", shown()),
        ))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(evaluate("2 + 3 * 4").unwrap(), 14.0);
        assert_eq!(evaluate("10 - 4 - 3").unwrap(), 3.0);
        assert_eq!(evaluate("2 ^ 3 ^ 2").unwrap(), 512.0);
        assert_eq!(evaluate("-2 ^ 2").unwrap(), -4.0);
        assert_eq!(evaluate("2 ^ -1").unwrap(), 0.5);
    }

    #[test]
    fn errors_name_the_operator_column() {
        let error = evaluate("1 + 4 % (3 - 3)").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::DivisionByZero);
        assert_eq!(error.column(), 7);
    }

    #[test]
    fn overflow_is_reported() {
        let error = evaluate("10 ^ 400").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Overflow);
        assert_eq!(
            error.to_string(),
            "overflow at column 4: 10 ^ 400 is too large (the limit is about 1.8e308)"
        );
    }
}
