//! The host's local time zone, as the C library would pick it.

use std::path::Path;

use chrono_tz::Tz;

/// The host's local time zone: `$TZ`, else `/etc/timezone`, else the target
/// of the `/etc/localtime` symlink, else UTC.
///
/// A value that names no IANA zone (a POSIX rule string such as
/// `CET-1CEST`, a typo) is passed over for the next source rather than
/// taken as UTC, so a schedule keeps the machine's configured zone.
pub fn local_zone() -> Tz {
    let tz_env = std::env::var("TZ").ok();
    let etc_timezone = std::fs::read_to_string("/etc/timezone").ok();
    let localtime = std::fs::read_link("/etc/localtime").ok();
    resolve_zone(
        tz_env.as_deref(),
        etc_timezone.as_deref(),
        localtime.as_deref(),
    )
}

/// [`local_zone`] on given inputs, so the order of sources can be tested.
pub(super) fn resolve_zone(
    tz_env: Option<&str>,
    etc_timezone: Option<&str>,
    localtime_target: Option<&Path>,
) -> Tz {
    tz_env
        .and_then(zone_from_name)
        .or_else(|| {
            etc_timezone
                .and_then(|text| text.lines().next())
                .and_then(zone_from_name)
        })
        .or_else(|| {
            localtime_target
                .and_then(Path::to_str)
                .and_then(zone_from_name)
        })
        .unwrap_or(Tz::UTC)
}

/// An IANA name, possibly written as glibc accepts it in `$TZ` (`:Area/City`)
/// or as a path into the zoneinfo tree (`/usr/share/zoneinfo/Area/City`).
fn zone_from_name(text: &str) -> Option<Tz> {
    let text = text.trim();
    let text = text.strip_prefix(':').unwrap_or(text);
    let name = match text.rfind("zoneinfo/") {
        Some(at) => &text[at + "zoneinfo/".len()..],
        None => text,
    };
    // Debian ships the same zones again under posix/ and right/.
    let name = name
        .strip_prefix("posix/")
        .or_else(|| name.strip_prefix("right/"))
        .unwrap_or(name);
    if name.is_empty() {
        return None;
    }
    name.parse::<Tz>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tz_variable_wins_in_any_glibc_spelling() {
        let link = Path::new("/usr/share/zoneinfo/Asia/Tokyo");
        for tz in [
            "Europe/Amsterdam",
            ":Europe/Amsterdam",
            ":/usr/share/zoneinfo/Europe/Amsterdam",
            "/usr/share/zoneinfo/posix/Europe/Amsterdam",
        ] {
            assert_eq!(
                resolve_zone(Some(tz), Some("America/New_York\n"), Some(link)),
                Tz::Europe__Amsterdam,
                "TZ={tz}"
            );
        }
    }

    #[test]
    fn falls_through_etc_timezone_then_localtime_then_utc() {
        let link = Path::new("../usr/share/zoneinfo/Asia/Tokyo");
        assert_eq!(
            resolve_zone(None, Some("America/New_York\n"), Some(link)),
            Tz::America__New_York
        );
        // An unknown $TZ (a POSIX rule) is passed over.
        assert_eq!(
            resolve_zone(Some("CET-1CEST"), Some("America/New_York\n"), Some(link)),
            Tz::America__New_York
        );
        assert_eq!(resolve_zone(Some(""), None, Some(link)), Tz::Asia__Tokyo);
        assert_eq!(
            resolve_zone(None, Some("garbage\n"), Some(link)),
            Tz::Asia__Tokyo
        );
        assert_eq!(
            resolve_zone(None, None, Some(Path::new("/etc/nowhere"))),
            Tz::UTC
        );
        assert_eq!(resolve_zone(None, None, None), Tz::UTC);
    }
}
