//! `content-base64`: standard alphabet, padding required, no stray bits
//! (the `base64` crate's strict `STANDARD` engine), with a message that
//! says what is wrong.

use base64::Engine as _;

/// Encode bytes (the canonical form of a file's content that is not UTF-8).
pub fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decode, or say why the text is not base64.
pub fn decode(text: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("not base64 (standard alphabet, '=' padding): {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_length() {
        for len in 0..64u8 {
            let bytes: Vec<u8> = (0..len).map(|i| i.wrapping_mul(37)).collect();
            assert_eq!(decode(&encode(&bytes)).expect("round trip"), bytes);
        }
    }

    #[test]
    fn matches_rfc_4648_vectors() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(encode(plain.as_bytes()), coded);
            assert_eq!(decode(coded).expect("valid"), plain.as_bytes());
        }
    }

    #[test]
    fn refuses_sloppy_text() {
        for bad in ["Zg", "Zg=", "Z===", "Zm9v!", "Zh==", "Zg==Zg==", "Zm 9v"] {
            let e = decode(bad).expect_err(bad);
            assert!(e.starts_with("not base64"), "{bad}: {e}");
        }
    }
}
