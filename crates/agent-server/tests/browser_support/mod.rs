//! The browser harness of the page tests: headless Chromium driven
//! through chromedriver (WebDriver) with fantoccini, one browser at a time,
//! and what a test does with the page (wait for, click, type, screenshots).
//!
//! Skipped, with a note, when `/usr/bin/chromium` or `/usr/bin/chromedriver`
//! is missing (Debian's `chromium` and `chromium-driver`), unless
//! `AGENTRY_REQUIRE_BROWSER` is set: then it fails, naming what is missing.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent_runner::Agent;
use agent_server::{ApiKeys, Server, hash_key};
use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;

pub const KEY: &str = "browser-test-key";

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long the page may take to show something before the test fails.
pub const PATIENCE: Duration = Duration::from_secs(20);
/// One browser at a time: the machine may be small.
pub static BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Whether the browser is here: `None` (after a note) when the test should
/// skip; a panic naming what is missing when `AGENTRY_REQUIRE_BROWSER` is set.
pub fn browser_installed() -> Option<()> {
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
pub struct Chromedriver {
    child: Child,
    port: u16,
    profile: PathBuf,
    log: PathBuf,
}

impl Chromedriver {
    pub fn start() -> Self {
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
    pub async fn connect(&mut self) -> Client {
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
pub async fn page_text(page: &Client) -> String {
    let script =
        "return 'status: ' + document.getElementById('status').textContent + '\\npage: ' + document.body.innerText";
    match page.execute(script, Vec::new()).await {
        Ok(text) => text.as_str().unwrap_or_default().to_owned(),
        Err(error) => format!("(the page cannot be read: {error})"),
    }
}

/// The first element matching `css` whose text contains every one of
/// `wanted`, polled for until [`PATIENCE`] runs out.
pub async fn wait_for(page: &Client, css: &str, wanted: &[&str]) -> Element {
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

pub async fn click(page: &Client, css: &str) {
    let element = page
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"));
    element.click().await.unwrap_or_else(|e| panic!("{css}: {e}"));
}

pub async fn type_into(page: &Client, css: &str, text: &str) {
    let element = page
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"));
    element.clear().await.unwrap_or_else(|e| panic!("{css}: {e}"));
    element.send_keys(text).await.unwrap_or_else(|e| panic!("{css}: {e}"));
}

/// A decoded screenshot: RGB(A) rows, and device pixels per CSS pixel.
pub struct Screenshot {
    width: usize,
    height: usize,
    channels: usize,
    pixels: Vec<u8>,
    scale: f64,
}

impl Screenshot {
    pub fn decode(png_bytes: &[u8], css_width: f64) -> Self {
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
    pub fn ink(&self, (x, y, width, height): (f64, f64, f64, f64), inset: f64) -> usize {
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
pub async fn viewport_rect(page: &Client, element: &Element) -> (f64, f64, f64, f64) {
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

/// Serves `agent` on 127.0.0.1 with [`KEY`], for as long as the test runs;
/// answers its base URL.
pub async fn serve(agent: Agent) -> String {
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

/// Saves a screenshot of the page as `name` in `$CARGO_TARGET_TMPDIR` (and
/// says where); answers its PNG bytes.
pub async fn screenshot(page: &Client, name: &str) -> Vec<u8> {
    let png_bytes = page.screenshot().await.unwrap_or_else(|e| panic!("{e}"));
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, &png_bytes).unwrap_or_else(|e| panic!("{e}"));
    println!("screenshot: {}", path.display());
    png_bytes
}
