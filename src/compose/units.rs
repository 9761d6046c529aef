//! Compose's durations (`1m30s`, `500ms`, `2d`) and byte sizes (`512m`,
//! `1gb`), read as compose reads them (compose-go's `Duration`, Go's
//! `time.ParseDuration` with days and weeks, and `UnitBytes`, docker's
//! `units.RAMInBytes`), refusing what does not fit where compose's Go
//! types would wrap or overflow in silence.

/// Nanoseconds in one second.
const SECOND: u128 = 1_000_000_000;

/// A duration in nanoseconds, at most `i64::MAX` (292 years), as Go's
/// `time.Duration` holds it: a sequence of decimal numbers each with a
/// unit (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`, `d`, `w`); `0` alone
/// needs none. A sign is refused: no compose duration is negative.
pub fn nanos(text: &str) -> Result<u128, String> {
    let wrong = || format!("{text:?} is not a duration (like \"30s\", \"1m30s\" or \"500ms\")");
    let t = text.trim();
    if t == "0" {
        return Ok(0);
    }
    if t.is_empty() || t.starts_with(['-', '+']) {
        return Err(wrong());
    }
    let mut total: u128 = 0;
    let mut rest = t;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| {
                format!("{text:?} is not a duration: a number without its unit (s, m, h, ...)")
            })?;
        let number = &rest[..digits];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(wrong());
        }
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale: u128 = match &rest[..unit_len] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => SECOND,
            "m" => 60 * SECOND,
            "h" => 3600 * SECOND,
            "d" => 86_400 * SECOND,
            "w" => 7 * 86_400 * SECOND,
            _ => return Err(wrong()),
        };
        rest = &rest[unit_len..];
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        let too_long = || format!("{text:?} is longer than a duration can be (292 years)");
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| too_long())?
        };
        let mut part = whole.checked_mul(scale).ok_or_else(too_long)?;
        // The fraction, digit by digit, as Go adds it (truncated below a
        // nanosecond).
        let mut place = scale;
        for d in fraction.chars().filter_map(|c| c.to_digit(10)) {
            place /= 10;
            part += u128::from(d) * place;
        }
        total = total.checked_add(part).ok_or_else(too_long)?;
        if total > i64::MAX as u128 {
            return Err(too_long());
        }
    }
    Ok(total)
}

/// A duration as whole seconds and whether it was rounded (up) to get
/// them.
pub fn seconds_up(text: &str) -> Result<(u64, bool), String> {
    let n = nanos(text)?;
    let secs = n.div_ceil(SECOND);
    Ok((secs as u64, n % SECOND != 0))
}

/// A duration as whole seconds, truncated as compose truncates a stop
/// grace period (`int(d.Seconds())`).
pub fn seconds_down(text: &str) -> Result<u64, String> {
    Ok((nanos(text)? / SECOND) as u64)
}

/// A byte size as compose reads it: a whole number (Go's `ParseInt`), or
/// a decimal number, an optional space, and a unit `k`, `m`, `g`, `t`,
/// `p` (powers of 1024, case ignored) with an optional `i` and `b`
/// (`512m`, `1.5GiB`, `100b`). Refused when it does not fit in the
/// 63 bits Docker takes, or is below 0.
pub fn bytes(text: &str) -> Result<u64, String> {
    let wrong = || format!("{text:?} is not a size (like \"512m\", \"1gb\" or \"65536\")");
    let too_big = || format!("{text:?} is larger than a size can be (8 EiB)");
    let t = text.trim();
    if let Some(digits) = t.strip_prefix('-') {
        if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
            return Err(format!("{text:?} is below 0"));
        }
    }
    let t = t.strip_prefix('+').unwrap_or(t);
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
        return t
            .parse::<u64>()
            .ok()
            .filter(|n| *n <= i64::MAX as u64)
            .ok_or_else(too_big);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
        return Err(wrong());
    }
    let number: f64 = number.parse().map_err(|_| wrong())?;
    let unit = unit.strip_prefix(' ').unwrap_or(unit).to_ascii_lowercase();
    let unit = unit.strip_suffix('b').unwrap_or(&unit);
    let unit = unit.strip_suffix('i').unwrap_or(unit);
    let scale: f64 = match unit {
        "" => 1.0,
        "k" => 1024.0,
        "m" => 1024f64.powi(2),
        "g" => 1024f64.powi(3),
        "t" => 1024f64.powi(4),
        "p" => 1024f64.powi(5),
        _ => return Err(wrong()),
    };
    let n = number * scale;
    if !n.is_finite() || n >= i64::MAX as f64 {
        return Err(too_big());
    }
    // Go converts the product to an integer by truncation.
    Ok(n as u64)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_compose_reads_them() {
        for (text, want) in [
            ("30s", 30),
            ("1m30s", 90),
            ("1h", 3600),
            ("1h2m3s", 3723),
            ("500ms", 1),
            ("1.5s", 2),
            ("2m", 120),
            ("0s", 0),
            ("0", 0),
            ("1d", 86_400),
            ("1w", 604_800),
            (".5s", 1),
        ] {
            assert_eq!(seconds_up(text).map(|s| s.0), Ok(want), "{text}");
        }
        assert_eq!(seconds_up("1500ms"), Ok((2, true)));
        assert_eq!(seconds_down("1500ms"), Ok(1));
        for bad in ["", "s", "1x", "1m30", "10", "-1s", "fast", "1..5s", "."] {
            assert!(nanos(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_duration_that_does_not_fit_is_refused_not_wrapped() {
        for text in [
            "18446744073709551616s",
            "18446744073709551617s",
            "9223372037s",
            "300000000000000000000000000000000000000000h",
            "106752d",
        ] {
            let e = nanos(text).unwrap_err();
            assert!(e.contains("longer than a duration can be"), "{text}: {e}");
        }
        assert_eq!(nanos("9223372036s"), Ok(9_223_372_036_000_000_000));
    }

    #[test]
    fn sizes_read_as_compose_reads_them() {
        for (text, want) in [
            ("65536", 65536),
            ("64k", 65536),
            ("512m", 536_870_912),
            ("512MB", 536_870_912),
            ("1gb", 1_073_741_824),
            ("1GiB", 1_073_741_824),
            ("1 g", 1_073_741_824),
            ("1.5g", 1_610_612_736),
            ("100b", 100),
            ("1t", 1 << 40),
        ] {
            assert_eq!(bytes(text), Ok(want), "{text}");
        }
        for bad in ["", "m", "12q", "ten", "1.g", "-1"] {
            assert!(bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_size_that_does_not_fit_is_refused_not_wrapped() {
        for text in [
            "99999999999g",
            "9223372036854775808",
            "99999999999999999999",
        ] {
            let e = bytes(text).unwrap_err();
            assert!(e.contains("larger than a size can be"), "{text}: {e}");
        }
    }
}
