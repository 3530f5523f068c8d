//! `schema_validation`: tool arguments checked against a tool's JSON Schema.

use agent_tools::ArgumentValidator;
use serde_json::Value;

/// Splits `data` at its first newline into a schema and arguments (both
/// JSON; other inputs are skipped). The schema compiles to a validator or
/// a typed error; the validator judges any arguments without panicking, and
/// `validate` fails exactly when `problems` lists some.
pub fn schema_validation(data: &[u8]) {
    let (schema, arguments) = match data.iter().position(|&byte| byte == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b"{}"[..]),
    };
    let Ok(schema) = serde_json::from_slice::<Value>(schema) else {
        return;
    };
    let Ok(validator) = ArgumentValidator::new(&schema) else {
        return;
    };
    let Ok(arguments) = serde_json::from_slice::<Value>(arguments) else {
        return;
    };
    let problems = validator.problems(&arguments);
    let verdict = validator.validate("fuzzed_tool", &arguments);
    assert_eq!(
        problems.is_empty(),
        verdict.is_ok(),
        "problems {problems:?} but validate gave {verdict:?}"
    );
}
