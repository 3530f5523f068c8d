//! Argument validation against a tool's JSON Schema, with messages a model
//! can act on.
//!
//! Every problem names the argument (as a path such as `trip.legs[0].date`)
//! and the rule it breaks, for example
//! `"unit": expected one of ["celsius","fahrenheit"], got "kelvin"` or
//! `missing required argument "location"`. All problems are reported, not
//! just the first.

use std::fmt;

use agent_core::ToolError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::{Location, LocationSegment};
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

/// The longest rendering of an offending value quoted in a message.
const PREVIEW_CHARS: usize = 80;

/// A JSON Schema that could not be compiled into a validator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON Schema: {message}")]
pub struct SchemaError {
    message: String,
}

impl SchemaError {
    /// What is wrong with the schema.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A tool's input schema, compiled once and reused for every call.
///
/// ```
/// use agent_tools::ArgumentValidator;
/// use serde_json::json;
///
/// let validator = ArgumentValidator::new(&json!({
///     "type": "object",
///     "properties": {"unit": {"enum": ["celsius", "fahrenheit"]}},
///     "required": ["location"]
/// }))?;
/// assert_eq!(
///     validator.problems(&json!({"unit": "kelvin"})),
///     vec![
///         r#"missing required argument "location""#.to_owned(),
///         r#""unit": expected one of ["celsius","fahrenheit"], got "kelvin""#.to_owned(),
///     ]
/// );
/// # Ok::<(), agent_tools::SchemaError>(())
/// ```
#[derive(Debug)]
pub struct ArgumentValidator {
    validator: Validator,
}

impl ArgumentValidator {
    /// Compiles `schema`. The draft comes from its `$schema` keyword, 2020-12
    /// when absent. Remote `$ref`s are not fetched.
    pub fn new(schema: &Value) -> Result<Self, SchemaError> {
        jsonschema::validator_for(schema)
            .map(|validator| Self { validator })
            .map_err(|error| SchemaError {
                message: error.to_string(),
            })
    }

    /// Every way `arguments` breaks the schema, one line each; empty when
    /// they are valid. Arguments must be a JSON object: `null` or any other
    /// value is reported, never replaced by `{}`.
    pub fn problems(&self, arguments: &Value) -> Vec<String> {
        if !arguments.is_object() {
            return vec![format!(
                "arguments must be a JSON object, got {}",
                describe_value(arguments)
            )];
        }
        if self.validator.is_valid(arguments) {
            return Vec::new();
        }
        let errors: Vec<ValidationError<'_>> = self.validator.iter_errors(arguments).collect();
        let mut problems = Vec::new();
        for error in &errors {
            // A value of the wrong type also breaks its enum, range, ...;
            // the type is the one problem worth reporting there.
            let shadowed = !is_type_error(error)
                && errors
                    .iter()
                    .any(|other| is_type_error(other) && other.instance_path() == error.instance_path());
            if !shadowed {
                describe(error, &mut problems);
            }
        }
        dedup_in_order(&mut problems);
        problems
    }

    /// `Ok` when `arguments` are valid, otherwise
    /// [`ToolError::InvalidArguments`] for `tool` listing every problem.
    pub fn validate(&self, tool: &str, arguments: &Value) -> Result<(), ToolError> {
        let problems = self.problems(arguments);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ToolError::InvalidArguments {
                tool: tool.to_owned(),
                problems,
            })
        }
    }
}

/// Appends the messages for one validation error.
fn describe(error: &ValidationError<'_>, out: &mut Vec<String>) {
    let path = error.instance_path();
    let at = Subject(path);
    let got = Preview(error.instance());
    let message = match error.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().map_or_else(|| property.to_string(), str::to_owned);
            format!("missing required argument \"{}\"", join(path, &name))
        }
        ValidationErrorKind::Type { kind } => format!("{at}: expected {}, got {got}", type_names(kind)),
        ValidationErrorKind::Enum { options } => format!("{at}: expected one of {options}, got {got}"),
        ValidationErrorKind::Constant { expected_value } => format!("{at}: expected {expected_value}, got {got}"),
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            for name in unexpected {
                out.push(format!("unexpected argument \"{}\"", join(path, name)));
            }
            return;
        }
        ValidationErrorKind::Minimum { limit } => format!("{at}: must be at least {limit}, got {got}"),
        ValidationErrorKind::Maximum { limit } => format!("{at}: must be at most {limit}, got {got}"),
        ValidationErrorKind::ExclusiveMinimum { limit } => format!("{at}: must be greater than {limit}, got {got}"),
        ValidationErrorKind::ExclusiveMaximum { limit } => format!("{at}: must be less than {limit}, got {got}"),
        ValidationErrorKind::MultipleOf { multiple_of } => {
            format!("{at}: must be a multiple of {multiple_of}, got {got}")
        }
        ValidationErrorKind::MinLength { limit } => {
            format!("{at}: must be at least {limit} character(s) long, got {got}")
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!("{at}: must be at most {limit} character(s) long, got {got}")
        }
        ValidationErrorKind::Pattern { pattern } => format!("{at}: must match the pattern {pattern:?}, got {got}"),
        ValidationErrorKind::Format { format } => format!("{at}: must be a valid {format}, got {got}"),
        ValidationErrorKind::MinItems { limit } => format!("{at}: must have at least {limit} item(s)"),
        ValidationErrorKind::MaxItems { limit } => format!("{at}: must have at most {limit} item(s)"),
        ValidationErrorKind::UniqueItems => format!("{at}: items must be unique"),
        ValidationErrorKind::MinProperties { limit } => format!("{at}: must have at least {limit} field(s)"),
        ValidationErrorKind::MaxProperties { limit } => format!("{at}: must have at most {limit} field(s)"),
        ValidationErrorKind::FalseSchema if !path.is_empty() => format!("unexpected argument \"{}\"", Dotted(path)),
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            describe_alternatives(error, context, out);
            return;
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            format!("{at}: matches more than one of the allowed forms, got {got}")
        }
        _ => format!("{at}: {error}"),
    };
    out.push(message);
}

/// Explains why a value matched none of an `anyOf`/`oneOf`'s branches.
///
/// Branches whose only complaint is the value's type at this very place are
/// the wrong shape altogether; if exactly one branch has the right shape,
/// its problems are the useful ones (for `Option<Enum>`, the enum's). When
/// no branch has the right shape, the expected types are listed.
fn describe_alternatives(
    error: &ValidationError<'_>,
    branches: &[Vec<ValidationError<'static>>],
    out: &mut Vec<String>,
) {
    let path = error.instance_path();
    let wrong_shape =
        |branch: &Vec<ValidationError<'static>>| branch.iter().any(|e| is_type_error(e) && e.instance_path() == path);
    let relevant: Vec<&Vec<ValidationError<'static>>> = branches.iter().filter(|b| !wrong_shape(b)).collect();
    match relevant.as_slice() {
        [branch] => {
            for inner in *branch {
                describe(inner, out);
            }
        }
        [] => {
            let mut expected: Vec<String> = Vec::new();
            for inner in branches.iter().flatten() {
                if let ValidationErrorKind::Type { kind } = inner.kind() {
                    let names = type_names(kind);
                    if !expected.contains(&names) {
                        expected.push(names);
                    }
                }
            }
            out.push(format!(
                "{}: expected {}, got {}",
                Subject(path),
                expected.join(" or "),
                Preview(error.instance())
            ));
        }
        several => {
            let forms: Vec<String> = several
                .iter()
                .map(|branch| {
                    let mut messages = Vec::new();
                    for inner in *branch {
                        describe(inner, &mut messages);
                    }
                    format!("({})", messages.join(", "))
                })
                .collect();
            out.push(format!(
                "{}: matches none of the allowed forms: {}",
                Subject(path),
                forms.join(" or ")
            ));
        }
    }
}

fn is_type_error(error: &ValidationError<'_>) -> bool {
    matches!(error.kind(), ValidationErrorKind::Type { .. })
}

fn type_names(kind: &TypeKind) -> String {
    match kind {
        TypeKind::Single(single) => single.to_string(),
        TypeKind::Multiple(set) => set.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(" or "),
    }
}

fn dedup_in_order(items: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    items.retain(|item| seen.insert(item.clone()));
}

/// `"path"` for an argument, `arguments` for the whole object.
struct Subject<'a>(&'a Location);

impl fmt::Display for Subject<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("arguments")
        } else {
            write!(f, "\"{}\"", Dotted(self.0))
        }
    }
}

/// A location as `trip.legs[0].date`.
struct Dotted<'a>(&'a Location);

impl fmt::Display for Dotted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for segment in self.0.segments() {
            match segment {
                LocationSegment::Index(index) => write!(f, "[{index}]")?,
                LocationSegment::Property(name) => write_property(f, &name, first)?,
            }
            first = false;
        }
        Ok(())
    }
}

fn write_property(f: &mut impl fmt::Write, name: &str, first: bool) -> fmt::Result {
    let plain = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-');
    if plain {
        if !first {
            f.write_char('.')?;
        }
        f.write_str(name)
    } else {
        write!(f, "[{}]", Value::from(name))
    }
}

/// The path of property `name` inside the object at `parent`.
fn join(parent: &Location, name: &str) -> String {
    let mut path = Dotted(parent).to_string();
    // Writing into a String cannot fail.
    let _ = write_property(&mut path, name, parent.is_empty());
    path
}

/// A value as compact JSON, shortened when long.
struct Preview<'a>(&'a Value);

impl fmt::Display for Preview<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0.to_string();
        if text.chars().count() <= PREVIEW_CHARS {
            f.write_str(&text)
        } else {
            let short: String = text.chars().take(PREVIEW_CHARS).collect();
            write!(f, "{short}…")
        }
    }
}

fn describe_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        other => format!("{} {}", json_type(other), Preview(other)),
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn validator(schema: &Value) -> ArgumentValidator {
        match ArgumentValidator::new(schema) {
            Ok(validator) => validator,
            Err(error) => panic!("schema should compile: {error}"),
        }
    }

    fn weather() -> ArgumentValidator {
        validator(&weather_schema())
    }

    #[test]
    fn valid_arguments_have_no_problems() {
        assert!(
            weather()
                .problems(&json!({"location": "Paris", "unit": "celsius"}))
                .is_empty()
        );
        assert!(weather().validate("get_weather", &json!({"location": "Paris"})).is_ok());
    }

    #[test]
    fn enum_problem_names_the_argument_and_the_options() {
        let problems = weather().problems(&json!({"location": "Paris", "unit": "kelvin"}));
        assert_eq!(
            problems,
            vec![r#""unit": expected one of ["celsius","fahrenheit"], got "kelvin""#.to_owned()]
        );
    }

    #[test]
    fn missing_required_argument_is_named() {
        assert_eq!(
            weather().problems(&json!({})),
            vec![r#"missing required argument "location""#.to_owned()]
        );
    }

    #[test]
    fn wrong_type_names_expected_and_actual() {
        let problems = weather().problems(&json!({"location": "Paris", "count": "five"}));
        assert_eq!(problems, vec![r#""count": expected integer, got "five""#.to_owned()]);
    }

    #[test]
    fn all_problems_are_collected() {
        let problems = weather().problems(&json!({"unit": "kelvin", "count": 0}));
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems.contains(&r#"missing required argument "location""#.to_owned()));
        assert!(problems.contains(&r#""count": must be at least 1, got 0"#.to_owned()));
    }

    #[test]
    fn nested_objects_and_arrays_have_dotted_paths() {
        let validator = validator(&json!({
            "type": "object",
            "properties": {
                "trip": {
                    "type": "object",
                    "properties": {
                        "legs": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {"date": {"type": "string"}, "seats": {"type": "integer"}},
                                "required": ["date"]
                            }
                        }
                    },
                    "required": ["legs"]
                }
            },
            "required": ["trip"]
        }));
        let problems = validator.problems(&json!({"trip": {"legs": [{"date": 20_240_101}, {"seats": 2.5}]}}));
        assert_eq!(
            problems,
            vec![
                r#""trip.legs[0].date": expected string, got 20240101"#.to_owned(),
                r#"missing required argument "trip.legs[1].date""#.to_owned(),
                r#""trip.legs[1].seats": expected integer, got 2.5"#.to_owned(),
            ]
        );
    }

    #[test]
    fn null_and_non_object_arguments_are_rejected() {
        let error = weather().validate("get_weather", &Value::Null);
        assert_eq!(
            error.map_err(|e| e.to_string()),
            Err("invalid arguments for `get_weather`: arguments must be a JSON object, got null".to_owned())
        );
        assert_eq!(
            weather().problems(&json!("Paris")),
            vec![r#"arguments must be a JSON object, got string "Paris""#.to_owned()]
        );
        // Even a schema that accepts anything does not let null through.
        assert_eq!(validator(&json!({})).problems(&Value::Null).len(), 1);
    }

    #[test]
    fn optional_enum_reports_the_enum_not_the_null_branch() {
        let validator = validator(&json!({
            "type": "object",
            "properties": {
                "unit": {"anyOf": [{"type": "string", "enum": ["celsius", "fahrenheit"]}, {"type": "null"}]}
            }
        }));
        assert_eq!(
            validator.problems(&json!({"unit": "kelvin"})),
            vec![r#""unit": expected one of ["celsius","fahrenheit"], got "kelvin""#.to_owned()]
        );
        assert_eq!(
            validator.problems(&json!({"unit": 3})),
            vec![r#""unit": expected string or null, got 3"#.to_owned()]
        );
    }

    #[test]
    fn unexpected_arguments_are_named() {
        let validator = validator(&json!({
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "additionalProperties": false
        }));
        assert_eq!(
            validator.problems(&json!({"a": "x", "b": 1})),
            vec![r#"unexpected argument "b""#.to_owned()]
        );
    }

    #[test]
    fn odd_property_names_are_bracketed_and_long_values_shortened() {
        let validator = validator(&json!({
            "type": "object",
            "properties": {"first name": {"type": "integer"}}
        }));
        let long = "x".repeat(200);
        let problems = validator.problems(&json!({"first name": long}));
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].starts_with(r#""["first name"]": expected integer, got "xxx"#),
            "{problems:?}"
        );
        assert!(problems[0].ends_with('…'));
    }

    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            ".{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map("(location|unit|count|trip|legs|date|.{0,6})", inner, 0..5)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn any_arguments_give_actionable_problems_without_panicking(arguments in any_json()) {
            let problems = weather().problems(&arguments);
            let valid = arguments.is_object() && jsonschema::is_valid(&weather_schema(), &arguments);
            proptest::prop_assert_eq!(problems.is_empty(), valid, "{:?}", problems);
            for problem in &problems {
                proptest::prop_assert!(!problem.trim().is_empty());
            }
        }
    }

    fn weather_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "location": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "count": {"type": "integer", "minimum": 1}
            },
            "required": ["location"]
        })
    }

    #[test]
    fn uncompilable_schema_is_an_error() {
        let error = ArgumentValidator::new(&json!({"type": "no-such-type"}));
        assert!(error.is_err());
        let error = ArgumentValidator::new(&json!({"properties": {"a": {"minimum": "zero"}}}));
        assert!(error.is_err());
    }
}
