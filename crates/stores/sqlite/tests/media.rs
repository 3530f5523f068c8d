//! Media are stored once per content: a 5 MiB image sent in each of 20
//! turns takes 5 MiB in the file, not 100 (nor 133 as base64), and every
//! turn reads it back whole.
#![allow(clippy::unwrap_used)]

use agent_core::{Attachment, ConversationStore, Message, TurnMeta, Usage};
use agent_store_sqlite::SqliteStore;

const MIB: usize = 1024 * 1024;
const FIVE_MIB: i64 = 5 * 1024 * 1024;

/// A 5 MiB "PNG": the signature and header, then zeros (enough for the
/// type to be sniffed; nobody decodes it here).
fn big_image() -> Attachment {
    let mut bytes = agent_testing::media::PNG[..33].to_vec();
    bytes.resize(5 * MIB, 0);
    Attachment::from_bytes(bytes, Some("image/png"), None).unwrap()
}

#[tokio::test]
async fn an_image_sent_in_twenty_turns_is_stored_once_and_read_back_in_each() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = SqliteStore::open(&path).unwrap();
    store.create("screens").await.unwrap();
    let image = big_image();
    for turn in 0..20 {
        let messages = [
            Message::user_with(format!("What changed in screenshot {turn}?"), vec![image.clone()]),
            Message::assistant("Nothing yet."),
        ];
        let delta = TurnMeta::new("openai", "gpt-4o", Usage::new(10, 2), 0.0);
        store.append("screens", &messages, &delta).await.unwrap();
    }

    let conn = rusqlite::Connection::open(&path).unwrap();
    let (count, bytes): (i64, i64) = conn
        .query_row("SELECT count(*), sum(length(data)) FROM media", [], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .unwrap();
    assert_eq!((count, bytes), (1, FIVE_MIB));
    let bodies: i64 = conn
        .query_row("SELECT sum(length(body)) FROM messages", [], |row| row.get(0))
        .unwrap();
    assert!(
        bodies < 20_000,
        "the messages hold references, not the bytes: {bodies} bytes"
    );
    // Everything in the main file (the write-ahead log emptied into it).
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(conn);
    let file = std::fs::metadata(&path).unwrap().len();
    assert!(file < 6 * 1024 * 1024, "the store takes {file} bytes");

    let loaded = store.load("screens").await.unwrap().unwrap();
    let users: Vec<&Message> = loaded.messages.iter().filter(|m| !m.attachments().is_empty()).collect();
    assert_eq!(users.len(), 20);
    assert!(users.iter().all(|message| message.attachments() == [image.clone()]));

    store.delete("screens").await.unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let left: i64 = conn
        .query_row("SELECT count(*) FROM media", [], |row| row.get(0))
        .unwrap();
    assert_eq!(left, 0, "the last conversation using it took it along");
}

#[tokio::test]
async fn two_conversations_share_an_image_until_both_are_gone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = SqliteStore::open(&path).unwrap();
    let image = agent_testing::media::png();
    for name in ["a", "b"] {
        store.create(name).await.unwrap();
        let turn = [
            Message::user_with("Look.", vec![image.clone()]),
            Message::assistant("A pixel."),
        ];
        store.append(name, &turn, &TurnMeta::default()).await.unwrap();
    }
    let media = || {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.query_row("SELECT count(*) FROM media", [], |row| row.get::<_, i64>(0))
            .unwrap()
    };
    assert_eq!(media(), 1);
    store.delete("a").await.unwrap();
    assert_eq!(media(), 1);
    assert_eq!(
        store.load("b").await.unwrap().unwrap().messages[0].attachments(),
        [image]
    );
    store.delete("b").await.unwrap();
    assert_eq!(media(), 0);
}

#[tokio::test]
async fn a_run_checkpoint_keeps_its_image_once_in_media_and_reads_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = SqliteStore::open(&path).unwrap();
    store.create("paused").await.unwrap();
    let image = big_image();
    // A run's state holds its conversation: the question with its image.
    let checkpoint = serde_json::json!({
        "request": {"messages": [Message::user_with("What is on this screen?", vec![image.clone()])]},
        "iteration": 2,
    });
    for _ in 0..3 {
        store.save_checkpoint("paused", &checkpoint).await.unwrap();
    }

    let conn = rusqlite::Connection::open(&path).unwrap();
    let (count, bytes): (i64, i64) = conn
        .query_row("SELECT count(*), sum(length(data)) FROM media", [], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .unwrap();
    assert_eq!((count, bytes), (1, FIVE_MIB));
    let body: i64 = conn
        .query_row("SELECT length(body) FROM checkpoints", [], |row| row.get(0))
        .unwrap();
    assert!(
        body < 2_000,
        "the checkpoint holds a reference, not the bytes: {body} bytes"
    );
    drop(conn);

    assert_eq!(store.checkpoint("paused").await.unwrap(), Some(checkpoint));
    store.delete("paused").await.unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let left: i64 = conn
        .query_row("SELECT count(*) FROM media", [], |row| row.get(0))
        .unwrap();
    assert_eq!(left, 0);
}
