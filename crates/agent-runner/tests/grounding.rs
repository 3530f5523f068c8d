//! The grounding check of final answers ([`Grounding::On`]): every path
//! with the scripted client. An invented figure never reaches the user: the
//! model is re-asked with a call required, then with the results restated,
//! and the answer is replaced when it is still not grounded.

mod common;

use agent_core::{
    AgentEvent, AgentRunResult, GroundingAction, GroundingFault, Message, RunEnd, ToolChoice, ToolOutput,
};
use std::time::Duration;

use agent_runner::{Grounding, RunState, Step, ToolOutcome};
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use futures::StreamExt;
use serde_json::json;

const PARIS: &str = r#"{"city": "Paris", "temperature_c": 18.4, "summary": "Paris: 18.4 °C, light rain"}"#;

fn travel_tools() -> TestTools {
    TestTools::new("travel")
        .with(TestTool::new(
            "get_weather",
            ToolBehaviour::Reply(ToolOutput::Json(serde_json::from_str(PARIS).unwrap_or_default())),
        ))
        .with(TestTool::new(
            "find_place",
            ToolBehaviour::Fail(
                "The user has not named \"London\" (the destination). Call the tool again with the place the user meant."
                    .into(),
            ),
        ))
}

async fn run(client: &ScriptedClient, grounding: Grounding, question: &str) -> AgentRunResult {
    run_on(
        common::agent_with(client, travel_tools()).grounding(grounding),
        question,
    )
    .await
}

/// The answer of the agent `builder` builds to `question`, a failed run's too.
async fn run_on(builder: agent_runner::AgentBuilder, question: &str) -> AgentRunResult {
    builder
        .build()
        .run(question)
        .await
        .unwrap_or_else(|error| *error.result)
}

fn weather_call() -> agent_core::ChatResponse {
    response::tool_calls([("get_weather", json!({"city": "Paris"}))])
}

fn assistant_texts(result: &AgentRunResult) -> Vec<String> {
    result
        .messages
        .iter()
        .filter_map(|message| match message {
            Message::Assistant(reply) if !reply.content.is_empty() => Some(reply.content.clone()),
            _ => None,
        })
        .collect()
}

fn user_texts(result: &AgentRunResult) -> Vec<String> {
    result
        .messages
        .iter()
        .filter_map(|message| match message {
            Message::User { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_grounded_answer_is_accepted_as_written() {
    let client = ScriptedClient::new()
        .respond(weather_call())
        .respond(response::text("It is 18 °C in Paris, with light rain."));
    let result = run(&client, Grounding::On, "How warm is Paris?").await;
    assert_eq!(result.response, "It is 18 °C in Paris, with light rain.");
    let grounding = result.grounding.expect("grounding is recorded when on");
    assert!(grounding.checked);
    assert!(grounding.ungrounded.is_empty() && grounding.faults.is_empty() && grounding.actions.is_empty());
    assert_eq!(client.requests().len(), 2);
}

#[tokio::test]
async fn an_invented_figure_without_a_call_is_re_asked_with_a_call_required() {
    let client = ScriptedClient::new()
        .respond(response::text("Paris is currently 22 degrees Celsius."))
        .respond(weather_call())
        .respond(response::text("Paris has 18.4 °C and light rain."));
    let result = run(&client, Grounding::On, "How warm is Paris right now?").await;

    assert_eq!(result.response, "Paris has 18.4 °C and light rain.");
    assert_eq!(result.stop_reason, RunEnd::Completed);
    let requests = client.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].tool_choice, ToolChoice::Auto);
    assert_eq!(
        requests[1].tool_choice,
        ToolChoice::Required,
        "the re-ask requires a call"
    );
    assert!(
        !format!("{:?}", requests[1].messages).contains("22 degrees"),
        "the invented answer is not sent back"
    );
    assert_eq!(requests[2].tool_choice, ToolChoice::Auto, "only the re-ask is forced");
    let grounding = result.grounding.clone().expect("recorded");
    assert_eq!(grounding.ungrounded, ["22 degrees Celsius"]);
    assert_eq!(grounding.faults, [GroundingFault::UngroundedFigures]);
    assert_eq!(grounding.actions, [GroundingAction::ReaskedForCall]);
    assert!(!assistant_texts(&result).iter().any(|text| text.contains("22")));
}

#[tokio::test]
async fn an_invented_figure_after_calls_is_re_asked_with_the_results_restated() {
    let client = ScriptedClient::new()
        .respond(weather_call())
        .respond(response::text("Paris: 25 °C and sunny."))
        .respond(response::text("Paris has 18.4 °C with light rain."));
    let result = run(&client, Grounding::On, "Weather in Paris?").await;

    assert_eq!(result.response, "Paris has 18.4 °C with light rain.");
    let requests = client.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].tool_choice, ToolChoice::None, "the restated re-ask answers");
    let Some(Message::User { content, .. }) = requests[2].messages.last() else {
        panic!("the re-ask ends with a restatement: {:?}", requests[2].messages.last());
    };
    assert!(content.contains("- Paris: 18.4 °C, light rain"), "{content}");
    assert!(
        !user_texts(&result)
            .iter()
            .any(|text| text.contains("only these tool results")),
        "the restatement is transient"
    );
    let grounding = result.grounding.expect("recorded");
    assert_eq!(grounding.ungrounded, ["25 °C"]);
    assert_eq!(grounding.actions, [GroundingAction::ReaskedWithResults]);
}

#[tokio::test]
async fn a_figure_still_invented_after_the_re_asks_is_replaced_by_what_the_tools_returned() {
    let client = ScriptedClient::new()
        .respond(response::text("It is 30 °C in Paris."))
        .respond(weather_call())
        .respond(response::text("It is 31 °C in Paris."))
        .respond(response::text("Really, it is 32 °C."));
    let result = run(&client, Grounding::On, "Is it hot in Paris?").await;

    assert_eq!(result.response, "Paris: 18.4 °C, light rain");
    assert_eq!(client.requests().len(), 4);
    assert_eq!(
        assistant_texts(&result).last().map(String::as_str),
        Some("Paris: 18.4 °C, light rain"),
        "the next turn sees what the user was told"
    );
    let grounding = result.grounding.expect("recorded");
    assert_eq!(grounding.ungrounded, ["30 °C", "31 °C", "32 °C"]);
    assert_eq!(
        grounding.actions,
        [
            GroundingAction::ReaskedForCall,
            GroundingAction::ReaskedWithResults,
            GroundingAction::Replaced
        ]
    );
    assert!(grounding.replaced());
}

#[tokio::test]
async fn with_no_result_to_give_the_user_hears_it_could_not_be_looked_up() {
    // The model refuses the required call: nothing was looked up.
    let client = ScriptedClient::new()
        .respond(response::text("A ticket from Boston to Rome costs $100."))
        .respond(response::text("It costs $120."));
    let result = run(&client, Grounding::On, "How much is a flight from Boston to Rome?").await;
    assert_eq!(result.response, "I could not look that up.");
    let grounding = result.grounding.expect("recorded");
    assert_eq!(grounding.ungrounded, ["$100", "$120"]);
    assert_eq!(
        grounding.actions,
        [GroundingAction::ReaskedForCall, GroundingAction::Replaced]
    );
}

#[tokio::test]
async fn asking_the_question_a_failed_tool_suggests_is_not_an_echo() {
    let tools = TestTools::new("travel").with(TestTool::new(
        "get_flight_prices",
        ToolBehaviour::Fail(
            "the user has not said when the flight is. Reply to the user with a short question, \
             for example: On what date do you want to fly?"
                .into(),
        ),
    ));
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("get_flight_prices", json!({"to": "Paris"}))]))
        .respond(response::text("On what date do you want to fly?"));
    let result = run_on(
        common::agent_with(&client, tools).grounding(Grounding::On),
        "How much is a flight to Paris?",
    )
    .await;
    assert_eq!(result.response, "On what date do you want to fly?");
    assert!(result.grounding.expect("recorded").faults.is_empty());
    assert_eq!(client.requests().len(), 2);
}

#[tokio::test]
async fn an_answer_repeating_a_tools_instruction_to_the_model_is_not_passed_on() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("find_place", json!({"name": "London"}))]))
        .respond(response::text(
            "The user has not named \"London\" (the destination). Call the tool again with the place the user meant.",
        ))
        .respond(response::text("Where would you like to fly to?"));
    let result = run(&client, Grounding::On, "Book me something from London").await;

    assert_eq!(result.response, "Where would you like to fly to?");
    let grounding = result.grounding.expect("recorded");
    assert_eq!(grounding.faults, [GroundingFault::EchoedInstruction]);
    assert_eq!(grounding.actions, [GroundingAction::ReaskedWithResults]);
    let restatement = client.requests()[2].messages.last().cloned();
    let Some(Message::User { content, .. }) = restatement else {
        panic!("a restatement: {restatement:?}");
    };
    assert!(content.contains("find_place failed"), "{content}");
}

#[tokio::test]
async fn an_answer_ignoring_every_result_of_its_calls_is_re_asked() {
    let client = ScriptedClient::new()
        .respond(weather_call())
        .respond(response::text(
            "I'm glad I could help! Is there anything else you need?",
        ))
        .respond(response::text("In Paris there is light rain."));
    let result = run(&client, Grounding::On, "What's it like in Paris?").await;
    assert_eq!(result.response, "In Paris there is light rain.");
    let grounding = result.grounding.expect("recorded");
    assert_eq!(grounding.faults, [GroundingFault::IgnoredResults]);
    assert!(grounding.ungrounded.is_empty());
}

#[tokio::test]
async fn a_forced_answer_echoing_the_runners_instruction_is_replaced_without_a_re_ask() {
    let client = ScriptedClient::new()
        .respond(weather_call())
        .respond(response::text("No more tool calls."));
    let result = run_on(
        common::agent_with(&client, travel_tools())
            .grounding(Grounding::On)
            .max_iterations(1),
        "Paris weather",
    )
    .await;
    assert_eq!(result.stop_reason, RunEnd::MaxIterations);
    assert_eq!(result.response, "Paris: 18.4 °C, light rain");
    assert_eq!(client.requests().len(), 2);
    let grounding = result.grounding.expect("recorded");
    assert_eq!(
        grounding.faults,
        [GroundingFault::EchoedInstruction, GroundingFault::IgnoredResults]
    );
    assert_eq!(grounding.actions, [GroundingAction::Replaced]);
}

#[tokio::test]
async fn an_answer_that_writes_a_call_is_never_shown_as_the_answer() {
    // A forced answer of prose and call JSON (a small model under the
    // no-call grammar): replaced at once by what the tools returned.
    let client = ScriptedClient::new().respond(weather_call()).respond(response::text(
        "Here is the weather in Paris: {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
    ));
    let result = run_on(
        common::agent_with(&client, travel_tools())
            .grounding(Grounding::On)
            .max_iterations(1),
        "Paris weather",
    )
    .await;
    assert_eq!(result.response, "Paris: 18.4 °C, light rain");
    let grounding = result.grounding.expect("recorded");
    assert_eq!(grounding.faults, [GroundingFault::WroteACall]);
    assert_eq!(grounding.actions, [GroundingAction::Replaced]);

    // Not forced: re-asked with the results, like any faulty answer.
    let client = ScriptedClient::new()
        .respond(weather_call())
        .respond(response::text(
            "<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>",
        ))
        .respond(response::text("Light rain in Paris, 18 °C."));
    let result = run(&client, Grounding::On, "Paris weather").await;
    assert_eq!(result.response, "Light rain in Paris, 18 °C.");
    let grounding = result.grounding.expect("recorded");
    assert!(
        grounding.faults.contains(&GroundingFault::WroteACall),
        "{:?}",
        grounding.faults
    );
    assert_eq!(grounding.actions, [GroundingAction::ReaskedWithResults]);

    // JSON that calls no tool is an answer like any other.
    let client = ScriptedClient::new().respond(weather_call()).respond(response::text(
        "Paris: {\"temperature_c\": 18.4, \"sky\": \"light rain\"}",
    ));
    let result = run(&client, Grounding::On, "Paris weather as JSON").await;
    assert!(result.grounding.expect("recorded").faults.is_empty());
}

#[tokio::test]
async fn an_answer_copying_a_results_raw_json_is_replaced_by_its_summary() {
    // The result as the model was given it.
    let given = serde_json::from_str::<serde_json::Value>(PARIS)
        .map(|v| v.to_string())
        .unwrap_or_default();
    let client = ScriptedClient::new()
        .respond(weather_call())
        .respond(response::text(format!(
            "```json\n<tool_response>\n{given}\n</tool_response>\n```"
        )));
    let result = run(&client, Grounding::On, "Paris weather").await;
    assert_eq!(result.response, "Paris: 18.4 °C, light rain");
    assert_eq!(client.requests().len(), 2, "put right without asking again");
    let grounding = result.grounding.expect("recorded");
    assert_eq!(grounding.faults, [GroundingFault::RawResult]);
    assert_eq!(grounding.actions, [GroundingAction::Replaced]);

    // The result's values, said in other words, are an answer.
    let client = ScriptedClient::new()
        .respond(weather_call())
        .respond(response::text("Paris: city Paris, temperature_c 18.4, light rain."));
    let result = run(&client, Grounding::On, "Paris weather").await;
    assert!(result.grounding.expect("recorded").faults.is_empty());
}

#[tokio::test]
async fn an_answer_that_ignores_that_every_call_failed_is_not_passed_on() {
    let failing = || {
        TestTools::new("travel").with(TestTool::new(
            "get_weather",
            ToolBehaviour::Fail("City not found: Atlantis. Call the tool again with a real city.".into()),
        ))
    };
    let ask = |client: &ScriptedClient| {
        run_on(
            common::agent_with(client, failing()).grounding(Grounding::On),
            "Weather in Atlantis?",
        )
    };
    let atlantis = || response::tool_calls([("get_weather", json!({"city": "Atlantis"}))]);
    // Re-asked with the failure restated, then replaced, saying why.
    let client = ScriptedClient::new()
        .respond(atlantis())
        .respond(response::text("Atlantis is lovely this time of year."))
        .respond(response::text("Atlantis, the sunken city."));
    let result = ask(&client).await;
    assert_eq!(result.response, "I could not look that up: City not found: Atlantis.");
    let grounding = result.grounding.expect("recorded");
    assert_eq!(grounding.faults, [GroundingFault::IgnoredResults]);
    assert_eq!(
        grounding.actions,
        [GroundingAction::ReaskedWithResults, GroundingAction::Replaced]
    );
    // An answer that says it went wrong stands.
    let client = ScriptedClient::new()
        .respond(atlantis())
        .respond(response::text("Sorry, I couldn't find a city called Atlantis."));
    let result = ask(&client).await;
    assert_eq!(result.response, "Sorry, I couldn't find a city called Atlantis.");
    // An empty fence says nothing at all.
    let client = ScriptedClient::new()
        .respond(atlantis())
        .respond(response::text("```json\n```"))
        .respond(response::text("```json\n```"));
    let result = ask(&client).await;
    assert_eq!(result.response, "I could not look that up: City not found: Atlantis.");
    assert!(
        result
            .grounding
            .expect("recorded")
            .faults
            .contains(&GroundingFault::NoAnswer)
    );

    // A reason that speaks to the model gives the user only its head.
    let tools = TestTools::new("math").with(TestTool::new(
        "divide",
        ToolBehaviour::Fail("division by zero: this tool can never succeed (do not retry it)".into()),
    ));
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("divide", json!({"number": 17}))]))
        .respond(response::text("```json\n```"))
        .respond(response::text("```json\n```"));
    let result = run_on(
        common::agent_with(&client, tools).grounding(Grounding::On),
        "Divide 17 by the secret number",
    )
    .await;
    assert_eq!(result.response, "I could not look that up: division by zero.");
}

#[tokio::test]
async fn an_answer_leaving_out_some_results_gets_what_they_say_added() {
    let reply = |value: serde_json::Value| ToolBehaviour::Reply(ToolOutput::Json(value));
    let tools = TestTools::new("trip")
        .with(TestTool::new(
            "get_weather",
            reply(serde_json::from_str(PARIS).unwrap_or_default()),
        ))
        .with(TestTool::new(
            "get_flight",
            reply(json!({"summary": "Cheapest flight from New York to Paris: $381 (Meridian Air)", "price": 381})),
        ))
        .with(TestTool::new(
            "convert",
            reply(json!({"summary": "1000 USD = 920.00 EUR", "converted": 920.0})),
        ));
    let calls = || {
        response::tool_calls([
            ("get_weather", json!({"city": "Paris"})),
            ("get_flight", json!({"from": "NYC", "to": "Paris"})),
            ("convert", json!({"amount": 1000})),
        ])
    };
    let ask = |client: &ScriptedClient| {
        run_on(
            common::agent_with(client, tools.clone()).grounding(Grounding::On),
            "NYC to Paris: weather, flight and 1000 USD in EUR?",
        )
    };
    let client = ScriptedClient::new()
        .respond(calls())
        .respond(response::text("Paris, France: 18.4 °C with light rain."));
    let result = ask(&client).await;
    assert_eq!(
        result.response,
        "Paris, France: 18.4 °C with light rain.\n\n\
         Cheapest flight from New York to Paris: $381 (Meridian Air)\n1000 USD = 920.00 EUR"
    );
    assert_eq!(client.requests().len(), 2, "no model call for it");
    assert_eq!(
        result.messages.last(),
        Some(&Message::assistant(result.response.clone())),
        "the history holds what the user was told"
    );
    let grounding = result.grounding.expect("recorded");
    assert_eq!(grounding.faults, [GroundingFault::OmittedResults]);
    assert_eq!(grounding.actions, [GroundingAction::Completed]);

    // An answer that uses every result stands as written.
    let whole = "18.4 °C and light rain in Paris; the Meridian Air flight is $381; 1000 USD is 920 EUR.";
    let client = ScriptedClient::new().respond(calls()).respond(response::text(whole));
    let result = ask(&client).await;
    assert_eq!(result.response, whole);
    assert!(result.grounding.expect("recorded").actions.is_empty());
}

#[tokio::test]
async fn off_answers_pass_unchecked_and_no_record_is_written() {
    let client = ScriptedClient::new().respond(response::text("Paris is 22 degrees."));
    let result = run(&client, Grounding::Off, "Paris weather?").await;
    assert_eq!(result.response, "Paris is 22 degrees.");
    assert_eq!(result.grounding, None);
    assert_eq!(client.requests().len(), 1);
}

#[tokio::test]
async fn right_answers_without_tools_are_not_false_alarms() {
    for (question, answer) in [
        (
            "Hi there! What can you do?",
            "I can look up weather and flights, and do sums.",
        ),
        ("What is 17 * 23?", "17 * 23 = 391."),
        (
            "I want to see Rome, Oslo and Lima.",
            "Those are 3 cities; shall I check the weather in each?",
        ),
        ("My budget is 1,200 EUR for June 3.", "Noted: 1200 EUR for 3 June."),
    ] {
        let client = ScriptedClient::new().respond(response::text(answer));
        let result = run(&client, Grounding::On, question).await;
        assert_eq!(result.response, answer, "{question}");
        let grounding = result.grounding.expect("recorded");
        assert!(
            grounding.checked && grounding.faults.is_empty(),
            "{question}: {grounding:?}"
        );
    }
}

#[tokio::test]
async fn each_re_ask_is_reported_as_an_event() {
    let client = ScriptedClient::new()
        .respond(response::text("Paris is at 22 °C."))
        .respond(weather_call())
        .respond(response::text("Paris: 18.4 °C."));
    let events: Vec<AgentEvent> = common::agent_with(&client, travel_tools())
        .grounding(Grounding::On)
        .build()
        .run("Paris?")
        .stream()
        .collect()
        .await;
    let reports: Vec<&AgentEvent> = events
        .iter()
        .filter(|event| matches!(event, AgentEvent::AnswerUngrounded { .. }))
        .collect();
    assert_eq!(
        reports,
        [&AgentEvent::AnswerUngrounded {
            iteration: 1,
            faults: vec![GroundingFault::UngroundedFigures],
            ungrounded: vec!["22 °C".to_owned()],
            action: GroundingAction::ReaskedForCall,
        }]
    );
    let Some(AgentEvent::RunFinished { result }) = events.last() else {
        panic!("ends with the result");
    };
    assert_eq!(result.response, "Paris: 18.4 °C.");
}

#[tokio::test]
async fn a_run_saved_during_a_restated_re_ask_resumes_without_the_restatement() {
    let unused = ScriptedClient::new();
    let agent = common::agent_with(&unused, travel_tools())
        .grounding(Grounding::On)
        .build();
    // Stepped by hand up to the restated re-ask, then saved and read back.
    let mut state = agent.start(Vec::new(), "Paris?");
    assert!(matches!(state.next_step(), Step::CallModel(_)));
    state
        .on_model_response(weather_call(), Duration::ZERO)
        .expect("a reply");
    assert!(matches!(state.next_step(), Step::RunTools(_)));
    let outcome = ToolOutcome {
        content: PARIS.to_owned(),
        is_error: false,
        duration: Duration::ZERO,
        cached: false,
        delegated_usage: None,
        attachments: Vec::new(),
    };
    state.on_tool_results(&[outcome]).expect("results");
    state
        .on_model_response(response::text("Paris: 25 °C."), Duration::ZERO)
        .expect("the faulty answer");
    assert!(!state.is_finished(), "the model is asked again");
    let saved = serde_json::to_string(&state).expect("the state serialises");
    let restored: RunState = serde_json::from_str(&saved).expect("and reads back");

    let client = ScriptedClient::new().respond(response::text("Paris: 18.4 °C."));
    let resumed = common::agent_with(&client, travel_tools())
        .grounding(Grounding::On)
        .build()
        .resume(restored)
        .await
        .expect("resumes");
    assert_eq!(resumed.response, "Paris: 18.4 °C.");
    let sent = client.requests();
    assert!(matches!(sent[0].messages.last(), Some(Message::User { content, .. }) if content.contains("18.4 °C")));
    assert!(
        !user_texts(&resumed)
            .iter()
            .any(|text| text.contains("only these tool results"))
    );
    assert_eq!(
        resumed.grounding.map(|record| record.actions),
        Some(vec![GroundingAction::ReaskedWithResults])
    );
}
