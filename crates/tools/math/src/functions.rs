//! The functions and constants an expression may use.

use std::f64::consts;

use crate::error::ErrorKind;
use crate::number::format_number;

/// A function's value, or the kind of failure and its reason.
pub(crate) type Outcome = Result<f64, (ErrorKind, String)>;

/// A built-in function.
pub(crate) struct Function {
    pub(crate) name: &'static str,
    pub(crate) min_args: usize,
    /// `None`: any number of arguments from `min_args` up.
    pub(crate) max_args: Option<usize>,
    apply: fn(&[f64]) -> Outcome,
}

impl Function {
    /// Runs the function on finite arguments; a non-finite result is an
    /// error naming the function.
    pub(crate) fn call(&self, args: &[f64]) -> Outcome {
        let value = (self.apply)(args)?;
        if value.is_nan() {
            Err((
                ErrorKind::Undefined,
                format!("{} is not a real number", self.show_call(args)),
            ))
        } else if value.is_infinite() {
            Err((
                ErrorKind::Overflow,
                format!("{} is too large (the limit is about 1.8e308)", self.show_call(args)),
            ))
        } else {
            Ok(value)
        }
    }

    /// How many arguments it takes, in words: `1 argument`, `1 or 2
    /// arguments`, `at least 1 argument`.
    pub(crate) fn arity(&self) -> String {
        let noun = |n: usize| if n == 1 { "argument" } else { "arguments" };
        match self.max_args {
            Some(max) if max == self.min_args => format!("exactly {max} {}", noun(max)),
            Some(max) => format!("{} to {max} {}", self.min_args, noun(max)),
            None => format!("at least {} {}", self.min_args, noun(self.min_args)),
        }
    }

    /// Whether `count` arguments are accepted.
    pub(crate) fn accepts(&self, count: usize) -> bool {
        count >= self.min_args && self.max_args.is_none_or(|max| count <= max)
    }

    fn show_call(&self, args: &[f64]) -> String {
        let args: Vec<String> = args.iter().map(|&arg| format_number(arg)).collect();
        format!("{}({})", self.name, args.join(", "))
    }
}

fn first(args: &[f64]) -> f64 {
    args.first().copied().unwrap_or(f64::NAN)
}

fn positive(name: &str, x: f64) -> Outcome {
    if x > 0.0 {
        Ok(x)
    } else {
        Err((
            ErrorKind::Undefined,
            format!(
                "{name}({}) is not a real number: {name} is only defined for positive numbers",
                format_number(x)
            ),
        ))
    }
}

fn round(args: &[f64]) -> Outcome {
    let x = first(args);
    let Some(&digits) = args.get(1) else {
        return Ok(x.round());
    };
    if digits.fract() != 0.0 || !(-15.0..=15.0).contains(&digits) {
        return Err((
            ErrorKind::Undefined,
            format!(
                "round(x, digits) needs a whole number of digits between -15 and 15, got {}",
                format_number(digits)
            ),
        ));
    }
    let scale = 10f64.powi(digits as i32);
    let scaled = x * scale;
    if scaled.is_finite() {
        Ok(scaled.round() / scale)
    } else {
        Ok(x)
    }
}

/// Every function, in the order error messages list them.
pub(crate) static FUNCTIONS: &[Function] = &[
    Function {
        name: "sqrt",
        min_args: 1,
        max_args: Some(1),
        apply: |args| {
            let x = first(args);
            if x < 0.0 {
                Err((
                    ErrorKind::Undefined,
                    format!(
                        "sqrt({}) is not a real number: the square root of a negative number is undefined",
                        format_number(x)
                    ),
                ))
            } else {
                Ok(x.sqrt())
            }
        },
    },
    Function {
        name: "abs",
        min_args: 1,
        max_args: Some(1),
        apply: |args| Ok(first(args).abs()),
    },
    Function {
        name: "ln",
        min_args: 1,
        max_args: Some(1),
        apply: |args| positive("ln", first(args)).map(f64::ln),
    },
    Function {
        name: "log10",
        min_args: 1,
        max_args: Some(1),
        apply: |args| positive("log10", first(args)).map(f64::log10),
    },
    Function {
        name: "exp",
        min_args: 1,
        max_args: Some(1),
        apply: |args| Ok(first(args).exp()),
    },
    Function {
        name: "sin",
        min_args: 1,
        max_args: Some(1),
        apply: |args| Ok(first(args).sin()),
    },
    Function {
        name: "cos",
        min_args: 1,
        max_args: Some(1),
        apply: |args| Ok(first(args).cos()),
    },
    Function {
        name: "tan",
        min_args: 1,
        max_args: Some(1),
        apply: |args| Ok(first(args).tan()),
    },
    Function {
        name: "min",
        min_args: 1,
        max_args: None,
        apply: |args| Ok(args.iter().copied().fold(f64::INFINITY, f64::min)),
    },
    Function {
        name: "max",
        min_args: 1,
        max_args: None,
        apply: |args| Ok(args.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
    },
    Function {
        name: "round",
        min_args: 1,
        max_args: Some(2),
        apply: round,
    },
    Function {
        name: "floor",
        min_args: 1,
        max_args: Some(1),
        apply: |args| Ok(first(args).floor()),
    },
    Function {
        name: "ceil",
        min_args: 1,
        max_args: Some(1),
        apply: |args| Ok(first(args).ceil()),
    },
];

/// Every constant, in the order error messages list them.
pub(crate) static CONSTANTS: &[(&str, f64)] = &[("pi", consts::PI), ("e", consts::E)];

/// Looks a function up, ignoring case.
pub(crate) fn function(name: &str) -> Option<&'static Function> {
    FUNCTIONS
        .iter()
        .find(|function| function.name.eq_ignore_ascii_case(name))
}

/// Looks a constant up, ignoring case.
pub(crate) fn constant(name: &str) -> Option<f64> {
    CONSTANTS
        .iter()
        .find(|(constant, _)| constant.eq_ignore_ascii_case(name))
        .map(|&(_, value)| value)
}

/// The known names, for error messages.
pub(crate) fn known_names() -> String {
    let functions: Vec<&str> = FUNCTIONS.iter().map(|function| function.name).collect();
    let constants: Vec<&str> = CONSTANTS.iter().map(|&(name, _)| name).collect();
    format!(
        "functions: {}; constants: {}",
        functions.join(", "),
        constants.join(", ")
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn arity_reads_naturally() {
        assert_eq!(function("sqrt").unwrap().arity(), "exactly 1 argument");
        assert_eq!(function("round").unwrap().arity(), "1 to 2 arguments");
        assert_eq!(function("max").unwrap().arity(), "at least 1 argument");
    }

    #[test]
    fn names_ignore_case() {
        assert!(function("SQRT").is_some());
        assert_eq!(constant("Pi"), Some(consts::PI));
        assert!(constant("tau").is_none());
    }

    #[test]
    fn known_names_lists_everything() {
        let names = known_names();
        for function in FUNCTIONS {
            assert!(names.contains(function.name));
        }
        assert!(names.ends_with("constants: pi, e"));
    }
}
