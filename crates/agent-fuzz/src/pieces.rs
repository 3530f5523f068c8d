//! Cutting an input into pieces, the way a network delivers a body.

/// The piece sizes, cycled from a start chosen by the input's length.
const SIZES: [usize; 7] = [1, 2, 3, 5, 8, 13, 64];

/// `data` in pieces of 1 to 64 bytes, in a pattern that depends on its
/// length only (so one input always gives the same pieces).
pub(crate) fn byte_pieces(data: &[u8]) -> Vec<&[u8]> {
    let mut pieces = Vec::new();
    let mut rest = data;
    let mut turn = data.len() % SIZES.len();
    while !rest.is_empty() {
        let size = SIZES[turn % SIZES.len()].min(rest.len());
        let (piece, tail) = rest.split_at(size);
        pieces.push(piece);
        rest = tail;
        turn += 1;
    }
    pieces
}

/// `text` in pieces as [`byte_pieces`] cuts it, each moved to the next
/// character boundary (a stream of text deltas never splits a character).
pub(crate) fn text_pieces(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut turn = text.len() % SIZES.len();
    while start < text.len() {
        let mut end = (start + SIZES[turn % SIZES.len()]).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(&text[start..end]);
        start = end;
        turn += 1;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_input_in_order() {
        let data: Vec<u8> = (0..=200).collect();
        let pieces = byte_pieces(&data);
        assert!(pieces.len() > 5);
        assert_eq!(pieces.concat(), data);
        let text = "añb€c😀d".repeat(9);
        let pieces = text_pieces(&text);
        assert!(pieces.len() > 5);
        assert_eq!(pieces.concat(), text);
    }
}
