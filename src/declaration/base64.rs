//! Base64 (RFC 4648, standard alphabet, padded) for `content-base64`.
//!
//! Strict on decoding, as RFC 4648 asks of a format that does not say
//! otherwise: no whitespace, padding in place, unused bits zero. So one
//! content has one spelling, and the canonical form round-trips. Small enough
//! to keep here rather than add a dependency.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Encode with padding.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn sextet(c: u8) -> Option<u32> {
    ALPHABET.iter().position(|&a| a == c).map(|p| p as u32)
}

/// Decode, or say where and why the text is not base64.
pub fn decode(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return Err(format!(
            "not base64: its length {} is not a multiple of 4 (padding with '=' is required)",
            bytes.len()
        ));
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let chunks = bytes.len() / 4;
    for (index, chunk) in bytes.chunks(4).enumerate() {
        let last = index + 1 == chunks;
        let padding = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if padding > 2 || (padding > 0 && !last) {
            return Err(format!(
                "not base64: misplaced '=' at character {}",
                index * 4 + chunk.iter().position(|&c| c == b'=').unwrap_or(0) + 1
            ));
        }
        let mut n = 0u32;
        for (i, &c) in chunk[..4 - padding].iter().enumerate() {
            if c == b'=' {
                return Err(format!(
                    "not base64: misplaced '=' at character {}",
                    index * 4 + i + 1
                ));
            }
            let Some(v) = sextet(c) else {
                return Err(format!(
                    "not base64: {:?} at character {} is not in the base64 alphabet",
                    char::from(c),
                    index * 4 + i + 1
                ));
            };
            n |= v << (18 - 6 * i);
        }
        let kept = 3 - padding;
        // Bits the padding says are unused must be zero, or two texts would
        // decode to the same bytes.
        if n & ((1 << (8 * (3 - kept))) - 1) != 0 {
            return Err(format!(
                "not base64: the last group before '=' (character {}) has unused bits set",
                index * 4 + 1
            ));
        }
        for i in 0..kept {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_length() {
        for len in 0..40u8 {
            let bytes: Vec<u8> = (0..len)
                .map(|i| i.wrapping_mul(37).wrapping_add(200))
                .collect();
            assert_eq!(decode(&encode(&bytes)), Ok(bytes));
        }
    }

    #[test]
    fn matches_rfc_4648_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(encode(plain.as_bytes()), encoded);
            assert_eq!(decode(encoded), Ok(plain.as_bytes().to_vec()));
        }
    }

    #[test]
    fn refuses_sloppy_text() {
        assert!(decode("Zg").is_err_and(|e| e.contains("multiple of 4")));
        assert!(decode("Zg=a").is_err_and(|e| e.contains("misplaced '='")));
        assert!(decode("Zg==Zg==").is_err_and(|e| e.contains("misplaced '='")));
        assert!(decode("Z===").is_err_and(|e| e.contains("misplaced '='")));
        assert!(decode("Zm9v\nYmFy").is_err());
        assert!(decode("Zm9*").is_err_and(|e| e.contains("'*' at character 4")));
        assert!(decode("Zh==").is_err_and(|e| e.contains("unused bits")));
    }
}
