//! Deterministic "randomness": a stable FNV-1a hash of the inputs seeds a
//! SplitMix64 sequence, so the same question always gets the same answer,
//! on every platform and Rust version (unlike `std`'s `DefaultHasher`).

/// FNV-1a, 64-bit.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET_BASIS, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(PRIME))
}

/// A reproducible sequence of numbers seeded by a text key.
pub(crate) struct Dice {
    state: u64,
}

impl Dice {
    /// A sequence seeded by the parts of a key, separated so that
    /// `("ab", "c")` and `("a", "bc")` differ.
    pub(crate) fn new(parts: &[&str]) -> Self {
        Self {
            state: fnv1a(parts.join("\u{1f}").as_bytes()),
        }
    }

    /// The next 64 random bits (SplitMix64).
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A number in `[low, high)`.
    pub(crate) fn range(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.unit()
    }

    /// An integer in `[low, high]`.
    pub(crate) fn between(&mut self, low: u32, high: u32) -> u32 {
        let span = u64::from(high.saturating_sub(low)) + 1;
        low + (self.next_u64() % span) as u32
    }

    /// One item of a non-empty slice.
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next_u64() % items.len() as u64) as usize]
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_reference_values() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn same_key_same_sequence() {
        let mut a = Dice::new(&["tokyo", "2025-06-15"]);
        let mut b = Dice::new(&["tokyo", "2025-06-15"]);
        for _ in 0..10 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(Dice::new(&["ab", "c"]).next_u64(), Dice::new(&["a", "bc"]).next_u64());
    }

    #[test]
    fn ranges_hold() {
        let mut dice = Dice::new(&["ranges"]);
        for _ in 0..1000 {
            let x = dice.range(-3.0, 3.0);
            assert!((-3.0..3.0).contains(&x));
            assert!((2..=5).contains(&dice.between(2, 5)));
        }
    }
}
