//! The limits a query runs under: one expensive function call must not
//! outlive the time limit or a cancellation, values and patterns are
//! bounded, and long values are cut before they reach the model.
//!
//! Tests that could hang on a regression run on their own runtime, bounded
//! by [`run`], which leaves a stuck blocking thread behind instead of
//! waiting for it.

#![allow(clippy::unwrap_used)]

mod common;

use std::future::Future;
use std::time::{Duration, Instant};

use agent_core::{ToolContext, ToolError};
use agent_tools_sql::SqlTools;
use common::{Fixture, query};
use serde_json::json;

/// Runs `future` on a fresh current-thread runtime with at most
/// `blocking_threads` blocking threads, failing the test after 20 s.
fn run<F: Future>(blocking_threads: usize, future: F) -> F::Output {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(blocking_threads)
        .build()
        .unwrap();
    let outcome = runtime.block_on(async { tokio::time::timeout(Duration::from_secs(20), future).await });
    runtime.shutdown_background();
    outcome.unwrap_or_else(|_| panic!("the test did not finish within 20 s"))
}

/// SQL for a text of `count` copies of the ASCII character `c`.
fn repeat(c: char, count: usize) -> String {
    format!("replace(hex(zeroblob({})), '0', '{c}')", count / 2)
}

/// A query that calls `condition` (which may use the row number `i`) on
/// every row of an endless recursive CTE.
fn every_row(condition: &str) -> String {
    format!("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n WHERE {condition}")
}

/// Function calls that each cost minutes in SQLite's own implementation
/// (the work grows with the product of the arguments' lengths), on values
/// within the length limit.
fn expensive_calls() -> Vec<(&'static str, String)> {
    let big = 1_048_560;
    vec![
        (
            "ltrim",
            every_row(&format!(
                "ltrim({} || i, {} || 'a') = ''",
                repeat('a', 524_288),
                repeat('b', 262_144)
            )),
        ),
        (
            "rtrim",
            every_row(&format!(
                "rtrim(i || {}, {} || 'a') = ''",
                repeat('a', 524_288),
                repeat('b', 262_144)
            )),
        ),
        (
            "instr",
            every_row(&format!(
                "instr({} || i, {} || 'b') > 0",
                repeat('a', big),
                repeat('a', big / 2)
            )),
        ),
        (
            "replace",
            every_row(&format!(
                "length(replace({} || i, {} || 'b', 'x')) = 0",
                repeat('a', big),
                repeat('a', big / 2)
            )),
        ),
    ]
}

#[test]
fn one_expensive_function_call_ends_at_the_time_limit() {
    let fixture = Fixture::new();
    let tools = SqlTools::open(fixture.config().with_timeout_ms(200)).unwrap();
    for (name, sql) in expensive_calls() {
        let (outcome, elapsed) = run(4, async {
            let started = Instant::now();
            let outcome = tools.query(&sql, 10, &ToolContext::new()).await;
            (outcome, started.elapsed())
        });
        let error = outcome.unwrap_err().to_string();
        assert!(
            error.starts_with("the query was stopped after 200 ms, the time limit"),
            "{name}: {error}"
        );
        assert!(elapsed < Duration::from_secs(5), "{name}: took {elapsed:?}");
    }
    fixture.assert_unchanged();
}

#[test]
fn cancelling_ends_an_expensive_call_and_frees_its_thread() {
    let fixture = Fixture::new();
    let tools = SqlTools::open(fixture.config().with_timeout_ms(60_000)).unwrap();
    let (_, sql) = expensive_calls().swap_remove(0);
    // One blocking thread: the second query runs only once the first one's
    // thread is free again.
    let (first, cancelled_after, second, elapsed) = run(1, async {
        let context = ToolContext::new();
        let cancel = context.cancel.clone();
        let started = Instant::now();
        let running = {
            let tools = tools.clone();
            tokio::spawn(async move { tools.query(&sql, 10, &context).await })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
        let first = running.await.unwrap();
        let cancelled_after = started.elapsed();
        let second = tools
            .query("SELECT count(*) FROM orders", 10, &ToolContext::new())
            .await;
        (first, cancelled_after, second, started.elapsed())
    });
    assert_eq!(first.unwrap_err(), ToolError::Cancelled);
    assert!(cancelled_after < Duration::from_secs(5), "{cancelled_after:?}");
    assert_eq!(second.unwrap().rows, vec![vec![json!(250)]]);
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    fixture.assert_unchanged();
}

#[test]
fn huge_values_and_patterns_are_refused_at_once() {
    let fixture = Fixture::new();
    let tools = SqlTools::open(fixture.config().with_timeout_ms(60_000)).unwrap();
    let cases = [
        (
            format!(
                "SELECT instr({} || 'x', {} || 'b')",
                repeat('a', 8_000_000),
                repeat('a', 4_000_000)
            ),
            &["string or blob too big", "1048576 bytes"][..],
        ),
        (
            "SELECT zeroblob(2000000)".to_owned(),
            &["string or blob too big", "1048576 bytes"][..],
        ),
        (
            format!(
                "SELECT {} LIKE '%' || {} || 'b'",
                repeat('a', 1_000_000),
                repeat('a', 40_000)
            ),
            &["LIKE or GLOB pattern too complex", "bytes"][..],
        ),
        (
            format!(
                "SELECT {} GLOB '*' || {} || 'b'",
                repeat('a', 1_000_000),
                repeat('a', 40_000)
            ),
            &["LIKE or GLOB pattern too complex", "bytes"][..],
        ),
        (
            format!("SELECT json_extract('[1]'{})", ", '$[0]'".repeat(200)),
            &["too many arguments on function json_extract", "at most 127 arguments"][..],
        ),
        (
            format!(
                "SELECT unhex({}, {} || 'z')",
                repeat('z', 524_288),
                repeat('y', 262_144)
            ),
            &["unhex(X, Y)", "too expensive"][..],
        ),
    ];
    for (sql, expected) in cases {
        let (outcome, elapsed) = run(4, async {
            let started = Instant::now();
            let outcome = tools.query(&sql, 10, &ToolContext::new()).await;
            (outcome, started.elapsed())
        });
        let error = outcome.unwrap_err().to_string();
        for part in expected {
            assert!(error.contains(part), "{}...: {error:?} lacks {part:?}", &sql[..60]);
        }
        assert!(elapsed < Duration::from_secs(5), "{}...: took {elapsed:?}", &sql[..60]);
    }
    fixture.assert_unchanged();
}

#[tokio::test]
async fn long_text_values_are_cut_at_a_character_boundary() {
    let fixture = Fixture::new();
    let registry = fixture.registry(fixture.config());
    // 10,000 two-byte characters; 2 + 1,500 three-byte characters, whose
    // 4,096-byte cut would fall inside a character.
    let result = query(
        &registry,
        "SELECT replace(hex(zeroblob(5000)), '0', 'é') AS long, 'ab' || replace(hex(zeroblob(750)), '0', '€') AS odd, \
         'short' AS short, length(replace(hex(zeroblob(5000)), '0', 'é')) AS n",
    )
    .await
    .unwrap();
    let row = &result["rows"][0];
    let long = row[0].as_str().unwrap();
    let marker = "… [text cut: 4096 of 20000 bytes shown]";
    assert_eq!(long.len(), 4096 + marker.len());
    assert!(long.starts_with(&"é".repeat(2048)) && long.ends_with(marker));
    let odd = row[1].as_str().unwrap();
    let marker = "… [text cut: 4094 of 4502 bytes shown]";
    assert_eq!(odd.len(), 4094 + marker.len());
    assert!(odd.starts_with(&format!("ab{}", "€".repeat(1364))) && odd.ends_with(marker));
    assert_eq!(row[2], "short");
    assert_eq!(row[3], 10_000);
    assert_eq!(
        result["notes"],
        json!([
            "column \"long\", \"odd\" holds text longer than 4096 bytes; such values are cut to their first 4096 \
             bytes (at a character boundary) and end with \"… [text cut: N of M bytes shown]\"; use substr() to read \
             the rest"
        ])
    );
    fixture.assert_unchanged();
}

#[tokio::test]
async fn replaced_string_functions_answer_as_sqlite_does() {
    let fixture = Fixture::new();
    let registry = fixture.registry(fixture.config());
    let result = query(
        &registry,
        "SELECT instr('héllo', 'l'), instr(x'00ff10', x'10'), replace(total, '.', ','), replace(note, 'order', 'o'), \
         trim('..x..', '.'), ltrim('ééx', 'é'), rtrim('x  ', ' '), unhex('AB CD', ' '), unhex('AB-CD', ' ') \
         FROM orders WHERE id = 3",
    )
    .await
    .unwrap();
    assert_eq!(
        result["rows"],
        json!([[3, 3, "4,5", "o 3", "x", "x", "x", "q80=", null]])
    );
    fixture.assert_unchanged();
}
