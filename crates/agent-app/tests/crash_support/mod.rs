//! The crash-kill campaigns' model, pages, kill points and checks
//! (tests/crash_kill.rs).
#![allow(dead_code)]

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use agent_core::{ConversationStore, Message};
use serde_json::{Value, json};
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::cli_support::{completion, page, sse};

/// How long the model takes to answer, and a page to arrive: the turn
/// spends its time in both, so kills land in model calls, tool calls and
/// the stores' writes between them.
const MODEL_DELAY: Duration = Duration::from_millis(40);
const PAGE_DELAY: Duration = Duration::from_millis(80);

/// The OpenAI-compatible model of the campaigns: for the prompt of turn N
/// it asks for pages `Na` and `Nb` at once, and once their results are in,
/// answers "answer to turn N". Plain or streamed, as asked. `pages` is
/// the base URL of the pages.
pub struct Model {
    pages: String,
}

impl Model {
    /// The prompt of turn `turn`.
    pub fn prompt(turn: u64) -> String {
        format!("turn {turn}: read pages {turn}a and {turn}b")
    }

    /// The answer the model gives to turn `turn`.
    pub fn answer(turn: u64) -> String {
        format!("answer to turn {turn}")
    }

    /// What page `turn` `part` (a or b) says.
    pub fn page_text(turn: u64, part: char) -> String {
        format!("contents of page {turn}{part}")
    }

    /// Turn N, read back from its prompt.
    pub fn turn_of(prompt: &str) -> Option<u64> {
        prompt.strip_prefix("turn ")?.split(':').next()?.parse().ok()
    }
}

impl Respond for Model {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let turn = messages
            .iter()
            .rev()
            .filter(|message| message["role"] == "user")
            .find_map(|message| message["content"].as_str().and_then(Model::turn_of))
            .unwrap_or(u64::MAX);
        let streamed = body["stream"] == json!(true);
        let answered = messages.last().is_some_and(|message| message["role"] == "tool");
        let template = if answered {
            let text = Model::answer(turn);
            if streamed {
                sse(&json!({"content": text}), "stop", (120, 6))
            } else {
                completion(&json!({"role": "assistant", "content": text}), "stop", (120, 6))
            }
        } else {
            let call = |index: usize, part: char| {
                let url = format!("{}/page/{turn}/{part}", self.pages);
                json!({"index": index, "id": format!("call_{turn}_{part}"), "type": "function",
                       "function": {"name": "fetch_url", "arguments": json!({"url": url}).to_string()}})
            };
            let calls = json!([call(0, 'a'), call(1, 'b')]);
            if streamed {
                sse(&json!({"content": null, "tool_calls": calls}), "tool_calls", (100, 30))
            } else {
                completion(
                    &json!({"role": "assistant", "content": null, "tool_calls": calls}),
                    "tool_calls",
                    (100, 30),
                )
            }
        };
        template.set_delay(MODEL_DELAY)
    }
}

/// The pages: `/page/N/P` says [`Model::page_text`].
struct Pages;

impl Respond for Pages {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut parts = request.url.path().trim_start_matches("/page/").split('/');
        let turn = parts.next().unwrap_or_default().parse().unwrap_or(u64::MAX);
        let part = parts.next().and_then(|part| part.chars().next()).unwrap_or('?');
        page(&Model::page_text(turn, part)).set_delay(PAGE_DELAY)
    }
}

/// Mounts the model and the pages on `server`.
pub async fn mount(server: &MockServer) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Model { pages: server.uri() })
        .mount(server)
        .await;
    Mock::given(method("GET"))
        .and(path_regex(r"^/page/\d+/[ab]$"))
        .respond_with(Pages)
        .mount(server)
        .await;
}

/// How many times each page was asked for so far.
pub async fn page_requests(server: &MockServer) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for request in server.received_requests().await.unwrap_or_default() {
        if request.url.path().starts_with("/page/") {
            *counts.entry(request.url.path().to_owned()).or_default() += 1;
        }
    }
    counts
}

/// When kill `seed` strikes, after the child starts: a point of
/// `0..1.25 × span` drawn from the seed (splitmix64), so the campaign is
/// the same on every run and some kills fall after the turn ended.
pub fn kill_delay(seed: u64, span: Duration) -> Duration {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let permille = z % 1250;
    span * u32::try_from(permille).unwrap_or(0) / 1000
}

/// The store's name of the server session `id` (`TAG.ID`).
pub async fn stored_name(store: &dyn ConversationStore, id: &str) -> String {
    let suffix = format!(".{id}");
    store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|meta| meta.name)
        .find(|name| name.ends_with(&suffix))
        .unwrap_or_else(|| panic!("the store has no session {id}"))
}

/// Where a kill landed, as the store tells it afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Landing {
    /// Nothing of the turn was saved yet: the turn is not there.
    BeforeACheckpoint,
    /// The run had saved a checkpoint: resumed from it.
    WithACheckpoint,
    /// The turn was stored whole before the kill.
    AfterTheTurn,
}

/// One campaign's expectations and figures.
pub struct Campaign {
    store: &'static str,
    span: Duration,
    /// The turns stored so far, in order.
    stored: Vec<u64>,
    outcomes: Vec<(u64, Duration, Result<Landing, String>)>,
}

impl Campaign {
    /// A campaign on `store` whose turns take about `span`.
    pub fn new(store: &'static str, span: Duration) -> Self {
        Self {
            store,
            span,
            stored: Vec::new(),
            outcomes: Vec::new(),
        }
    }

    /// Checks what `store` holds of conversation `name` after the kill of
    /// turn `turn`: every turn whole, nothing repaired, the turns stored
    /// before in order and each once, then `turn` at most once, never both
    /// stored and checkpointed. `Ok(true)` when `turn` is stored.
    pub async fn check_store(
        &mut self,
        store: &dyn ConversationStore,
        name: &str,
        turn: u64,
        has_checkpoint: bool,
    ) -> Result<bool, String> {
        let conversation = store
            .load(name)
            .await
            .map_err(|error| format!("the conversation does not load: {error}"))?
            .ok_or_else(|| format!("the conversation `{name}` is gone"))?;
        if conversation.repairs > 0 {
            return Err(format!(
                "{} messages were repaired on load: a turn was half-written",
                conversation.repairs
            ));
        }
        let turns = whole_turns(&conversation.messages)?;
        let numbers: Vec<u64> = turns.iter().map(|whole| whole.turn).collect();
        let earlier = numbers.get(..self.stored.len());
        if earlier != Some(&self.stored[..]) {
            let expected = std::mem::replace(&mut self.stored, numbers.clone());
            return Err(format!("stored turns {numbers:?}, expected {expected:?} first"));
        }
        let later = &turns[self.stored.len()..];
        match later {
            [] => Ok(false),
            [whole] if whole.turn == turn => {
                if has_checkpoint {
                    return Err(format!(
                        "turn {turn} is stored and has a checkpoint that would run it again"
                    ));
                }
                self.stored.push(turn);
                whole.check_contents()?;
                Ok(true)
            }
            other => {
                let expected = std::mem::replace(&mut self.stored, numbers.clone());
                Err(format!(
                    "after turns {expected:?} the store holds turns {:?}",
                    other.iter().map(|whole| whole.turn).collect::<Vec<_>>()
                ))
            }
        }
    }

    /// What the store tells after the kill of turn `turn` of conversation
    /// `name`: the store is checked ([`check_store`](Self::check_store)),
    /// and when the run left a checkpoint, `resume` goes on with it (its
    /// record, or why it failed) and the resumed turn is checked.
    pub async fn after_kill<F, R>(
        &mut self,
        store: &dyn ConversationStore,
        name: &str,
        turn: u64,
        server: &MockServer,
        resume: F,
    ) -> Result<Landing, String>
    where
        F: FnOnce() -> R,
        R: Future<Output = Result<Value, String>>,
    {
        let checkpoint = store
            .checkpoint(name)
            .await
            .map_err(|error| format!("the checkpoint does not load: {error}"))?;
        let stored = self.check_store(store, name, turn, checkpoint.is_some()).await?;
        let Some(checkpoint) = checkpoint else {
            return Ok(if stored {
                Landing::AfterTheTurn
            } else {
                Landing::BeforeACheckpoint
            });
        };
        let fetched = page_requests(server).await;
        let record = resume().await?;
        self.check_resumed(store, name, turn, &checkpoint, &record, &fetched, server)
            .await?;
        Ok(Landing::WithACheckpoint)
    }

    /// Checks a resumed turn: the run completed with the turn's answer, no
    /// call whose result `checkpoint` held was run again (`fetched`: the
    /// page requests before the resume), and the store holds the turn
    /// whole with no checkpoint left.
    #[allow(clippy::too_many_arguments)]
    async fn check_resumed(
        &mut self,
        store: &dyn ConversationStore,
        name: &str,
        turn: u64,
        checkpoint: &Value,
        record: &Value,
        fetched: &HashMap<String, usize>,
        server: &MockServer,
    ) -> Result<(), String> {
        if record["stop_reason"] != "completed" || record["response"] != json!(Model::answer(turn)) {
            return Err(format!("the resumed run did not complete with its answer: {record}"));
        }
        let saved = checkpoint.to_string();
        let after = page_requests(server).await;
        for part in ['a', 'b'] {
            let page = format!("/page/{turn}/{part}");
            let (before, now) = (
                fetched.get(&page).copied().unwrap_or(0),
                after.get(&page).copied().unwrap_or(0),
            );
            if saved.contains(&Model::page_text(turn, part)) && now != before {
                return Err(format!(
                    "{page}'s result was in the checkpoint, yet the resumed run fetched it again"
                ));
            }
        }
        let left = store
            .checkpoint(name)
            .await
            .map_err(|error| format!("the checkpoint does not load: {error}"))?;
        if left.is_some() {
            return Err("the resumed turn left its checkpoint behind".to_owned());
        }
        if !self.check_store(store, name, turn, false).await? {
            return Err(format!("the resumed turn {turn} is not stored"));
        }
        Ok(())
    }

    /// Keeps the outcome of the kill of turn `turn`, `delay` after start.
    pub fn record(&mut self, turn: u64, delay: Duration, outcome: Result<Landing, String>) {
        self.outcomes.push((turn, delay, outcome));
    }

    /// Prints the figures and fails unless every kill was survived.
    pub fn report_and_assert(&self, attempted: u64) {
        let survived = self.outcomes.iter().filter(|(_, _, outcome)| outcome.is_ok()).count();
        let landed = |landing: Landing| {
            self.outcomes
                .iter()
                .filter(|(_, _, outcome)| outcome.as_ref().is_ok_and(|l| *l == landing))
                .count()
        };
        println!(
            "crash-kill {}: kills survived {survived}/{attempted} (a turn takes {} ms; landed before the first \
             checkpoint {}, with a checkpoint then resumed {}, after the turn was stored {})",
            self.store,
            self.span.as_millis(),
            landed(Landing::BeforeACheckpoint),
            landed(Landing::WithACheckpoint),
            landed(Landing::AfterTheTurn),
        );
        let failures: Vec<String> = self
            .outcomes
            .iter()
            .filter_map(|(turn, delay, outcome)| {
                outcome
                    .as_ref()
                    .err()
                    .map(|error| format!("kill {turn} at {} ms: {error}", delay.as_millis()))
            })
            .collect();
        assert!(failures.is_empty(), "{}:\n{}", self.store, failures.join("\n"));
        assert_eq!(self.outcomes.len() as u64, attempted);
    }
}

/// One stored turn, read back whole.
#[derive(Debug)]
pub struct WholeTurn {
    turn: u64,
    results: Vec<String>,
    answer: String,
}

impl WholeTurn {
    /// The turn's results are its two pages and its answer the model's.
    fn check_contents(&self) -> Result<(), String> {
        let pages = ['a', 'b'].map(|part| Model::page_text(self.turn, part));
        let read = pages
            .iter()
            .all(|text| self.results.iter().any(|result| result.contains(text.as_str())));
        if !read || self.answer != Model::answer(self.turn) {
            return Err(format!("turn {} is stored with other contents: {self:?}", self.turn));
        }
        Ok(())
    }
}

/// Reads `messages` as whole turns: a prompt, then replies whose every call
/// is answered right after it, then a final answer with no call.
pub fn whole_turns(messages: &[Message]) -> Result<Vec<WholeTurn>, String> {
    let mut turns = Vec::new();
    let mut rest = messages;
    while let Some((first, after)) = rest.split_first() {
        rest = after;
        let prompt = match first {
            Message::System { .. } => continue,
            Message::User { content, .. } => content,
            other => return Err(format!("a {other:?} starts no turn")),
        };
        let turn = Model::turn_of(prompt).ok_or_else(|| format!("`{prompt}` is no turn's prompt"))?;
        let mut results = Vec::new();
        let answer = loop {
            let Some((Message::Assistant(reply), after)) = rest.split_first() else {
                return Err(format!(
                    "turn {turn} has no final answer: it ends with {:?}",
                    rest.first()
                ));
            };
            rest = after;
            if reply.tool_calls.is_empty() {
                break reply.content.clone();
            }
            for _ in &reply.tool_calls {
                let Some((Message::Tool(result), after)) = rest.split_first() else {
                    return Err(format!("turn {turn}: a call has no result"));
                };
                if !reply.tool_calls.iter().any(|call| call.id == result.call_id) {
                    return Err(format!("turn {turn}: the result {} answers no call", result.call_id));
                }
                results.push(result.content.clone());
                rest = after;
            }
        };
        turns.push(WholeTurn { turn, results, answer });
    }
    Ok(turns)
}
