//! `sse_decoder` and `ndjson_decoder`: the framing of streamed replies.

use std::fmt::Debug;

use agent_http::ChunkDecoder;
use agent_http::ndjson::NdjsonDecoder;
use agent_http::sse::SseDecoder;

use crate::pieces::byte_pieces;

/// A small item limit, so that inputs reach the over-the-limit path.
const SMALL_LIMIT: usize = 64;

/// Decodes `data` as server-sent events: fed whole and in pieces, with the
/// default limit and a small one, the events and the error are the same,
/// and no event's data is over the limit.
pub fn sse_decoder(data: &[u8]) {
    same_whole_and_in_pieces(SseDecoder::new, data);
    let events = same_whole_and_in_pieces(|| SseDecoder::with_limit(SMALL_LIMIT), data);
    for event in &events {
        assert!(
            event.data.len() <= SMALL_LIMIT,
            "an event of {} data bytes passed a limit of {SMALL_LIMIT}",
            event.data.len()
        );
    }
}

/// Decodes `data` as newline-delimited JSON lines, as [`sse_decoder`] does.
pub fn ndjson_decoder(data: &[u8]) {
    same_whole_and_in_pieces(NdjsonDecoder::new, data);
    let lines = same_whole_and_in_pieces(|| NdjsonDecoder::with_limit(SMALL_LIMIT), data);
    for line in &lines {
        assert!(
            line.len() <= SMALL_LIMIT,
            "a line of {} bytes passed a limit of {SMALL_LIMIT}",
            line.len()
        );
    }
}

/// Decodes `data` whole and in pieces with decoders from `make`, asserts
/// both give the same items and error, and returns the items.
fn same_whole_and_in_pieces<D>(make: impl Fn() -> D, data: &[u8]) -> Vec<D::Item>
where
    D: ChunkDecoder,
    D::Item: Debug + PartialEq,
{
    let whole = decode(make(), [data]);
    let split = decode(make(), byte_pieces(data));
    assert_eq!(
        whole, split,
        "decoded whole and in pieces, the input gave different items"
    );
    whole.0
}

fn decode<'a, D: ChunkDecoder>(
    mut decoder: D,
    pieces: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<D::Item>, Option<String>) {
    let mut items = Vec::new();
    for piece in pieces {
        decoder.push(piece, &mut items);
    }
    decoder.finish(&mut items);
    (items, decoder.error().map(|error| error.to_string()))
}
