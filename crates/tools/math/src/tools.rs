//! The `calculator` and `arithmetic` tools.

use agent_core::{ToolContext, ToolError};
use agent_tools::{Json, TypedTool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::eval::evaluate;
use crate::number::to_json;

/// Arguments of the `calculator` tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CalculatorArgs {
    /// The arithmetic expression to evaluate, written on one line, e.g. "1234 * 5678",
    /// "(3 + 4) ^ 2 / 7", "sqrt(2) * max(1, 5, 3)" or "round(249.99 * 1.0825, 2)".
    pub expression: String,
}

/// What the `calculator` tool returns: the expression as given and its value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalculatorResult {
    /// The expression, as the model sent it.
    pub expression: String,
    /// The value: an integer when whole (up to 2^53), otherwise a float
    /// rounded to 15 significant digits.
    pub result: Value,
}

/// The `calculator` tool.
pub fn calculator() -> TypedTool {
    TypedTool::new(
        "calculator",
        "Evaluates an arithmetic expression and returns its exact numeric value. Use it for any \
         arithmetic instead of computing in your head. Supports numbers (12, 3.5, .5, 1.5e3), \
         + - * / and % (remainder), ^ (power, also **), parentheses, unary minus, the functions \
         sqrt, abs, ln, log10, exp, sin, cos, tan (radians), min and max (one or more arguments), \
         round (round(x) or round(x, digits)), floor, ceil, and the constants pi and e. \
         ^ binds tighter than unary minus, so -2^2 = -4, and 2^3^2 = 2^9 = 512. Write \
         multiplication explicitly: 2*pi, not 2pi. Errors give the column and the reason. \
         Example: {\"expression\": \"(1200 * 0.15) + sqrt(16)\"}.",
        |args: CalculatorArgs, _context: ToolContext| async move {
            let value = evaluate(&args.expression).map_err(|error| ToolError::failed(error.to_string()))?;
            let result = to_json(value).ok_or_else(|| ToolError::failed("the result is not a finite number"))?;
            Ok::<_, ToolError>(Json(CalculatorResult {
                expression: args.expression,
                result,
            }))
        },
    )
}

/// The operation of the `arithmetic` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    /// `a + b`
    Add,
    /// `a - b`
    Subtract,
    /// `a * b`
    Multiply,
    /// `a / b`
    Divide,
}

/// Arguments of the `arithmetic` tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArithmeticArgs {
    /// Which operation to apply to a and b: "add" (a + b), "subtract" (a - b), "multiply" (a * b)
    /// or "divide" (a / b).
    #[schemars(with = "OperationSchema")]
    pub operation: Operation,
    /// The first operand, e.g. 1234 or 2.5.
    pub a: f64,
    /// The second operand, e.g. 5678 or -0.75. Must not be 0 for "divide".
    pub b: f64,
}

/// The schema of [`Operation`] as a plain `enum` of strings, which models
/// read best.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum OperationSchema {
    Add,
    Subtract,
    Multiply,
    Divide,
}

/// What the `arithmetic` tool returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArithmeticResult {
    /// The operation applied.
    pub operation: Operation,
    /// The first operand.
    pub a: Value,
    /// The second operand.
    pub b: Value,
    /// The result, shown like the calculator's.
    pub result: Value,
}

/// The `arithmetic` tool: one operation on two numbers.
pub fn arithmetic() -> TypedTool {
    TypedTool::new(
        "arithmetic",
        "Applies one basic operation to two numbers: add, subtract, multiply or divide. For \
         anything longer than one operation use the calculator tool with a whole expression. \
         Example: {\"operation\": \"multiply\", \"a\": 1234, \"b\": 5678}.",
        |args: ArithmeticArgs, _context: ToolContext| async move { compute(&args).map(Json) },
    )
}

fn compute(args: &ArithmeticArgs) -> Result<ArithmeticResult, ToolError> {
    let (a, b) = (args.a, args.b);
    let (value, symbol) = match args.operation {
        Operation::Add => (a + b, "+"),
        Operation::Subtract => (a - b, "-"),
        Operation::Multiply => (a * b, "*"),
        Operation::Divide if b == 0.0 => {
            return Err(ToolError::failed(format!(
                "division by zero: {} cannot be divided by 0; check the value of b",
                crate::number::format_number(a)
            )));
        }
        Operation::Divide => (a / b, "/"),
    };
    let number = |x: f64| to_json(x).ok_or_else(|| ToolError::failed("the operands must be finite numbers"));
    let result = to_json(value).ok_or_else(|| {
        ToolError::failed(format!(
            "overflow: {} {symbol} {} is too large (the limit is about 1.8e308)",
            crate::number::format_number(a),
            crate::number::format_number(b)
        ))
    })?;
    Ok(ArithmeticResult {
        operation: args.operation,
        a: number(a)?,
        b: number(b)?,
        result,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_computes_and_reports_division_by_zero() {
        let args = |operation, a, b| ArithmeticArgs { operation, a, b };
        assert_eq!(
            compute(&args(Operation::Multiply, 1234.0, 5678.0)).unwrap().result,
            serde_json::json!(7_006_652)
        );
        assert_eq!(
            compute(&args(Operation::Divide, 1.0, 4.0)).unwrap().result,
            serde_json::json!(0.25)
        );
        let error = compute(&args(Operation::Divide, 1.0, 0.0)).unwrap_err();
        assert!(error.to_string().starts_with("division by zero"), "{error}");
        let error = compute(&args(Operation::Multiply, 1e300, 1e300)).unwrap_err();
        assert!(error.to_string().starts_with("overflow"), "{error}");
    }
}
