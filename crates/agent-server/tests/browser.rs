//! The web chat page (`GET /`) in a real browser: headless Chromium driven
//! through chromedriver (WebDriver) with fantoccini, against the server on
//! a real socket with a scripted agent that calls a tool, then answers; and
//! with one whose tool needs the user's approval, given on the page.
//! The browser tests run one at a time.
//!
//! Skipped when the browser is missing (see `browser_support`).
//! The screenshot it checks is kept at `$CARGO_TARGET_TMPDIR/chat-page.png`;
//! the page waiting for approval at `approval-page.png`.

mod browser_support;

use std::sync::Arc;
use std::time::Duration;

use agent_core::ToolContext;
use agent_runner::Agent;
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use agent_tools::schemars::JsonSchema;
use agent_tools::{NoArgs, TypedTool};
use browser_support::{
    BROWSER, Chromedriver, KEY, Screenshot, browser_installed, click, page_text, screenshot, serve, type_into,
    viewport_rect, wait_for,
};
use fantoccini::{Client, Locator};
use serde::Deserialize;
use serde_json::json;

const ANSWER: &str = "It is sunny in Paris, 21 °C.";
const WEATHER: &str = "Sunny, 21 °C";
const BOOKED: &str = "Seat 12A is booked.";

/// The weather tool's arguments.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "agent_tools::schemars")]
struct City {
    /// The city.
    city: String,
}

/// Serves, on 127.0.0.1, an agent that asks for the weather in Paris, then
/// answers; at the next turn it calls a tool that waits until the run is
/// cancelled. Answers its base URL; the server lives as long as the test.
async fn start_server() -> String {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("get_weather", json!({"city": "Paris"}))]))
        .respond(response::text(ANSWER))
        .respond(response::tool_calls([("wait_a_while", json!({}))]));
    let weather = TypedTool::new(
        "get_weather",
        "The weather in a city",
        |City { city }: City, _: ToolContext| async move { Ok(if city == "Paris" { WEATHER } else { "Unknown city" }) },
    );
    let wait = TypedTool::new("wait_a_while", "Waits", |_: NoArgs, context: ToolContext| async move {
        tokio::select! {
            () = context.cancel.cancelled() => {}
            () = tokio::time::sleep(Duration::from_secs(60)) => {}
        }
        Ok("waited")
    });
    serve(Agent::builder(Arc::new(client)).tool(weather).tool(wait).build()).await
}

#[tokio::test]
async fn the_page_is_served_without_a_key_with_a_strict_policy() {
    let base = start_server().await;
    let response = reqwest::get(format!("{base}/")).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    let header = |name: &str| {
        let value = response.headers().get(name).and_then(|v| v.to_str().ok());
        value.unwrap_or_default().to_owned()
    };
    assert_eq!(header("content-type"), "text/html; charset=utf-8");
    assert_eq!(header("x-content-type-options"), "nosniff");
    let policy = header("content-security-policy");
    assert!(policy.starts_with("default-src 'none';"), "{policy}");
    assert!(policy.contains("script-src 'sha256-"), "{policy}");
    assert!(policy.contains("connect-src 'self'"), "{policy}");
    let page = response.text().await.unwrap_or_default();
    assert!(page.contains("id=\"api-key\""), "{page}");
}

#[tokio::test]
async fn the_chat_page_streams_a_run_shows_its_session_again_and_stops_a_run() {
    if browser_installed().is_none() {
        return;
    }
    let _browser = BROWSER.lock().await;
    let base = start_server().await;
    let mut driver = Chromedriver::start();
    let page = driver.connect().await;
    let driven = tokio::time::timeout(Duration::from_secs(120), chat(&page, &base)).await;
    let _ = page.close().await;
    driven.unwrap_or_else(|_| panic!("the browser test took over two minutes"));
}

/// Serves an agent whose `book` tool needs the user's approval: it asks to
/// book seat 12A, then answers. Answers its base URL and how many times
/// the tool ran.
async fn start_booking_server() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("book", json!({"seat": "12A"}))]))
        .respond(response::text(BOOKED));
    let book = TestTool::new("book", ToolBehaviour::Reply("booked 12A".into()));
    let calls = book.call_counter();
    let registry = agent_tools::ToolBox::builder()
        .provider(Arc::new(TestTools::new("travel").with(book)))
        .require_approval(["book"])
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let agent = Agent::builder(Arc::new(client)).tools(Arc::new(registry)).build();
    (serve(agent).await, calls)
}

#[tokio::test]
async fn the_chat_page_asks_for_approval_and_shows_the_answer_once_approved() {
    if browser_installed().is_none() {
        return;
    }
    let _browser = BROWSER.lock().await;
    let (base, calls) = start_booking_server().await;
    let mut driver = Chromedriver::start();
    let page = driver.connect().await;
    let driven = tokio::time::timeout(Duration::from_secs(120), approve(&page, &base)).await;
    let _ = page.close().await;
    driven.unwrap_or_else(|_| panic!("the browser test took over two minutes"));
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1, "the tool ran once");
}

/// What a person does: asks to book a seat, sees the call waiting with
/// its arguments, approves it, and reads the answer.
async fn approve(page: &Client, base: &str) {
    page.goto(&format!("{base}/")).await.unwrap_or_else(|e| panic!("{e}"));
    type_into(page, "#api-key", KEY).await;
    click(page, "#new-session").await;
    wait_for(page, "#sessions li.active", &["sess_"]).await;
    type_into(page, "#prompt", "Book seat 12A").await;
    click(page, "#send").await;
    wait_for(
        page,
        ".tool-call.waiting",
        &["book", "12A", "waiting for approval", "Run this call?"],
    )
    .await;
    wait_for(page, "#status", &["waits for your approval of 1 call"]).await;
    let buttons = page.find_all(Locator::Css(".tool-call .approval button")).await;
    let mut labels = Vec::new();
    for button in buttons.unwrap_or_default() {
        labels.push(button.text().await.unwrap_or_default());
    }
    assert_eq!(labels, ["Approve", "Deny"], "{}", page_text(page).await);
    screenshot(page, "approval-page.png").await;

    click(page, ".tool-call .approve").await;
    wait_for(page, ".message.assistant", &[BOOKED]).await;
    wait_for(page, ".tool-call", &["book", "12A", "booked 12A", "done"]).await;
    wait_for(page, ".run-summary", &["completed", "2 iterations", "1 tool call"]).await;
    wait_for(page, "#status", &["Done."]).await;
    let shown = page
        .execute(
            "return [document.querySelectorAll('.tool-call').length, document.querySelectorAll('.approval').length,              document.querySelectorAll('.tool-call.waiting').length]",
            Vec::new(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        shown,
        json!([1, 0, 0]),
        "one card, its buttons gone, not shown twice: {}",
        page_text(page).await
    );
}

/// What a person does: a wrong key, the right one, a new session, a
/// question; then the page again, the session from the list, and a second
/// question stopped while its tool runs.
async fn chat(page: &Client, base: &str) {
    page.goto(&format!("{base}/")).await.unwrap_or_else(|e| panic!("{e}"));
    type_into(page, "#api-key", "not-the-key").await;
    click(page, "#new-session").await;
    wait_for(page, "#status.error", &["API key was refused"]).await;

    type_into(page, "#api-key", KEY).await;
    click(page, "#new-session").await;
    wait_for(page, "#sessions li.active", &["sess_"]).await;
    type_into(page, "#prompt", "Weather in Paris?").await;
    click(page, "#send").await;
    let answer = wait_for(page, ".message.assistant", &[ANSWER]).await;
    let card = wait_for(page, ".tool-call", &["get_weather", "Paris", WEATHER]).await;
    let summary = [
        "completed",
        "2 iterations",
        "1 tool call",
        "20 in / 10 out tokens",
        "cost unknown",
    ];
    wait_for(page, ".run-summary", &summary).await;
    wait_for(page, ".message.user", &["Weather in Paris?"]).await;

    // The stylesheet ran under the policy (its hash matched).
    let border = page
        .execute(
            "return getComputedStyle(arguments[0]).borderLeftWidth",
            vec![serde_json::to_value(&card).unwrap_or_else(|e| panic!("{e}"))],
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(border, "4px", "the page's style was not applied");
    let kept = page
        .execute("return [localStorage.length, location.href]", Vec::new())
        .await;
    let kept = kept.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        kept,
        json!([0, format!("{base}/")]),
        "the key is kept out of localStorage and the URL"
    );

    // What was painted: the answer's and the tool call's text is on screen.
    let png_bytes = screenshot(page, "chat-page.png").await;
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("chat-page.png");
    let css_width = page.execute("return window.innerWidth", Vec::new()).await;
    let css_width = css_width.ok().and_then(|w| w.as_f64()).unwrap_or(1280.0);
    let screenshot = Screenshot::decode(&png_bytes, css_width);
    for (name, element) in [("answer", &answer), ("tool call", &card)] {
        let rect = viewport_rect(page, element).await;
        let ink = screenshot.ink(rect, 6.0);
        println!("{name}: {ink} painted pixels in {rect:?}");
        assert!(
            ink >= 60,
            "the {name} at {rect:?} shows {ink} painted pixels; see {}",
            path.display()
        );
    }
    // The check tells paint from none: the conversation's empty bottom has none.
    let conversation = page.find(Locator::Css("#conversation")).await;
    let conversation = conversation.unwrap_or_else(|e| panic!("{e}"));
    let (x, y, width, height) = viewport_rect(page, &conversation).await;
    let empty = screenshot.ink((x, y + height - 110.0, width, 100.0), 6.0);
    assert_eq!(empty, 0, "the empty part of the conversation is not blank");

    // The page again: the key is still in the tab; the session shows its turn.
    page.refresh().await.unwrap_or_else(|e| panic!("{e}"));
    wait_for(page, "#sessions li", &["1 turn"]).await;
    click(page, "#sessions li").await;
    wait_for(page, ".message.user", &["Weather in Paris?"]).await;
    wait_for(page, ".tool-call", &["get_weather", "Paris", WEATHER]).await;
    wait_for(page, ".message.assistant", &[ANSWER]).await;
    wait_for(page, ".session-summary", &["1 turn", "20 in / 10 out tokens"]).await;

    type_into(page, "#prompt", "Wait for me").await;
    click(page, "#send").await;
    wait_for(page, ".tool-call", &["wait_a_while", "running"]).await;
    click(page, "#stop").await;
    wait_for(page, ".run-summary.stopped", &["cancelled", "1 iteration"]).await;
    wait_for(page, ".tool-call", &["wait_a_while", "no result: cancelled"]).await;
    wait_for(page, "#status.error", &["The run stopped: cancelled"]).await;
}
