//! Media are stored once per content: a 5 MiB image sent in each of 20
//! turns is one row of `media`, and every turn reads it back whole.
#![allow(clippy::unwrap_used)]

use agent_core::{Attachment, ConversationStore, Message, TurnMeta, Usage};
use common::temp_store;
use sqlx_core::query_as::query_as;

mod common;

const MIB: usize = 1024 * 1024;
const FIVE_MIB: i64 = 5 * 1024 * 1024;

fn big_image() -> Attachment {
    let mut bytes = agent_testing::media::PNG[..33].to_vec();
    bytes.resize(5 * MIB, 0);
    Attachment::from_bytes(bytes, Some("image/png"), None).unwrap()
}

async fn media_rows(store: &agent_store_postgres::PostgresStore) -> (i64, i64) {
    query_as::<_, (i64, Option<i64>)>("SELECT count(*), sum(length(data))::bigint FROM media")
        .fetch_one(store.pool())
        .await
        .map(|(count, bytes)| (count, bytes.unwrap_or(0)))
        .unwrap()
}

#[tokio::test]
async fn an_image_sent_in_twenty_turns_is_stored_once_and_read_back_in_each() {
    let Some((_, store)) = temp_store("media_once").await else {
        return;
    };
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
    assert_eq!(media_rows(&store).await, (1, FIVE_MIB));
    let (bodies,): (i64,) = query_as("SELECT sum(length(body))::bigint FROM messages")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert!(
        bodies < 20_000,
        "the messages hold references, not the bytes: {bodies} bytes"
    );

    let loaded = store.load("screens").await.unwrap().unwrap();
    let users: Vec<&Message> = loaded.messages.iter().filter(|m| !m.attachments().is_empty()).collect();
    assert_eq!(users.len(), 20);
    assert!(users.iter().all(|message| message.attachments() == [image.clone()]));

    store.delete("screens").await.unwrap();
    assert_eq!(media_rows(&store).await.0, 0);
}

#[tokio::test]
async fn two_conversations_share_an_image_until_both_are_gone() {
    let Some((_, store)) = temp_store("media_shared").await else {
        return;
    };
    let image = agent_testing::media::png();
    for name in ["a", "b"] {
        store.create(name).await.unwrap();
        let turn = [
            Message::user_with("Look.", vec![image.clone()]),
            Message::assistant("A pixel."),
        ];
        store.append(name, &turn, &TurnMeta::default()).await.unwrap();
    }
    assert_eq!(media_rows(&store).await.0, 1);
    store.delete("a").await.unwrap();
    assert_eq!(media_rows(&store).await.0, 1);
    assert_eq!(
        store.load("b").await.unwrap().unwrap().messages[0].attachments(),
        [image]
    );
    store.delete("b").await.unwrap();
    assert_eq!(media_rows(&store).await.0, 0);
}

#[tokio::test]
async fn a_run_checkpoint_keeps_its_image_once_in_media_and_reads_it_back() {
    let Some((_, store)) = temp_store("media_checkpoint").await else {
        return;
    };
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
    assert_eq!(media_rows(&store).await, (1, FIVE_MIB));
    let (body,): (i64,) = query_as("SELECT length(body)::bigint FROM checkpoints")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert!(
        body < 2_000,
        "the checkpoint holds a reference, not the bytes: {body} bytes"
    );

    assert_eq!(store.checkpoint("paused").await.unwrap(), Some(checkpoint));
    store.delete("paused").await.unwrap();
    assert_eq!(media_rows(&store).await.0, 0);
}
