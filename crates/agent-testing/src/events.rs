//! Draining a client's event stream in tests.

use agent_core::{EventStream, LlmError, StreamEvent};
use futures::StreamExt;

/// Every event of `stream` up to its end or its first error, and that error.
pub async fn collect_events(mut stream: EventStream) -> (Vec<StreamEvent>, Option<LlmError>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => return (events, Some(error)),
        }
    }
    (events, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn events_stop_at_the_first_error() {
        let items = vec![
            Ok(StreamEvent::TextDelta { text: "a".into() }),
            Err(LlmError::decode("broken")),
            Ok(StreamEvent::TextDelta { text: "b".into() }),
        ];
        let stream: EventStream = Box::pin(futures::stream::iter(items));
        let (events, error) = collect_events(stream).await;
        assert_eq!(events, [StreamEvent::TextDelta { text: "a".into() }]);
        assert_eq!(error.map(|error| error.message).as_deref(), Some("broken"));
    }
}
