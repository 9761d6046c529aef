//! Compose's durations (`1m30s`, `500ms`) and byte sizes (`512m`, `1gb`),
//! read as compose reads them.

/// A duration in whole seconds, rounded up (mesh-host's health checks and
/// stop graces count seconds): `1m30s` → 90, `1h` → 3600, `10` → 10,
/// `500ms` → 1. Units: `us`, `ms`, `s`, `m`, `h`, in any sequence.
pub fn seconds(text: &str) -> Result<u64, String> {
    let wrong = || format!("{text:?} is not a duration (like \"30s\", \"1m30s\" or \"500ms\")");
    let t = text.trim();
    if t.is_empty() {
        return Err(wrong());
    }
    if let Ok(n) = t.parse::<u64>() {
        return Ok(n);
    }
    let mut nanos: u128 = 0;
    let mut rest = t;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(wrong)?;
        if digits == 0 {
            return Err(wrong());
        }
        let number: f64 = rest[..digits].parse().map_err(|_| wrong())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale: f64 = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(wrong()),
        };
        nanos += (number * scale) as u128;
        rest = &rest[unit_len..];
    }
    Ok(nanos.div_ceil(1_000_000_000) as u64)
}

/// A byte size: a number, or a number and a unit `b`, `k`/`kb`, `m`/`mb`,
/// `g`/`gb` (powers of 1024, case ignored): `512m` → 536870912.
pub fn bytes(text: &str) -> Result<u64, String> {
    let wrong = || format!("{text:?} is not a size (like \"512m\", \"1gb\" or \"65536\")");
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let number: f64 = t[..split].parse().map_err(|_| wrong())?;
    let scale: f64 = match t[split..].trim() {
        "" | "b" => 1.0,
        "k" | "kb" => 1024.0,
        "m" | "mb" => 1024.0 * 1024.0,
        "g" | "gb" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(wrong()),
    };
    Ok((number * scale).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_compose_reads_them() {
        for (text, want) in [
            ("30s", 30),
            ("1m30s", 90),
            ("1h", 3600),
            ("1h2m3s", 3723),
            ("10", 10),
            ("500ms", 1),
            ("1.5s", 2),
            ("2m", 120),
            ("0s", 0),
        ] {
            assert_eq!(seconds(text), Ok(want), "{text}");
        }
        for bad in ["", "s", "1x", "1m30", "-1s", "fast"] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_read_as_compose_reads_them() {
        for (text, want) in [
            ("65536", 65536),
            ("64k", 65536),
            ("512m", 536_870_912),
            ("512MB", 536_870_912),
            ("1gb", 1_073_741_824),
            ("1.5g", 1_610_612_736),
            ("100b", 100),
        ] {
            assert_eq!(bytes(text), Ok(want), "{text}");
        }
        for bad in ["", "m", "12q", "ten"] {
            assert!(bytes(bad).is_err(), "{bad}");
        }
    }
}
