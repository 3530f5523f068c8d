//! The web chat page (`GET /`) in a real browser: headless Chromium driven
//! through chromedriver (WebDriver) with fantoccini, against the server on
//! a real socket with a scripted agent that calls a tool, then answers; and
//! with one whose tool needs the user's approval, given on the page.
//! The browser tests run one at a time.
//!
//! Skipped, with a note, when `/usr/bin/chromium` or `/usr/bin/chromedriver`
//! is missing (Debian's `chromium` and `chromium-driver`), unless
//! `AGENTRY_REQUIRE_BROWSER` is set: then it fails, naming what is missing.
//! The screenshot it checks is kept at `$CARGO_TARGET_TMPDIR/chat-page.png`;
//! the page waiting for approval at `approval-page.png`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::ToolContext;
use agent_runner::Agent;
use agent_server::{ApiKeys, Server, hash_key};
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use agent_tools::schemars::JsonSchema;
use agent_tools::{NoArgs, TypedTool};
use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde::Deserialize;
use serde_json::json;

const KEY: &str = "browser-test-key";
const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const ANSWER: &str = "It is sunny in Paris, 21 °C.";
const WEATHER: &str = "Sunny, 21 °C";
/// How long the page may take to show something before the test fails.
const PATIENCE: Duration = Duration::from_secs(20);
const BOOKED: &str = "Seat 12A is booked.";

/// One browser at a time: the machine may be small.
static BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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
    let agent = Agent::builder(Arc::new(client)).tool(weather).tool(wait).build();
    let keys = ApiKeys::from_hashes([hash_key(KEY)]).unwrap_or_else(|e| panic!("{e}"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let address = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(
        Server::new(agent)
            .api_keys(keys)
            .serve(listener, std::future::pending()),
    );
    format!("http://{address}")
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

/// Whether the browser is here: `None` (after a note) when the test should
/// skip; a panic naming what is missing when `AGENTRY_REQUIRE_BROWSER` is set.
fn browser_installed() -> Option<()> {
    let missing: Vec<&str> = [CHROMIUM, CHROMEDRIVER]
        .into_iter()
        .filter(|path| !Path::new(path).is_file())
        .collect();
    if missing.is_empty() {
        return Some(());
    }
    let reason = format!(
        "the browser test needs {} (apt-get install chromium chromium-driver)",
        missing.join(" and ")
    );
    assert!(std::env::var_os("AGENTRY_REQUIRE_BROWSER").is_none(), "{reason}");
    agent_testing::report_skip!("{reason}");
    None
}

/// chromedriver in its own process group, with a fresh Chromium profile;
/// dropping it kills the group (chromedriver and every Chromium process it
/// started) and removes the profile, so a failing test leaves nothing behind.
struct Chromedriver {
    child: Child,
    port: u16,
    profile: PathBuf,
    log: PathBuf,
}

impl Chromedriver {
    fn start() -> Self {
        use std::os::unix::process::CommandExt;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .unwrap_or_else(|e| panic!("{e}"))
            .port();
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let profile = tmp.join(format!("chromium-profile-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&profile).unwrap_or_else(|e| panic!("{e}"));
        let log = tmp.join("chromedriver.log");
        let output = std::fs::File::create(&log).unwrap_or_else(|e| panic!("{e}"));
        let errors = output.try_clone().unwrap_or_else(|e| panic!("{e}"));
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(errors)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {CHROMEDRIVER}: {e}"));
        Self {
            child,
            port,
            profile,
            log,
        }
    }

    /// A WebDriver session of headless Chromium, once chromedriver answers.
    async fn connect(&mut self) -> Client {
        let url = format!("http://127.0.0.1:{}", self.port);
        let started = Instant::now();
        loop {
            let status = reqwest::get(format!("{url}/status")).await;
            let ready = match status {
                Ok(status) => status.json::<serde_json::Value>().await.ok(),
                Err(_) => None,
            };
            if ready.is_some_and(|status| status["value"]["ready"] == true) {
                break;
            }
            if let Ok(Some(exit)) = self.child.try_wait() {
                panic!("chromedriver exited ({exit}); see {}", self.log.display());
            }
            assert!(
                started.elapsed() < PATIENCE,
                "chromedriver did not start; see {}",
                self.log.display()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut args: Vec<String> = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,900",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        args.push(format!("--user-data-dir={}", self.profile.display()));
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
        });
        let serde_json::Value::Object(capabilities) = capabilities else {
            unreachable!("an object")
        };
        ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&url)
            .await
            .unwrap_or_else(|e| panic!("no Chromium session ({e}); see {}", self.log.display()))
    }
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        // The whole group: Chromium's processes are chromedriver's children.
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// The page's status line and text, to say what it showed when a wait failed.
async fn page_text(page: &Client) -> String {
    let script =
        "return 'status: ' + document.getElementById('status').textContent + '\\npage: ' + document.body.innerText";
    match page.execute(script, Vec::new()).await {
        Ok(text) => text.as_str().unwrap_or_default().to_owned(),
        Err(error) => format!("(the page cannot be read: {error})"),
    }
}

/// The first element matching `css` whose text contains every one of
/// `wanted`, polled for until [`PATIENCE`] runs out.
async fn wait_for(page: &Client, css: &str, wanted: &[&str]) -> Element {
    let started = Instant::now();
    loop {
        for element in page.find_all(Locator::Css(css)).await.unwrap_or_default() {
            let text = element.text().await.unwrap_or_default();
            if wanted.iter().all(|part| text.contains(part)) {
                return element;
            }
        }
        assert!(
            started.elapsed() <= PATIENCE,
            "no `{css}` with {wanted:?} after {PATIENCE:?}; {}",
            page_text(page).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn click(page: &Client, css: &str) {
    let element = page
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"));
    element.click().await.unwrap_or_else(|e| panic!("{css}: {e}"));
}

async fn type_into(page: &Client, css: &str, text: &str) {
    let element = page
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"));
    element.clear().await.unwrap_or_else(|e| panic!("{css}: {e}"));
    element.send_keys(text).await.unwrap_or_else(|e| panic!("{css}: {e}"));
}

/// A decoded screenshot: RGB(A) rows, and device pixels per CSS pixel.
struct Screenshot {
    width: usize,
    height: usize,
    channels: usize,
    pixels: Vec<u8>,
    scale: f64,
}

impl Screenshot {
    fn decode(png_bytes: &[u8], css_width: f64) -> Self {
        let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = decoder.read_info().unwrap_or_else(|e| panic!("{e}"));
        let mut pixels = vec![0; reader.output_buffer_size().unwrap_or_else(|| panic!("too large"))];
        let info = reader.next_frame(&mut pixels).unwrap_or_else(|e| panic!("{e}"));
        pixels.truncate(info.buffer_size());
        let (width, height) = (info.width as usize, info.height as usize);
        Self {
            width,
            height,
            channels: info.line_size / width,
            pixels,
            scale: width as f64 / css_width,
        }
    }

    /// The pixels inside the viewport rectangle `(x, y, width, height)` (CSS
    /// pixels, `inset` inside its edges, so borders do not count) that are
    /// clearly not the rectangle's most common colour: what was painted on
    /// its background, text above all.
    fn ink(&self, (x, y, width, height): (f64, f64, f64, f64), inset: f64) -> usize {
        let to_device = |css: f64| (css * self.scale).round().max(0.0) as usize;
        let (left, top) = (to_device(x + inset), to_device(y + inset));
        let right = to_device(x + width - inset).min(self.width);
        let bottom = to_device(y + height - inset).min(self.height);
        assert!(
            left < right && top < bottom,
            "({x}, {y}, {width}, {height}) is off the screenshot"
        );
        let colour = |column: usize, row: usize| {
            let at = (row * self.width + column) * self.channels;
            [self.pixels[at], self.pixels[at + 1], self.pixels[at + 2]]
        };
        let mut counts: HashMap<[u8; 3], usize> = HashMap::new();
        for row in top..bottom {
            for column in left..right {
                *counts.entry(colour(column, row)).or_default() += 1;
            }
        }
        let background = counts
            .iter()
            .max_by_key(|(_, count)| **count)
            .map(|(c, _)| *c)
            .unwrap_or_default();
        let differs = |c: [u8; 3]| (0..3).map(|i| u32::from(c[i].abs_diff(background[i]))).sum::<u32>() > 90;
        counts
            .iter()
            .filter(|(c, _)| differs(**c))
            .map(|(_, count)| count)
            .sum()
    }
}

/// The element's rectangle in the viewport (WebDriver's is the document's).
async fn viewport_rect(page: &Client, element: &Element) -> (f64, f64, f64, f64) {
    let (x, y, width, height) = element.rectangle().await.unwrap_or_else(|e| panic!("{e}"));
    let scroll = page
        .execute("return [window.scrollX, window.scrollY]", Vec::new())
        .await;
    let scroll = scroll.unwrap_or_else(|e| panic!("{e}"));
    (
        x - scroll[0].as_f64().unwrap_or(0.0),
        y - scroll[1].as_f64().unwrap_or(0.0),
        width,
        height,
    )
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
    let keys = ApiKeys::from_hashes([hash_key(KEY)]).unwrap_or_else(|e| panic!("{e}"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let address = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(
        Server::new(agent)
            .api_keys(keys)
            .serve(listener, std::future::pending()),
    );
    (format!("http://{address}"), calls)
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
    let png_bytes = page.screenshot().await.unwrap_or_else(|e| panic!("{e}"));
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("approval-page.png");
    std::fs::write(&path, &png_bytes).unwrap_or_else(|e| panic!("{e}"));
    println!("screenshot: {}", path.display());

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
    let png_bytes = page.screenshot().await.unwrap_or_else(|e| panic!("{e}"));
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("chat-page.png");
    std::fs::write(&path, &png_bytes).unwrap_or_else(|e| panic!("{e}"));
    println!("screenshot: {}", path.display());
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
