//! # agent-tools-math
//!
//! Math tools for Agentry agents, in the provider `math`:
//!
//! - `calculator`: evaluates an arithmetic expression with a real parser
//!   ([`evaluate`]): numbers such as `1.5e3`, `+ - * / % ^`, parentheses,
//!   unary minus, `sqrt abs ln log10 exp sin cos tan min max round floor
//!   ceil`, and the constants `pi` and `e`. `^` is right-associative and
//!   binds tighter than unary minus (`-2^2 = -4`, `2^3^2 = 512`). Returns
//!   `{"expression": "...", "result": 7006652}`.
//! - `arithmetic`: one of add, subtract, multiply or divide on `a` and `b`,
//!   for models that prefer structured arguments.
//!
//! Every failure is a [`ToolError`](agent_core::ToolError) that names the
//! 1-based column and the reason, e.g. `syntax error at column 5: expected
//! ")" but found end of input` or `division by zero at column 3: 1 cannot
//! be divided by zero`, so the model can fix its call. Parsing is linear
//! and nesting is limited to [`MAX_DEPTH`] levels, so no input can overflow
//! the stack.
//!
//! ```
//! use std::sync::Arc;
//!
//! use agent_core::{ToolContext, ToolRegistry};
//! use agent_tools::ToolBox;
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = ToolBox::new();
//! registry.register(Arc::new(agent_tools_math::tool_set()), true)?;
//!
//! let context = ToolContext::new();
//! let run = registry.execute("calculator", &json!({"expression": "1234 * 5678"}), &context).await;
//! assert_eq!(run.outcome?.to_content(), r#"{"expression":"1234 * 5678","result":7006652}"#);
//!
//! let run = registry.execute("calculator", &json!({"expression": "(1+2"}), &context).await;
//! assert_eq!(
//!     run.outcome.unwrap_err().to_string(),
//!     r#"syntax error at column 5: expected ")" but found end of input"#
//! );
//!
//! let run = registry.execute("arithmetic", &json!({"operation": "divide", "a": 7, "b": 2}), &context).await;
//! assert_eq!(run.outcome?.to_content(), r#"{"operation":"divide","a":7,"b":2,"result":3.5}"#);
//! # Ok(())
//! # }
//! ```

mod error;
mod eval;
mod functions;
mod lexer;
mod number;
mod parser;
mod tools;

use agent_tools::ToolSet;

pub use error::{CalcError, ErrorKind};
pub use eval::evaluate;
pub use parser::MAX_DEPTH;
pub use tools::{
    ArithmeticArgs, ArithmeticResult, CalculatorArgs, CalculatorResult, Operation, arithmetic, calculator,
};

/// The provider's name, used to enable or disable it.
pub const PROVIDER_NAME: &str = "math";

/// How long a result of the math tools may be reused: they are pure, so
/// the bound only keeps caches from holding results forever.
pub const RESULT_TTL: std::time::Duration = std::time::Duration::from_secs(3600);

/// The `math` provider with the `calculator` and `arithmetic` tools, both
/// declared idempotent (a repeated call is answered from the run's
/// tool-result cache).
pub fn tool_set() -> ToolSet {
    ToolSet::new(
        PROVIDER_NAME,
        "Exact arithmetic: evaluate expressions with a calculator instead of computing by hand.",
    )
    .tool(calculator())
    .tool(arithmetic())
    .cache_results("calculator", RESULT_TTL)
    .cache_results("arithmetic", RESULT_TTL)
}
