//! `provider_streams`: every provider's reply parser and stream mapper.

use std::time::Duration;

use agent_core::{ChatResponse, Message};
use agent_http::ndjson::NdjsonDecoder;
use agent_http::sse::SseDecoder;
use agent_http::{ChunkDecoder, EventMapper, decode_body};
use agent_provider_anthropic::mapper as anthropic;
use agent_provider_gemini::mapper as gemini;
use agent_provider_ollama::mapper as ollama;
use agent_provider_openai::mapper as openai;

use crate::agent::agent;
use crate::pieces::byte_pieces;

/// Gives `data` to the four providers as a whole reply (a reply or a typed
/// error) and as a streamed body: server-sent events for OpenAI, Anthropic
/// and Gemini, NDJSON lines for Ollama. Streamed, the body fed whole and in
/// pieces gives the same events and the same end (done or the same error).
/// A parsed reply, taken by a run, leaves no unnamed call in its history.
pub fn provider_streams(data: &[u8]) {
    for parse in [
        openai::parse_response,
        anthropic::parse_response,
        gemini::parse_response,
        ollama::parse_response,
    ] {
        if let Ok(response) = parse(data) {
            taken_by_the_runner(response);
        }
    }
    same_events(SseDecoder::new, openai::StreamMapper::new, data);
    same_events(SseDecoder::new, anthropic::StreamMapper::new, data);
    same_events(SseDecoder::new, gemini::StreamMapper::new, data);
    same_events(NdjsonDecoder::new, ollama::StreamMapper::new, data);
}

/// A parsed reply given to a run leaves a history every provider accepts:
/// each call answered and named (a reply with an unnamed call is not kept).
fn taken_by_the_runner(response: ChatResponse) {
    let mut state = agent().start(Vec::new(), "What is the weather?");
    let _ = state.next_step();
    if let Err(error) = state.on_model_response(response, Duration::ZERO) {
        panic!("the run refused a reply at its model step: {error}");
    }
    let _ = state.next_step();
    let messages = &state.request().messages;
    for message in messages {
        if let Message::Assistant(reply) = message {
            for call in &reply.tool_calls {
                assert!(
                    !call.name.trim().is_empty(),
                    "a call without a name entered the history: {call:?}"
                );
            }
        }
    }
}

fn same_events<D, M>(decoder: impl Fn() -> D, mapper: impl Fn() -> M, data: &[u8])
where
    D: ChunkDecoder,
    D::Item: AsRef<str>,
    M: EventMapper,
{
    let run = |pieces: Vec<&[u8]>| {
        let (mut decoder, mut mapper) = (decoder(), mapper());
        let (mut items, mut events) = (Vec::new(), Vec::new());
        let end = decode_body(&mut decoder, &mut mapper, pieces, &mut items, &mut events);
        (format!("{events:?}"), end.map_err(|error| error.to_string()))
    };
    let whole = run(vec![data]);
    let split = run(byte_pieces(data));
    assert_eq!(
        whole, split,
        "streamed whole and in pieces, the body mapped differently"
    );
}
