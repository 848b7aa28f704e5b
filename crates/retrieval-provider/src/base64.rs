//! Spec: retrieval-provider §8.3 (base64 embeddings: standard-alphabet base64 of
//! little-endian float32 values). A strict decoder: padding optional, whitespace
//! and any other character rejected.

/// Decodes standard base64; `None` when `text` is not valid base64.
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    let trimmed = text.trim_end_matches('=');
    if text.len() - trimmed.len() > 2 {
        return None;
    }
    let mut out = Vec::with_capacity(trimmed.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for b in trimmed.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    // A single leftover sextet cannot encode a byte.
    if trimmed.len() % 4 == 1 {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_padded_and_unpadded_input() {
        assert_eq!(decode("aGk=").as_deref(), Some(&b"hi"[..]));
        assert_eq!(decode("aGk").as_deref(), Some(&b"hi"[..]));
        assert_eq!(decode("").as_deref(), Some(&b""[..]));
        assert_eq!(decode("AAAAAA==").map(|v| v.len()), Some(4));
    }

    #[test]
    fn rejects_foreign_characters_and_impossible_lengths() {
        assert_eq!(decode("a b="), None);
        assert_eq!(decode("A"), None);
        assert_eq!(decode("AA==="), None);
    }
}
