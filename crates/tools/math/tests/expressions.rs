//! A table of expressions and what each must give: a value, or an error of
//! a given kind at a given column.

#![allow(clippy::unwrap_used, clippy::float_cmp)]

use agent_tools_math::{ErrorKind, evaluate};

const PI: f64 = std::f64::consts::PI;
const E: f64 = std::f64::consts::E;

fn close(actual: f64, expected: f64) -> bool {
    actual == expected || (actual - expected).abs() <= 1e-12 * expected.abs().max(1.0)
}

#[test]
fn values() {
    let table: &[(&str, f64)] = &[
        // numbers
        ("1234 * 5678", 7_006_652.0),
        ("42", 42.0),
        ("3.25", 3.25),
        (".5", 0.5),
        ("1.5e3", 1500.0),
        ("2E-2", 0.02),
        ("1e+2 + 1", 101.0),
        ("  7  ", 7.0),
        // precedence
        ("2 + 3 * 4", 14.0),
        ("(2 + 3) * 4", 20.0),
        ("2 * 3 ^ 2", 18.0),
        ("1 + 6 / 3 * 2", 5.0),
        ("7 % 4 * 2", 6.0),
        ("1 + 2 ^ 3 % 5", 4.0),
        // associativity
        ("10 - 4 - 3", 3.0),
        ("100 / 10 / 5", 2.0),
        ("2 ^ 3 ^ 2", 512.0),
        ("2 ** 3 ** 2", 512.0),
        ("(2 ^ 3) ^ 2", 64.0),
        ("20 % 7 % 4", 2.0),
        // unary minus
        ("-2 ^ 2", -4.0),
        ("(-2) ^ 2", 4.0),
        ("-3 * -3", 9.0),
        ("--5", 5.0),
        ("- - -5", -5.0),
        ("+5 - +2", 3.0),
        ("2 ^ -1", 0.5),
        ("2 ^ -3 ^ 2", 2f64.powi(-9)),
        ("10 - -4", 14.0),
        ("-(3 + 4)", -7.0),
        ("-7 % 3", -1.0),
        // functions and constants
        ("sqrt(16)", 4.0),
        ("sqrt(sqrt(256)) + abs(-3)", 7.0),
        ("max(1, min(7, 3), 2)", 3.0),
        ("min(5)", 5.0),
        ("max(-1, -2, -3, -0.5)", -0.5),
        ("round(2.5) + floor(-1.5) + ceil(1.2)", 3.0),
        ("round(1.23456, 2)", 1.23),
        ("ln(e)", 1.0),
        ("log10(1000)", 3.0),
        ("exp(0)", 1.0),
        ("sin(0) + cos(0)", 1.0),
        ("tan(pi / 4)", 1.0),
        ("2 * pi", 2.0 * PI),
        ("e ^ 2", E * E),
        ("PI", PI),
        ("Sqrt(9)", 3.0),
        ("sqrt((1 + 2) * (4 - 1))", 3.0),
        ("abs(min(-3, max(2, 1)) * 2)", 6.0),
        // notation models use
        ("6 × 7", 42.0),
        ("84 ÷ 2", 42.0),
        ("50 − 8", 42.0),
        ("0 ^ 0", 1.0),
        ("1e308 * 1", 1e308),
    ];
    assert!(table.len() >= 40);
    for &(expression, expected) in table {
        match evaluate(expression) {
            Ok(actual) => assert!(
                close(actual, expected),
                "{expression}: expected {expected}, got {actual}"
            ),
            Err(error) => panic!("{expression}: expected {expected}, got error {error}"),
        }
    }
}

#[test]
fn errors() {
    let table: &[(&str, ErrorKind, usize, &str)] = &[
        // syntax
        ("(1+2", ErrorKind::Syntax, 5, "expected \")\" but found end of input"),
        ("", ErrorKind::Syntax, 1, "the expression is empty"),
        ("   ", ErrorKind::Syntax, 4, "the expression is empty"),
        (
            "1 +",
            ErrorKind::Syntax,
            4,
            "expected a number, a name or \"(\" but found end of input",
        ),
        (
            "1 + * 2",
            ErrorKind::Syntax,
            5,
            "expected a number, a name or \"(\" but found \"*\"",
        ),
        ("2 3", ErrorKind::Syntax, 3, "expected an operator"),
        ("2(3)", ErrorKind::Syntax, 2, "write multiplication explicitly"),
        ("2pi", ErrorKind::Syntax, 2, "write multiplication explicitly"),
        ("1 + 2)", ErrorKind::Syntax, 6, "unmatched \")\""),
        ("()", ErrorKind::Syntax, 2, "found \")\""),
        ("1 $ 2", ErrorKind::Syntax, 3, "unexpected character '$'"),
        ("1 = 1", ErrorKind::Syntax, 3, "unexpected character '='"),
        (".", ErrorKind::Syntax, 1, "must be part of a number"),
        ("max(1,)", ErrorKind::Syntax, 7, "found \")\""),
        ("max(1 2)", ErrorKind::Syntax, 7, "expected \",\" or \")\""),
        ("sqrt", ErrorKind::Syntax, 1, "is a function; call it with parentheses"),
        ("pi(2)", ErrorKind::Syntax, 1, "is a constant, not a function"),
        ("×2", ErrorKind::Syntax, 1, "found \"*\""),
        // unknown names, listing the known ones
        (
            "foo + 1",
            ErrorKind::UnknownName,
            1,
            "\"foo\" is not a known function or constant",
        ),
        (
            "2 * x",
            ErrorKind::UnknownName,
            5,
            "functions: sqrt, abs, ln, log10, exp",
        ),
        (
            "log(10)",
            ErrorKind::UnknownName,
            1,
            "use ln for the natural logarithm or log10",
        ),
        ("tau", ErrorKind::UnknownName, 1, "constants: pi, e"),
        // argument counts
        (
            "sqrt(1, 2)",
            ErrorKind::ArgumentCount,
            1,
            "sqrt takes exactly 1 argument, got 2",
        ),
        (
            "1 + max()",
            ErrorKind::ArgumentCount,
            5,
            "max takes at least 1 argument, got 0",
        ),
        (
            "round(1, 2, 3)",
            ErrorKind::ArgumentCount,
            1,
            "round takes 1 to 2 arguments, got 3",
        ),
        // division by zero
        ("1 / 0", ErrorKind::DivisionByZero, 3, "1 cannot be divided by zero"),
        ("5 % 0", ErrorKind::DivisionByZero, 3, "5 % 0 is undefined"),
        ("1 / (2 - 2)", ErrorKind::DivisionByZero, 3, "divided by zero"),
        (
            "0 ^ -1",
            ErrorKind::DivisionByZero,
            3,
            "zero raised to a negative power",
        ),
        // undefined results
        ("sqrt(-1)", ErrorKind::Undefined, 1, "sqrt(-1) is not a real number"),
        (
            "ln(0)",
            ErrorKind::Undefined,
            1,
            "ln is only defined for positive numbers",
        ),
        (
            "2 + log10(-5)",
            ErrorKind::Undefined,
            5,
            "log10(-5) is not a real number",
        ),
        (
            "(-8) ^ 0.5",
            ErrorKind::Undefined,
            6,
            "negative number raised to a fractional power",
        ),
        ("round(1, 0.5)", ErrorKind::Undefined, 1, "whole number of digits"),
        // overflow
        ("10 ^ 400", ErrorKind::Overflow, 4, "10 ^ 400 is too large"),
        ("exp(1000)", ErrorKind::Overflow, 1, "exp(1000) is too large"),
        ("1e308 * 10", ErrorKind::Overflow, 7, "is too large"),
        ("1e999", ErrorKind::Overflow, 1, "the number 1e999 is too large"),
        ("1e308 / 1e-10", ErrorKind::Overflow, 7, "is too large"),
    ];
    for &(expression, kind, column, needle) in table {
        let error = match evaluate(expression) {
            Ok(value) => panic!("{expression}: expected a {kind} error, got {value}"),
            Err(error) => error,
        };
        let message = error.to_string();
        assert_eq!(error.kind(), kind, "{expression}: {message}");
        assert_eq!(error.column(), column, "{expression}: {message}");
        assert!(
            message.starts_with(&format!("{kind} at column {column}: ")),
            "{expression}: {message}"
        );
        assert!(message.contains(needle), "{expression}: {message:?} lacks {needle:?}");
    }
}

#[test]
fn syntax_error_message_matches_the_documented_form() {
    assert_eq!(
        evaluate("(1+2").unwrap_err().to_string(),
        "syntax error at column 5: expected \")\" but found end of input"
    );
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for depth in [257, 100_000] {
        let expression = format!("{}1{}", "(".repeat(depth), ")".repeat(depth));
        let error = evaluate(&expression).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::TooDeep);
        assert_eq!(error.column(), 257);
        // Unclosed parentheses stop at the same limit.
        let error = evaluate(&"(".repeat(depth)).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::TooDeep);
    }
    let nested_calls = format!("{}1{}", "sqrt(".repeat(100_000), ")".repeat(100_000));
    assert_eq!(evaluate(&nested_calls).unwrap_err().kind(), ErrorKind::TooDeep);
    let tower = vec!["1"; 100_000].join("^");
    assert_eq!(evaluate(&tower).unwrap_err().kind(), ErrorKind::TooDeep);
}

#[test]
fn nesting_up_to_the_limit_works() {
    let depth = agent_tools_math::MAX_DEPTH;
    let expression = format!("{}1{}", "(".repeat(depth), ")".repeat(depth));
    assert_eq!(evaluate(&expression).unwrap(), 1.0);
}

#[test]
fn long_flat_expressions_are_fine() {
    let sum = vec!["1"; 100_000].join(" + ");
    assert_eq!(evaluate(&sum).unwrap(), 100_000.0);
    let negations = format!("{}1", "-".repeat(100_001));
    assert_eq!(evaluate(&negations).unwrap(), -1.0);
}
