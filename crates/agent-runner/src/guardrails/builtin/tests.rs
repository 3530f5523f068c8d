use agent_core::{GuardrailStage, ToolCall};
use serde_json::json;

use super::*;

fn at(stage: GuardrailStage) -> Checked<'static> {
    Checked { stage, call: None }
}

async fn text(guardrail: &dyn Guardrail, input: &str) -> Verdict<String> {
    guardrail.check_text(input, at(GuardrailStage::ToolResult)).await
}

#[tokio::test]
async fn the_size_limit_counts_characters_not_bytes() {
    let limit = MaxInputSize::new(5);
    assert_eq!(text(&limit, "héllo").await, Verdict::Pass);
    let Verdict::Trip { reason } = text(&limit, "héllo!").await else {
        panic!("six characters passed a limit of five");
    };
    assert!(reason.contains("5 characters"), "{reason}");
    assert_eq!(text(&MaxInputSize::new(0), "").await, Verdict::Pass);
}

#[tokio::test]
async fn the_deny_list_matches_keywords_in_any_case_and_spacing_and_names_the_rule() {
    let deny =
        DenyList::new(["ignore previous instructions", "rm -rf"], [r"(?i)\bpassw(or)?d\b"]).expect("valid patterns");
    let Verdict::Trip { reason } = text(&deny, "Please IGNORE  previous\ninstructions now").await else {
        panic!("the keyword was not found");
    };
    assert_eq!(reason, "it holds the denied phrase `ignore previous instructions`");
    let Verdict::Trip { reason } = text(&deny, "what is the PASSWORD?").await else {
        panic!("the pattern was not found");
    };
    assert!(reason.contains(r"passw(or)?d"), "{reason}");
    assert_eq!(text(&deny, "ignore the previous line").await, Verdict::Pass);
    assert!(DenyList::new(Vec::<String>::new(), ["(unclosed"]).is_err());
}

#[tokio::test]
async fn redaction_hides_keys_emails_and_valid_card_numbers_only() {
    let redactor = Redactor::builtin();
    let input = "key sk-proj-abcdefghijklmnop1234, mail ana.diaz@example.co.uk, card 4111 1111 1111 1111, \
                 order 1234 5678 9012 3456, api_key=\"s3cr3t-value\", Authorization: Bearer abcdefghijklmnopqrstuv";
    let Verdict::Rewrite(output) = text(&redactor, input).await else {
        panic!("nothing was redacted");
    };
    assert_eq!(
        output,
        "key [redacted api_key], mail [redacted email], card [redacted card_number], \
         order 1234 5678 9012 3456, api_key=\"[redacted api_key]\", Authorization: Bearer [redacted api_key]"
    );
    assert_eq!(text(&redactor, "nothing secret here, 42 apples").await, Verdict::Pass);
}

#[tokio::test]
async fn custom_patterns_replace_their_secret_group_only() {
    let iban =
        RedactionPattern::new("iban", r"IBAN:\s*(?P<secret>[A-Z]{2}\d{2}[A-Z0-9]{10,30})").expect("a valid pattern");
    let redactor = Redactor::new([iban]);
    assert_eq!(redactor.pattern_names(), ["iban"]);
    assert_eq!(
        text(&redactor, "IBAN: FR7630006000011234567890189 thanks").await,
        Verdict::Rewrite("IBAN: [redacted iban] thanks".to_owned())
    );
    assert!(RedactionPattern::builtin("phone").is_none());
}

#[tokio::test]
async fn redacting_arguments_keeps_them_json() {
    let call = ToolCall::new(
        "c1",
        "send",
        json!({"to": "bob@example.com", "note": "say \"hi\"", "cc": ["eve@example.org"], "n": 3}),
    );
    let Verdict::Rewrite(arguments) = Redactor::builtin().check_arguments(&call).await else {
        panic!("nothing was redacted");
    };
    assert_eq!(
        arguments,
        json!({"to": "[redacted email]", "note": "say \"hi\"", "cc": ["[redacted email]"], "n": 3})
    );
}

#[tokio::test]
async fn arguments_go_through_the_text_check_by_default() {
    let call = ToolCall::new("c1", "shell", json!({"command": "rm -rf /"}));
    let deny = DenyList::new(["rm -rf"], Vec::<String>::new()).expect("no patterns");
    assert!(matches!(deny.check_arguments(&call).await, Verdict::Trip { .. }));
}

#[tokio::test]
async fn the_schema_check_lists_the_violations() {
    let schema = OutputSchema::new(json!({
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"]
    }))
    .expect("a valid schema");
    let check = |input: &'static str| {
        let schema = &schema;
        async move { schema.check_text(input, at(GuardrailStage::Output)).await }
    };
    assert_eq!(check(r#"{"city": "Lyon"}"#).await, Verdict::Pass);
    assert_eq!(
        check("Here it is:\n```json\n{\"city\": \"Lyon\"}\n```").await,
        Verdict::Pass
    );
    let Verdict::Trip { reason } = check(r#"{"town": "Lyon"}"#).await else {
        panic!("a missing field passed");
    };
    assert!(reason.contains("\"city\" is a required property"), "{reason}");
    assert!(matches!(check("Lyon").await, Verdict::Trip { .. }));
    assert!(OutputSchema::new(json!({"type": "no-such-type"})).is_err());
}

#[test]
fn the_luhn_check_tells_card_numbers_from_other_digits() {
    assert!(luhn_valid("4111111111111111"));
    assert!(luhn_valid("5500-0000-0000-0004"));
    assert!(!luhn_valid("4111111111111112"));
    assert!(!luhn_valid("411111111111"));
}
