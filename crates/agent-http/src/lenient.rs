//! Reading provider JSON leniently.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};

/// A string field that some servers (or unknown block types) fill with other
/// shapes: anything but a string reads as absent instead of failing the
/// whole response. Borrows from the input where it can.
#[derive(Debug, Default)]
pub struct LenientStr<'a>(pub Option<Cow<'a, str>>);

impl LenientStr<'_> {
    /// The text, when it is a string (possibly empty).
    pub fn as_str(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// The text, when it is a non-empty string.
    pub fn non_empty(&self) -> Option<&str> {
        self.as_str().filter(|text| !text.is_empty())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for LenientStr<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LenientVisitor;

        impl<'de> Visitor<'de> for LenientVisitor {
            type Value = LenientStr<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(LenientStr(Some(Cow::Borrowed(text))))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(LenientStr(Some(Cow::Owned(text.to_owned()))))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(LenientStr(Some(Cow::Owned(text))))
            }

            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LenientStr(None))
            }

            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(LenientStr(None))
            }

            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(LenientStr(None))
            }

            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(LenientStr(None))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(LenientStr(None))
            }

            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(LenientStr(None))
            }

            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LenientStr(None))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LenientStr(None))
            }
        }

        deserializer.deserialize_any(LenientVisitor)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn lenient_strings_ignore_other_shapes() {
        let text: LenientStr<'_> = serde_json::from_str(r#""hi""#).unwrap();
        assert_eq!(text.as_str(), Some("hi"));
        let empty: LenientStr<'_> = serde_json::from_str(r#""""#).unwrap();
        assert_eq!((empty.as_str(), empty.non_empty()), (Some(""), None));
        for other in ["null", "1", "-1", "1.5", "true", "[1,2]", r#"{"a":1}"#] {
            let value: LenientStr<'_> = serde_json::from_str(other).unwrap();
            assert_eq!(value.as_str(), None, "{other}");
        }
    }
}
