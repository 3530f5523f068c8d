//! Approval that depends on a call's arguments.
//!
//! [`ToolBoxBuilder::require_approval_if`](crate::ToolBoxBuilder::require_approval_if)
//! takes a predicate over the arguments; configuration files give an
//! [`ApprovalCondition`] instead: a JSON pointer into the arguments, a
//! comparison and a JSON value, such as `amount > 100` or
//! `/payee/country != "FR"`.
//!
//! ```
//! use agent_tools::ApprovalCondition;
//! use serde_json::json;
//!
//! let condition: ApprovalCondition = "amount > 100".parse()?;
//! assert!(condition.holds(&json!({"amount": 250})));
//! assert!(!condition.holds(&json!({"amount": 20})));
//! // Arguments the condition cannot read ask, rather than slip through.
//! assert!(condition.holds(&json!({"amount": "a lot"})));
//! # Ok::<(), agent_tools::ConditionError>(())
//! ```

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde_json::Value;

/// A predicate over a call's arguments: `true` asks for approval.
pub type ApprovalPredicate = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

/// A comparison of one argument with a value: `POINTER OP VALUE`.
///
/// `POINTER` is a JSON pointer (`/payee/iban`); a leading `/` may be left
/// out for a top-level field (`amount`). `OP` is one of `>`, `>=`, `<`,
/// `<=`, `==`, `!=`. `VALUE` is JSON: a number, a quoted string, `true`,
/// `false` or `null`. Numbers compare as numbers, strings as strings;
/// `==` and `!=` compare any two values.
///
/// A condition that cannot be read on a call (the field is missing, or
/// `>` meets a string) **holds**: the call waits for approval rather than
/// run unchecked.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalCondition {
    pointer: String,
    op: Comparison,
    value: Value,
    text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Comparison {
    Greater,
    GreaterOrEqual,
    Less,
    LessOrEqual,
    Equal,
    NotEqual,
}

/// A condition that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the approval condition `{condition}` {problem}; write it as `FIELD OP VALUE`, e.g. `amount > 100`")]
pub struct ConditionError {
    /// The condition as written.
    pub condition: String,
    /// What is wrong with it.
    pub problem: String,
}

const OPERATORS: [(&str, Comparison); 6] = [
    (">=", Comparison::GreaterOrEqual),
    ("<=", Comparison::LessOrEqual),
    ("==", Comparison::Equal),
    ("!=", Comparison::NotEqual),
    (">", Comparison::Greater),
    ("<", Comparison::Less),
];

impl FromStr for ApprovalCondition {
    type Err = ConditionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = |problem: &str| ConditionError {
            condition: text.to_owned(),
            problem: problem.to_owned(),
        };
        // The first operator in the text (two-character ones win at the same place).
        let found = OPERATORS
            .iter()
            .filter_map(|(symbol, op)| text.find(symbol).map(|at| (at, *symbol, *op)))
            .min_by_key(|(at, symbol, _)| (*at, std::cmp::Reverse(symbol.len())));
        let Some((at, symbol, op)) = found else {
            return Err(error("has no comparison (one of >, >=, <, <=, ==, !=)"));
        };
        let field = text[..at].trim();
        let literal = text[at + symbol.len()..].trim();
        if field.is_empty() {
            return Err(error("names no field"));
        }
        if field.contains(char::is_whitespace) {
            return Err(error("has a field with a space in it"));
        }
        let value: Value = serde_json::from_str(literal)
            .map_err(|_| error("compares with something that is not a JSON value (quote strings)"))?;
        if matches!(value, Value::Array(_) | Value::Object(_)) {
            return Err(error("compares with a list or an object; compare one value"));
        }
        let ordered = !matches!(op, Comparison::Equal | Comparison::NotEqual);
        if ordered && !matches!(value, Value::Number(_) | Value::String(_)) {
            return Err(error("orders by a value that is neither a number nor a string"));
        }
        let pointer = if field.starts_with('/') {
            field.to_owned()
        } else {
            format!("/{field}")
        };
        Ok(Self {
            pointer,
            op,
            value,
            text: text.trim().to_owned(),
        })
    }
}

impl ApprovalCondition {
    /// Whether a call with `arguments` waits for approval.
    pub fn holds(&self, arguments: &Value) -> bool {
        let Some(actual) = arguments.pointer(&self.pointer) else {
            return true;
        };
        match self.op {
            Comparison::Equal => same(actual, &self.value),
            Comparison::NotEqual => !same(actual, &self.value),
            ordered => match order(actual, &self.value) {
                Some(ordering) => match ordered {
                    Comparison::Greater => ordering == Ordering::Greater,
                    Comparison::GreaterOrEqual => ordering != Ordering::Less,
                    Comparison::Less => ordering == Ordering::Less,
                    _ => ordering != Ordering::Greater,
                },
                None => true,
            },
        }
    }

    /// The condition as a predicate.
    pub fn into_predicate(self) -> ApprovalPredicate {
        Arc::new(move |arguments| self.holds(arguments))
    }
}

impl fmt::Display for ApprovalCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Equality, with numbers compared by value (`100` equals `100.0`).
fn same(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Number(_), Value::Number(_)) => order(actual, expected) == Some(Ordering::Equal),
        _ => actual == expected,
    }
}

fn order(actual: &Value, expected: &Value) -> Option<Ordering> {
    match (actual, expected) {
        (Value::Number(a), Value::Number(b)) => a.as_f64()?.partial_cmp(&b.as_f64()?),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn condition(text: &str) -> ApprovalCondition {
        text.parse().expect("a valid condition")
    }

    #[test]
    fn every_comparison_reads_numbers_and_strings() {
        let args = json!({"amount": 100, "payee": {"country": "FR"}, "urgent": true});
        let cases = [
            ("amount > 100", false),
            ("amount >= 100", true),
            ("amount < 100.5", true),
            ("amount <= 99", false),
            ("amount == 100.0", true),
            ("amount != 100", false),
            ("/payee/country == \"FR\"", true),
            ("/payee/country != \"FR\"", false),
            ("/payee/country > \"DE\"", true),
            ("urgent == true", true),
        ];
        for (text, expected) in cases {
            assert_eq!(condition(text).holds(&args), expected, "{text}");
        }
    }

    #[test]
    fn a_condition_that_cannot_be_read_on_a_call_asks() {
        let amount = condition("amount > 100");
        assert!(amount.holds(&json!({})));
        assert!(amount.holds(&json!({"amount": "250"})));
        assert!(amount.holds(&json!(null)));
        // Equality with a missing field asks too.
        assert!(condition("currency == \"EUR\"").holds(&json!({"amount": 1})));
    }

    #[test]
    fn bad_conditions_say_what_is_wrong() {
        let cases = [
            ("amount 100", "has no comparison"),
            ("> 100", "names no field"),
            ("the amount > 100", "space"),
            ("amount > lots", "not a JSON value"),
            ("amount > [1]", "a list or an object"),
            ("amount > true", "neither a number nor a string"),
        ];
        for (text, problem) in cases {
            let error = text.parse::<ApprovalCondition>().expect_err("an invalid condition");
            assert!(error.problem.contains(problem), "{text}: {error}");
            assert!(error.to_string().contains(text), "{error}");
        }
    }

    #[test]
    fn the_two_character_operators_are_not_read_as_one() {
        assert_eq!(condition("a>=1").op, Comparison::GreaterOrEqual);
        assert_eq!(condition("a<=1").op, Comparison::LessOrEqual);
        assert_eq!(condition("a != 1").op, Comparison::NotEqual);
        assert_eq!(condition("a>=1").to_string(), "a>=1");
    }
}
