//! JSON Schema -> Gemini's schema subset (an OpenAPI 3.0 `Schema` object).
//!
//! Gemini's `parameters` and `responseSchema` accept only a subset of
//! OpenAPI 3.0: `type` (upper case), `format`, `title`, `description`,
//! `nullable`, `enum` (strings), `properties`, `required`,
//! `propertyOrdering`, `items`, `anyOf`, `minItems`/`maxItems`,
//! `minLength`/`maxLength`, `minProperties`/`maxProperties`, `minimum`/
//! `maximum`, `pattern`, `default` and `example`. The translation:
//!
//! - `$ref` into `$defs`/`definitions` (any local JSON pointer) is inlined;
//!   a recursive reference cannot be expressed and is an error naming it,
//!   as is a schema nested deeper than [`MAX_DEPTH`];
//! - `type: [T, "null"]`, and `anyOf`/`oneOf` with a `{"type": "null"}`
//!   branch (what schemars makes of `Option<T>`), become `nullable: true`;
//!   a single remaining branch is merged into its parent;
//! - `oneOf` becomes `anyOf`; `allOf` is merged into one schema;
//! - `const` becomes a one-value `enum`; string enums are kept; an enum of
//!   other values (numbers, booleans) cannot be expressed and is dropped,
//!   its values appended to the description;
//! - `format` is kept only where Gemini knows it (`date-time` for strings,
//!   `float`/`double` for numbers, `int32`/`int64` for integers);
//! - every other keyword (`additionalProperties`, `$schema`,
//!   `patternProperties`, `exclusiveMinimum`, `multipleOf`, `not`, ...) is
//!   dropped.

use serde_json::{Map, Value};

/// How deep a schema may nest (after inlining) before translation gives up.
pub const MAX_DEPTH: usize = 48;

/// Options of [`to_gemini_schema`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchemaOptions {
    /// Add `propertyOrdering` (the declared order of `properties`) to every
    /// object with more than one property. Gemini orders the properties of
    /// structured output alphabetically unless told otherwise.
    pub property_ordering: bool,
}

/// Translates a JSON Schema into Gemini's schema subset (see the module
/// docs). Pure; the error says what cannot be expressed and where.
///
/// ```
/// use agent_provider_gemini::mapper::schema::{SchemaOptions, to_gemini_schema};
/// use serde_json::json;
///
/// let schema = json!({
///     "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]}},
///     "type": "object",
///     "properties": {"unit": {"anyOf": [{"$ref": "#/$defs/Unit"}, {"type": "null"}]}},
///     "additionalProperties": false
/// });
/// assert_eq!(
///     to_gemini_schema(&schema, SchemaOptions::default()).unwrap(),
///     json!({"type": "OBJECT", "properties": {"unit": {"type": "STRING", "nullable": true, "enum": ["c", "f"]}}})
/// );
/// ```
pub fn to_gemini_schema(schema: &Value, options: SchemaOptions) -> Result<Value, String> {
    let mut translator = Translator {
        root: schema,
        expanding: vec!["#".to_owned()],
        options,
    };
    translator.translate(schema, 0, "#").map(Value::Object)
}

struct Translator<'a> {
    root: &'a Value,
    /// The `$ref`s being inlined, outermost first (a cycle guard).
    expanding: Vec<String>,
    options: SchemaOptions,
}

/// The keywords kept as they are, in output order (after `type`, `format`,
/// `title`, `description`, `nullable`, `enum`, `properties`, `required`,
/// `propertyOrdering`, `items` and `anyOf`, which are built).
const COPIED_NUMBERS: [&str; 8] = [
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "minimum",
    "maximum",
];

impl Translator<'_> {
    fn translate(&mut self, schema: &Value, depth: usize, at: &str) -> Result<Map<String, Value>, String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "the schema nests deeper than {MAX_DEPTH} levels at {at}, which Gemini's schema subset cannot express"
            ));
        }
        let object = match schema {
            Value::Object(object) => object,
            // `true` (anything) carries no constraint Gemini could express.
            Value::Bool(true) => return Ok(Map::new()),
            other => {
                return Err(format!(
                    "expected a schema object at {at}, found {}",
                    short(&other.to_string())
                ));
            }
        };

        if let Some(reference) = object.get("$ref") {
            return self.inline_ref(object, reference, depth, at);
        }
        if let Some(Value::Array(all)) = object.get("allOf") {
            let mut merged = Map::new();
            for (i, part) in all.iter().enumerate() {
                let part = self.translate(part, depth + 1, &format!("{at}/allOf/{i}"))?;
                merge_all_of(&mut merged, part);
            }
            let rest = without(object, &["allOf"]);
            let rest = self.translate(&Value::Object(rest), depth + 1, at)?;
            let mut merged = overlay(merged, rest);
            if let Some(Value::Object(properties)) = merged.get("properties")
                && self.options.property_ordering
                && properties.len() > 1
            {
                let ordering = properties.keys().cloned().map(Value::String).collect();
                merged.insert("propertyOrdering".into(), Value::Array(ordering));
            }
            return Ok(canonical_order(merged));
        }
        self.translate_plain(object, depth, at)
    }

    /// `{"$ref": ..., siblings}`: the target, inlined, with the siblings
    /// (a `description`, a `default`) laid over it.
    fn inline_ref(
        &mut self,
        object: &Map<String, Value>,
        reference: &Value,
        depth: usize,
        at: &str,
    ) -> Result<Map<String, Value>, String> {
        let Some(reference) = reference.as_str() else {
            return Err(format!("`$ref` at {at} is not a string"));
        };
        if self.expanding.iter().any(|open| open == reference) {
            return Err(format!(
                "the schema is recursive (`$ref` \"{reference}\" at {at} refers back to itself), which Gemini's \
                 schema subset cannot express; give the recursive field a non-recursive type"
            ));
        }
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(format!(
                "only local references (\"#/$defs/...\") can be inlined; `$ref` \"{reference}\" at {at} is not one"
            ));
        };
        let Some(target) = self.root.pointer(pointer) else {
            return Err(format!(
                "`$ref` \"{reference}\" at {at} points to nothing in the schema"
            ));
        };
        self.expanding.push(reference.to_owned());
        let resolved = self.translate(target, depth + 1, reference);
        self.expanding.pop();
        let resolved = resolved?;
        let siblings = without(object, &["$ref"]);
        if siblings.is_empty() {
            return Ok(resolved);
        }
        let siblings = self.translate(&Value::Object(siblings), depth + 1, at)?;
        Ok(overlay(resolved, siblings))
    }

    fn translate_plain(
        &mut self,
        object: &Map<String, Value>,
        depth: usize,
        at: &str,
    ) -> Result<Map<String, Value>, String> {
        let mut nullable = object.get("nullable").and_then(Value::as_bool).unwrap_or(false);
        let mut types: Vec<&str> = match object.get("type") {
            Some(Value::String(name)) => vec![name.as_str()],
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if types.iter().any(|name| name.eq_ignore_ascii_case("null")) {
            types.retain(|name| !name.eq_ignore_ascii_case("null"));
            // `{"type": "null"}` alone stays a NULL type (a branch its
            // parent turns into `nullable`).
            if types.is_empty() {
                let mut out = Map::new();
                out.insert("type".into(), Value::String("NULL".into()));
                return Ok(out);
            }
            nullable = true;
        }

        // Enum values: `const` is a one-value enum; null among them means nullable.
        let mut enum_values: Option<Vec<Value>> = match (object.get("enum"), object.get("const")) {
            (Some(Value::Array(values)), _) => Some(values.clone()),
            (None, Some(value)) => Some(vec![value.clone()]),
            _ => None,
        };
        if let Some(values) = enum_values.as_mut()
            && values.iter().any(Value::is_null)
        {
            values.retain(|value| !value.is_null());
            nullable = true;
        }
        let string_enum = enum_values
            .as_ref()
            .filter(|values| !values.is_empty() && values.iter().all(Value::is_string));
        let mut description = object.get("description").and_then(Value::as_str).map(str::to_owned);
        if let Some(values) = enum_values.as_ref().filter(|values| !values.is_empty())
            && string_enum.is_none()
        {
            let listed: Vec<String> = values.iter().map(Value::to_string).collect();
            let note = format!("Allowed values: {}.", listed.join(", "));
            description = Some(match description {
                Some(text) if !text.is_empty() => format!("{text} {note}"),
                _ => note,
            });
        }

        // Infer a missing type from the other keywords.
        if types.is_empty() {
            if object.contains_key("properties") {
                types.push("object");
            } else if object.contains_key("items") {
                types.push("array");
            } else if string_enum.is_some() {
                types.push("string");
            }
        }
        let gemini_types: Vec<String> = types.iter().map(|name| name.to_ascii_uppercase()).collect();
        let single_type = (gemini_types.len() == 1).then(|| gemini_types[0].clone());

        let mut out = Map::new();
        if let Some(kind) = &single_type {
            out.insert("type".into(), Value::String(kind.clone()));
            if let Some(format) = object.get("format").and_then(Value::as_str)
                && format_supported(kind, format)
            {
                out.insert("format".into(), Value::String(format.to_owned()));
            }
        }
        if let Some(title) = object.get("title").and_then(Value::as_str) {
            out.insert("title".into(), Value::String(title.to_owned()));
        }
        if let Some(description) = description {
            out.insert("description".into(), Value::String(description));
        }
        if nullable {
            out.insert("nullable".into(), Value::Bool(true));
        }
        if let Some(values) = string_enum {
            out.insert("enum".into(), Value::Array(values.clone()));
        }
        if let Some(Value::Object(properties)) = object.get("properties") {
            let mut translated = Map::new();
            for (name, property) in properties {
                let property = self.translate(property, depth + 1, &format!("{at}/properties/{name}"))?;
                translated.insert(name.clone(), Value::Object(property));
            }
            let required: Vec<Value> = object
                .get("required")
                .and_then(Value::as_array)
                .map(|names| {
                    names
                        .iter()
                        .filter(|name| name.as_str().is_some_and(|name| translated.contains_key(name)))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            let ordering: Vec<Value> = translated.keys().cloned().map(Value::String).collect();
            out.insert("properties".into(), Value::Object(translated));
            if !required.is_empty() {
                out.insert("required".into(), Value::Array(required));
            }
            if self.options.property_ordering && ordering.len() > 1 {
                out.insert("propertyOrdering".into(), Value::Array(ordering));
            }
        }
        if let Some(items @ (Value::Object(_) | Value::Bool(true))) = object.get("items") {
            let items = self.translate(items, depth + 1, &format!("{at}/items"))?;
            out.insert("items".into(), Value::Object(items));
        }
        if gemini_types.len() > 1 {
            // `type: ["string", "integer"]`: one branch per type.
            let branches = gemini_types
                .iter()
                .map(|kind| {
                    let mut branch = Map::new();
                    branch.insert("type".into(), Value::String(kind.clone()));
                    Value::Object(branch)
                })
                .collect();
            out.insert("anyOf".into(), Value::Array(branches));
        }
        for key in COPIED_NUMBERS {
            if let Some(value) = object.get(key).filter(|value| value.is_number()) {
                out.insert(key.into(), value.clone());
            }
        }
        if let Some(pattern) = object.get("pattern").filter(|value| value.is_string()) {
            out.insert("pattern".into(), pattern.clone());
        }
        for key in ["default", "example"] {
            if let Some(value) = object.get(key) {
                out.insert(key.into(), value.clone());
            }
        }

        let branches = object
            .get("anyOf")
            .map(|branches| ("anyOf", branches))
            .or_else(|| object.get("oneOf").map(|branches| ("oneOf", branches)));
        match branches {
            Some((keyword, Value::Array(branches))) => self.union(out, keyword, branches, depth, at),
            _ => Ok(out),
        }
    }

    /// `anyOf`/`oneOf`: null branches make the parent nullable; a single
    /// branch left is merged into the parent (whose own keywords win).
    fn union(
        &mut self,
        mut parent: Map<String, Value>,
        keyword: &str,
        branches: &[Value],
        depth: usize,
        at: &str,
    ) -> Result<Map<String, Value>, String> {
        let mut kept = Vec::with_capacity(branches.len());
        let mut nullable = false;
        for (i, branch) in branches.iter().enumerate() {
            let branch = self.translate(branch, depth + 1, &format!("{at}/{keyword}/{i}"))?;
            if branch.get("type").and_then(Value::as_str) == Some("NULL") && branch.len() == 1 {
                nullable = true;
            } else {
                kept.push(branch);
            }
        }
        if nullable {
            parent.insert("nullable".into(), Value::Bool(true));
        }
        match kept.len() {
            0 => Ok(parent),
            1 => Ok(overlay(kept.remove(0), parent)),
            _ => {
                parent.insert(
                    "anyOf".into(),
                    Value::Array(kept.into_iter().map(Value::Object).collect()),
                );
                Ok(parent)
            }
        }
    }
}

/// The formats Gemini's API accepts for each type.
fn format_supported(kind: &str, format: &str) -> bool {
    matches!(
        (kind, format),
        ("STRING", "date-time" | "enum") | ("NUMBER", "float" | "double") | ("INTEGER", "int32" | "int64")
    )
}

/// `base` with every key of `top` laid over it, in the canonical key order.
fn overlay(base: Map<String, Value>, top: Map<String, Value>) -> Map<String, Value> {
    let mut merged = base;
    for (key, value) in top {
        merged.insert(key, value);
    }
    canonical_order(merged)
}

/// Merges one `allOf` part into the schema built so far: properties and
/// required names are united, other keywords keep their first value.
fn merge_all_of(merged: &mut Map<String, Value>, part: Map<String, Value>) {
    for (key, value) in part {
        match (key.as_str(), merged.get_mut(&key), value) {
            ("properties", Some(Value::Object(existing)), Value::Object(more)) => {
                for (name, property) in more {
                    existing.entry(name).or_insert(property);
                }
            }
            ("required", Some(Value::Array(existing)), Value::Array(more)) => {
                for name in more {
                    if !existing.contains(&name) {
                        existing.push(name);
                    }
                }
            }
            (_, Some(_), _) => {}
            (_, None, value) => {
                merged.insert(key, value);
            }
        }
    }
}

/// The output key order, so merged schemas read like translated ones.
const ORDER: [&str; 22] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "properties",
    "required",
    "propertyOrdering",
    "items",
    "anyOf",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "minimum",
    "maximum",
    "pattern",
    "default",
    "example",
];

fn canonical_order(mut schema: Map<String, Value>) -> Map<String, Value> {
    let mut ordered = Map::new();
    for key in ORDER {
        if let Some(value) = schema.remove(key) {
            ordered.insert(key.to_owned(), value);
        }
    }
    ordered.extend(schema);
    ordered
}

fn without(object: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    object
        .iter()
        .filter(|(key, _)| !keys.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

fn short(text: &str) -> String {
    if text.len() <= 60 {
        return text.to_owned();
    }
    let mut end = 60;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn translate(schema: &Value) -> Value {
        to_gemini_schema(schema, SchemaOptions::default()).unwrap()
    }

    #[test]
    fn types_are_upper_case_and_unsupported_keywords_are_dropped() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "n": {"type": "integer", "format": "uint32", "minimum": 0, "exclusiveMaximum": 10, "multipleOf": 2},
                "x": {"type": "number", "format": "double"},
                "when": {"type": "string", "format": "date-time"},
                "mail": {"type": "string", "format": "email", "pattern": "^.+@.+$"},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": true}
            },
            "required": ["n", "ghost"],
            "additionalProperties": false,
            "patternProperties": {"^x": {"type": "string"}}
        });
        assert_eq!(
            translate(&schema),
            json!({"type": "OBJECT", "properties": {
                "n": {"type": "INTEGER", "minimum": 0},
                "x": {"type": "NUMBER", "format": "double"},
                "when": {"type": "STRING", "format": "date-time"},
                "mail": {"type": "STRING", "pattern": "^.+@.+$"},
                "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "minItems": 1}
            }, "required": ["n"]})
        );
    }

    #[test]
    fn nullable_forms_and_multi_types() {
        assert_eq!(
            translate(&json!({"type": ["string", "null"], "description": "d"})),
            json!({"type": "STRING", "description": "d", "nullable": true})
        );
        assert_eq!(
            translate(&json!({"type": ["string", "integer"]})),
            json!({"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]})
        );
        assert_eq!(
            translate(&json!({"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]})),
            json!({"nullable": true, "anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]})
        );
        assert_eq!(
            translate(&json!({"enum": ["a", "b", null]})),
            json!({"type": "STRING", "nullable": true, "enum": ["a", "b"]})
        );
    }

    #[test]
    fn const_and_non_string_enums() {
        assert_eq!(
            translate(&json!({"const": "Circle"})),
            json!({"type": "STRING", "enum": ["Circle"]})
        );
        assert_eq!(
            translate(&json!({"type": "integer", "enum": [1, 2, 3], "description": "Level."})),
            json!({"type": "INTEGER", "description": "Level. Allowed values: 1, 2, 3."})
        );
    }

    #[test]
    fn refs_are_inlined_with_their_siblings_and_cycles_are_refused() {
        let schema = json!({
            "definitions": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}},
            "type": "object",
            "properties": {"at": {"$ref": "#/definitions/Point", "description": "Where."}}
        });
        assert_eq!(
            translate(&schema),
            json!({"type": "OBJECT", "properties": {"at": {"type": "OBJECT", "description": "Where.",
                "properties": {"x": {"type": "NUMBER"}}}}})
        );
        let recursive = json!({
            "$defs": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
            "$ref": "#/$defs/Node"
        });
        let error = to_gemini_schema(&recursive, SchemaOptions::default()).unwrap_err();
        assert!(error.contains("recursive"), "{error}");
        assert!(error.contains("#/$defs/Node"), "{error}");
        let self_ref = json!({"type": "object", "properties": {"me": {"$ref": "#"}}});
        assert!(to_gemini_schema(&self_ref, SchemaOptions::default()).is_err());
        let dangling = json!({"$ref": "#/$defs/Missing"});
        assert!(
            to_gemini_schema(&dangling, SchemaOptions::default())
                .unwrap_err()
                .contains("points to nothing")
        );
        let remote = json!({"$ref": "https://example.com/schema.json"});
        assert!(
            to_gemini_schema(&remote, SchemaOptions::default())
                .unwrap_err()
                .contains("only local references")
        );
    }

    #[test]
    fn deep_nesting_is_cut_with_an_error() {
        let mut schema = json!({"type": "string"});
        for _ in 0..(MAX_DEPTH + 2) {
            schema = json!({"type": "array", "items": schema});
        }
        let error = to_gemini_schema(&schema, SchemaOptions::default()).unwrap_err();
        assert!(error.contains("deeper than"), "{error}");
    }

    #[test]
    fn all_of_is_merged_and_property_ordering_is_optional() {
        let schema = json!({"allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "boolean"}}, "required": ["b"]}
        ], "description": "Both."});
        let ordered = to_gemini_schema(
            &schema,
            SchemaOptions {
                property_ordering: true,
            },
        )
        .unwrap();
        assert_eq!(
            ordered,
            json!({"type": "OBJECT", "description": "Both.",
                "properties": {"a": {"type": "STRING"}, "b": {"type": "BOOLEAN"}},
                "required": ["a", "b"], "propertyOrdering": ["a", "b"]})
        );
    }

    #[test]
    fn non_schemas_are_errors() {
        assert!(to_gemini_schema(&json!(42), SchemaOptions::default()).is_err());
        assert_eq!(translate(&json!(true)), json!({}));
        assert_eq!(
            translate(&json!({"items": true})),
            json!({"type": "ARRAY", "items": {}})
        );
    }
}
