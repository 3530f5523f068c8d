//! Typed output: `Agent::run_typed` / `Agent::run_json` send the schema as
//! the response format, validate the answer, and retry once with the
//! violations.

mod common;

use agent_core::{Message, RunEnd, ToolContext, Usage};
use agent_runner::{TypedError, schema_of};
use agent_testing::{ScriptedClient, response};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Climate {
    Cold,
    Mild,
    Hot,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Location {
    country: String,
    coastal: bool,
}

/// A report with a nested object and an enum.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct CityReport {
    name: String,
    climate: Climate,
    location: Location,
}

const VALID: &str = r#"{"name": "Oslo", "climate": "cold", "location": {"country": "Norway", "coastal": true}}"#;
const BAD_ENUM: &str = r#"{"name": "Oslo", "climate": "freezing", "location": {"country": "Norway"}}"#;

fn user_text(message: &Message) -> Option<&str> {
    match message {
        Message::User { content, .. } => Some(content),
        _ => None,
    }
}

#[tokio::test]
async fn a_valid_first_answer_is_deserialised_and_the_format_is_sent() {
    let client = common::json_schema_client().respond(response::text(VALID));
    let agent = common::agent(&client).build();
    let run = agent
        .run_typed::<CityReport>(vec![], "Describe Oslo.", &ToolContext::new())
        .await
        .expect("a valid answer");
    assert_eq!(run.value.climate, Climate::Cold);
    assert_eq!(run.value.location.country, "Norway");
    assert_eq!(run.attempts, 1);
    assert!(run.first_violations.is_empty());
    assert_eq!(run.result.stop_reason, RunEnd::Completed);

    // Tools are offered: the format is not sent, the schema is in the message.
    let requests = client.requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].response_format.is_none());
    assert!(!requests[0].tools.is_empty());
    let message = requests[0].messages.last().and_then(user_text).expect("a user message");
    assert!(
        message.starts_with("Describe Oslo.") && message.contains("\"climate\""),
        "{message}"
    );
}

#[tokio::test]
async fn an_agent_without_tools_sends_the_format_and_the_question_as_it_is() {
    let client = common::json_schema_client().respond(response::text(VALID));
    let agent = agent_runner::Agent::builder(std::sync::Arc::new(client.clone())).build();
    let run = agent
        .run_typed::<CityReport>(vec![], "Describe Oslo.", &ToolContext::new())
        .await
        .expect("a valid answer");
    assert_eq!(run.value.name, "Oslo");
    let requests = client.requests();
    let format = requests[0].response_format.as_ref().expect("a response format");
    assert_eq!(format.schema, schema_of::<CityReport>());
    assert_eq!(format.name, "CityReport");
    // A client that enforces the schema gets the user message unchanged.
    assert_eq!(requests[0].messages.last().and_then(user_text), Some("Describe Oslo."));
}

#[tokio::test]
async fn a_tool_using_run_calls_its_tools_without_the_format() {
    let client = common::json_schema_client()
        .respond(response::tool_calls([("echo", json!({"city": "Oslo"}))]))
        .respond(response::text(format!("```json\n{VALID}\n```")));
    let agent = common::agent(&client).build();
    let run = agent
        .run_typed::<CityReport>(vec![], "Describe Oslo.", &ToolContext::new())
        .await
        .expect("a valid answer");
    assert_eq!(run.result.tool_calls.len(), 1);
    assert_eq!(run.value.name, "Oslo");
    let requests = client.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests
            .iter()
            .all(|r| r.response_format.is_none() && !r.tools.is_empty())
    );
}

#[tokio::test]
async fn an_invalid_answer_is_retried_once_with_the_violations() {
    let first = response::with_usage(
        response::text(BAD_ENUM),
        Usage {
            input_tokens: 100,
            output_tokens: 10,
            ..Usage::default()
        },
    );
    let second = response::with_usage(
        response::text(VALID),
        Usage {
            input_tokens: 150,
            output_tokens: 12,
            ..Usage::default()
        },
    );
    let client = common::json_schema_client().respond(first).respond(second);
    let agent = common::agent(&client).build();
    let run = agent
        .run_typed::<CityReport>(vec![], "Describe Oslo.", &ToolContext::new())
        .await
        .expect("valid on the retry");
    assert_eq!(run.attempts, 2);
    assert_eq!(run.value.climate, Climate::Cold);
    let paths: Vec<&str> = run.first_violations.iter().map(|v| v.instance_path.as_str()).collect();
    assert!(paths.contains(&"/climate") && paths.contains(&"/location"), "{paths:?}");
    // Both attempts are in the record.
    assert_eq!(run.result.iterations, 2);
    assert_eq!(run.result.model_calls.len(), 2);
    assert_eq!(run.result.usage.input_tokens, 250);
    assert_eq!(run.result.usage.output_tokens, 22);

    let requests = client.requests();
    assert_eq!(requests.len(), 2);
    let retry = requests[1].messages.last().and_then(user_text).expect("a user message");
    assert!(retry.contains("at /climate:") && retry.contains("freezing"), "{retry}");
    assert!(retry.contains("at /location:") && retry.contains("coastal"), "{retry}");
    // The retry continues the conversation; it must answer: no tools, the format.
    assert!(requests[1].messages.len() > requests[0].messages.len());
    assert!(requests[0].response_format.is_none());
    assert_eq!(
        requests[1].response_format.as_ref().map(|format| format.name.as_str()),
        Some("CityReport")
    );
    assert!(requests[1].tools.is_empty());
    assert_eq!(requests[1].tool_choice, agent_core::ToolChoice::None);
    // The whole conversation is kept: first question, bad answer, correction, answer.
    assert_eq!(run.result.messages.len(), 4);
}

#[tokio::test]
async fn two_invalid_answers_are_a_typed_error_that_keeps_the_record() {
    let client = common::json_schema_client()
        .respond(response::text("Oslo is cold."))
        .respond(response::text(BAD_ENUM));
    let agent = common::agent(&client).build();
    let error = agent
        .run_typed::<CityReport>(vec![], "Describe Oslo.", &ToolContext::new())
        .await
        .expect_err("invalid twice");
    let TypedError::Invalid {
        violations,
        attempts,
        result,
    } = &error
    else {
        panic!("expected an Invalid error, got {error}");
    };
    assert_eq!(*attempts, 2);
    assert!(
        violations.iter().any(|v| v.instance_path == "/climate"),
        "{violations:?}"
    );
    assert_eq!(result.iterations, 2);
    assert_eq!(result.response, BAD_ENUM);
    assert!(error.to_string().contains("/climate"), "{error}");
    // The first answer was not JSON: the retry said so.
    let requests = client.requests();
    let retry = requests[1].messages.last().and_then(user_text).expect("a user message");
    assert!(retry.contains("at the root: the answer is not JSON"), "{retry}");
    assert_eq!(client.remaining(), 0);
}

#[tokio::test]
async fn a_client_without_json_schema_gets_the_schema_in_the_message() {
    let client = ScriptedClient::new().respond(response::text(VALID));
    let agent = common::agent(&client).build();
    let run = agent
        .run_json(vec![], "Describe Oslo.", schema_of::<CityReport>(), &ToolContext::new())
        .await
        .expect("a valid answer");
    assert_eq!(run.value["location"]["country"], "Norway");
    let requests = client.requests();
    assert!(requests[0].response_format.is_none(), "tools are offered");
    let message = requests[0].messages.last().and_then(user_text).expect("a user message");
    assert!(
        message.starts_with("Describe Oslo.") && message.contains("\"climate\""),
        "{message}"
    );
}

#[tokio::test]
async fn an_unusable_schema_is_reported_before_any_call() {
    let client = common::json_schema_client().respond(response::text(VALID));
    let agent = common::agent(&client).build();
    let error = agent
        .run_json(vec![], "hi", json!({"type": 42}), &ToolContext::new())
        .await
        .expect_err("bad schema");
    assert!(matches!(error, TypedError::Schema(_)), "{error}");
    assert!(client.requests().is_empty());
}

#[tokio::test]
async fn run_json_accepts_what_its_schema_accepts() {
    let client = common::json_schema_client().respond(response::text(r#"{"name": 3}"#));
    let agent = common::agent(&client).build();
    let run = agent
        .run_json(vec![], "hi", json!({"type": "object"}), &ToolContext::new())
        .await
        .expect("valid for the loose schema");
    assert_eq!(run.value, json!({"name": 3}));
    assert_eq!(run.json, run.value);
}

#[tokio::test]
async fn a_typed_run_about_an_attached_image_sends_the_image_and_keeps_it_on_a_retry() {
    let client = common::json_schema_client()
        .respond(response::text(BAD_ENUM))
        .respond(response::text(VALID));
    let agent = common::agent(&client).build();
    let run = agent
        .run_json_message(
            vec![],
            Message::user_with("Which city is in the photo?", vec![agent_testing::media::png()]),
            schema_of::<CityReport>(),
            &ToolContext::new(),
        )
        .await
        .expect("a valid answer on the retry");
    assert_eq!(run.attempts, 2);
    let requests = client.requests();
    for request in &requests {
        let question = request
            .messages
            .iter()
            .find(|message| matches!(message, Message::User { .. }))
            .expect("the question");
        assert_eq!(question.attachments(), [agent_testing::media::png()]);
    }
    assert_eq!(run.result.messages[0].attachments(), [agent_testing::media::png()]);
}
