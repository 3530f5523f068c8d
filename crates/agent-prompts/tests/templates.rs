//! Template syntax, strict rendering and escaping.

use std::collections::{BTreeMap, HashMap};

use agent_prompts::{PromptError, PromptTemplate, SyntaxErrorKind};

fn parse(text: &str) -> PromptTemplate {
    PromptTemplate::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

#[test]
fn renders_from_maps_arrays_and_vectors() {
    let template = parse("Hi {{name}}, you are {{ age }}.");
    let hash: HashMap<String, String> = [("name".into(), "Ada".into()), ("age".into(), "36".into())].into();
    let btree: BTreeMap<&str, &str> = [("name", "Ada"), ("age", "36")].into();
    assert_eq!(template.render(&hash).expect("hash map"), "Hi Ada, you are 36.");
    assert_eq!(template.render(&btree).expect("btree map"), "Hi Ada, you are 36.");
    assert_eq!(
        template.render([("name", "Ada"), ("age", "36")]).expect("array"),
        "Hi Ada, you are 36."
    );
    let owned = vec![
        ("name".to_owned(), "Ada".to_owned()),
        ("age".to_owned(), 36.to_string()),
    ];
    assert_eq!(template.render(owned).expect("vec"), "Hi Ada, you are 36.");
}

#[test]
fn required_variables_in_order_without_duplicates() {
    let template = parse("{{b}} {{a}} {{ b }} {{c.d}} {{e-f}} {{_g1}}");
    assert_eq!(template.required_variables(), ["b", "a", "c.d", "e-f", "_g1"]);
    assert!(parse("no variables").required_variables().is_empty());
}

#[test]
fn missing_variables_are_all_listed_in_one_error() {
    let template = parse("{{a}} {{b}} {{c}} {{a}} {{d}}");
    let error = template.render([("b", "x")]).expect_err("missing");
    match &error {
        PromptError::MissingVariables { missing } => assert_eq!(missing, &["a", "c", "d"]),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        error.to_string(),
        "missing values for template variables: `a`, `c`, `d`"
    );
}

#[test]
fn extra_values_are_ignored_and_last_duplicate_wins() {
    let template = parse("{{a}}");
    assert_eq!(
        template.render([("a", "1"), ("zzz", "2"), ("a", "3")]).expect("render"),
        "3"
    );
}

#[test]
fn values_are_inserted_literally() {
    let template = parse("A={{a}} B={{b}}");
    let text = template.render([("a", "{{b}}"), ("b", "{{{{ $1 \\n")]).expect("render");
    assert_eq!(text, "A={{b}} B={{{{ $1 \\n");
}

#[test]
fn escaping_double_braces() {
    let template = parse("literal {{{{name}} and {{{{ and }} and {\"json\": {\"x\": 1}} and {{v}}");
    assert_eq!(template.required_variables(), ["v"]);
    assert_eq!(
        template.render([("v", "ok")]).expect("render"),
        "literal {{name}} and {{ and }} and {\"json\": {\"x\": 1}} and ok"
    );
    // `{{{{` followed by a placeholder.
    assert_eq!(parse("{{{{{{x}}").render([("x", "1")]).expect("render"), "{{1");
}

#[test]
fn whitespace_inside_braces() {
    let template = parse("{{name}}|{{ name }}|{{\tname\n}}|{{   name}}");
    assert_eq!(template.render([("name", "x")]).expect("render"), "x|x|x|x");
}

#[test]
fn unicode_text_and_values() {
    let template = parse("こんにちは {{ name }} 🎉\n{{city}}");
    let text = template
        .render([("name", "太郎"), ("city", "東京 🗼")])
        .expect("render");
    assert_eq!(text, "こんにちは 太郎 🎉\n東京 🗼");
    assert_eq!(
        syntax_error("🎉 {{名前}}"),
        (1, 3, SyntaxErrorKind::InvalidName { found: '名' })
    );
}

fn syntax_error(text: &str) -> (usize, usize, SyntaxErrorKind) {
    match PromptTemplate::parse(text) {
        Err(PromptError::Syntax { line, column, kind, .. }) => (line, column, kind),
        other => panic!("{text:?}: expected a syntax error, got {other:?}"),
    }
}

#[test]
fn malformed_placeholders_report_line_and_column() {
    assert_eq!(syntax_error("Hello {{ unclosed"), (1, 7, SyntaxErrorKind::Unclosed));
    assert_eq!(syntax_error("a\nbc {{ }}"), (2, 4, SyntaxErrorKind::EmptyName));
    assert_eq!(
        syntax_error("é\n\nxyz{{1abc}}"),
        (3, 4, SyntaxErrorKind::InvalidName { found: '1' })
    );
    assert_eq!(
        syntax_error("ü {{ name oops }}"),
        (
            1,
            3,
            SyntaxErrorKind::ExpectedClose {
                name: "name".into(),
                found: 'o'
            }
        )
    );
    assert_eq!(
        syntax_error("{{name}"),
        (
            1,
            1,
            SyntaxErrorKind::ExpectedClose {
                name: "name".into(),
                found: '}'
            }
        )
    );
    assert_eq!(
        syntax_error("{{{x}}}"),
        (1, 1, SyntaxErrorKind::InvalidName { found: '{' })
    );
    assert_eq!(syntax_error("text {{"), (1, 6, SyntaxErrorKind::Unclosed));
}

#[test]
fn syntax_error_message_is_actionable() {
    let error = PromptTemplate::parse("line one\n  {{ unclosed").expect_err("unclosed");
    assert_eq!(
        error.to_string(),
        "malformed placeholder in template text at line 2, column 3: `{{` is never closed with `}}`"
    );
    let error = PromptTemplate::parse("{{ 9 }}").expect_err("invalid");
    assert!(error.to_string().contains("write `{{{{` for a literal `{{`"), "{error}");
}

#[test]
fn display_and_from_str_round_trip() {
    let text = "Hi {{ name }}, {{{{literal";
    let template: PromptTemplate = text.parse().expect("from_str");
    assert_eq!(template.to_string(), text);
    assert_eq!(template.source(), text);
    assert_eq!(PromptTemplate::try_from(text.to_owned()).expect("try_from"), template);
}
