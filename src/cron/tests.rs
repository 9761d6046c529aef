//! Edge cases from Debian's crontab(5) and cron.c, with hand-checked fires.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::{preview, CronSchedule};

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .expect("test instants are valid RFC 3339")
        .with_timezone(&Utc)
}

/// The next `count` fires as RFC 3339 in the zone's own offset.
fn fires(expr: &str, from: &str, zone: Tz, count: usize) -> Vec<String> {
    let schedule = CronSchedule::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
    schedule
        .upcoming(at(from), zone)
        .take(count)
        .map(|f| f.to_rfc3339())
        .collect()
}

fn refusal(expr: &str) -> String {
    match CronSchedule::parse(expr) {
        Ok(_) => panic!("{expr:?} was accepted"),
        Err(e) => e.to_string(),
    }
}

const AMS: Tz = Tz::Europe__Amsterdam;
const NYC: Tz = Tz::America__New_York;

#[test]
fn both_day_fields_restricted_means_either() {
    // crontab(5): "30 4 1,15 * 5" runs on the 1st and 15th plus every Friday.
    // 2024-03-01 is a Friday.
    assert_eq!(
        fires("30 4 1,15 * 5", "2024-03-01T05:00:00Z", Tz::UTC, 6),
        [
            "2024-03-08T04:30:00+00:00",
            "2024-03-15T04:30:00+00:00",
            "2024-03-22T04:30:00+00:00",
            "2024-03-29T04:30:00+00:00",
            "2024-04-01T04:30:00+00:00",
            "2024-04-05T04:30:00+00:00",
        ]
    );
    // So an impossible date is fine when a weekday is ORed in: Mondays in
    // February.
    assert_eq!(
        fires("0 0 30 2 mon", "2024-01-01T00:00:00Z", Tz::UTC, 5),
        [
            "2024-02-05T00:00:00+00:00",
            "2024-02-12T00:00:00+00:00",
            "2024-02-19T00:00:00+00:00",
            "2024-02-26T00:00:00+00:00",
            "2025-02-03T00:00:00+00:00",
        ]
    );
}

#[test]
fn a_star_led_day_field_is_anded_as_cron_c_does() {
    // A plain `*` leaves the other field alone.
    assert_eq!(
        fires("0 0 * * mon", "2024-01-01T00:00:00Z", Tz::UTC, 2),
        ["2024-01-08T00:00:00+00:00", "2024-01-15T00:00:00+00:00"]
    );
    assert_eq!(
        fires("0 0 13 * *", "2024-01-01T00:00:00Z", Tz::UTC, 2),
        ["2024-01-13T00:00:00+00:00", "2024-02-13T00:00:00+00:00"]
    );
    // `*/2` starts with `*`, so cron.c ANDs: Mondays with an odd date.
    assert_eq!(
        fires("0 0 */2 * mon", "2024-01-01T00:00:00Z", Tz::UTC, 4),
        [
            "2024-01-15T00:00:00+00:00",
            "2024-01-29T00:00:00+00:00",
            "2024-02-05T00:00:00+00:00",
            "2024-02-19T00:00:00+00:00",
        ]
    );
}

#[test]
fn sunday_is_0_7_and_sun_in_any_case() {
    let expected = [
        "2024-03-03T00:00:00+00:00",
        "2024-03-10T00:00:00+00:00",
        "2024-03-17T00:00:00+00:00",
    ];
    for expr in [
        "0 0 * * 0",
        "0 0 * * 7",
        "0 0 * * sun",
        "0 0 * * SUN",
        "@weekly",
    ] {
        assert_eq!(
            fires(expr, "2024-03-01T00:00:00Z", Tz::UTC, 3),
            expected,
            "{expr}"
        );
    }
    // A range may end on 7; 2024-03-01 is a Friday.
    assert_eq!(
        fires("0 0 * * 5-7", "2024-03-01T00:00:00Z", Tz::UTC, 5),
        [
            "2024-03-02T00:00:00+00:00",
            "2024-03-03T00:00:00+00:00",
            "2024-03-08T00:00:00+00:00",
            "2024-03-09T00:00:00+00:00",
            "2024-03-10T00:00:00+00:00",
        ]
    );
}

#[test]
fn names_lists_ranges_and_steps() {
    assert_eq!(
        fires("0 22 * * mon-fri", "2024-03-01T23:00:00Z", Tz::UTC, 3),
        [
            "2024-03-04T22:00:00+00:00",
            "2024-03-05T22:00:00+00:00",
            "2024-03-06T22:00:00+00:00",
        ]
    );
    assert_eq!(
        fires("0 0 1 jan-mar *", "2024-01-15T00:00:00Z", Tz::UTC, 3),
        [
            "2024-02-01T00:00:00+00:00",
            "2024-03-01T00:00:00+00:00",
            "2025-01-01T00:00:00+00:00",
        ]
    );
    assert_eq!(
        fires("0 0 1 JAN,Jul *", "2024-01-15T00:00:00Z", Tz::UTC, 2),
        ["2024-07-01T00:00:00+00:00", "2025-01-01T00:00:00+00:00"]
    );
    // crontab(5): 23 minutes after midnight, 2am, 4am ...
    assert_eq!(
        fires("23 0-23/2 * * *", "2024-03-01T00:00:00Z", Tz::UTC, 3),
        [
            "2024-03-01T00:23:00+00:00",
            "2024-03-01T02:23:00+00:00",
            "2024-03-01T04:23:00+00:00",
        ]
    );
    assert_eq!(
        fires("1-30/10,45 * * * *", "2024-03-01T00:00:00Z", Tz::UTC, 5),
        [
            "2024-03-01T00:01:00+00:00",
            "2024-03-01T00:11:00+00:00",
            "2024-03-01T00:21:00+00:00",
            "2024-03-01T00:45:00+00:00",
            "2024-03-01T01:01:00+00:00",
        ]
    );
    // A step wider than the range keeps its first value, as in Debian.
    assert_eq!(
        fires("*/60 * * * *", "2024-03-01T00:00:00Z", Tz::UTC, 2),
        ["2024-03-01T01:00:00+00:00", "2024-03-01T02:00:00+00:00"]
    );
}

#[test]
fn february_29_only_in_leap_years_and_month_ends() {
    assert_eq!(
        fires("0 0 29 2 *", "2023-06-01T00:00:00Z", Tz::UTC, 3),
        [
            "2024-02-29T00:00:00+00:00",
            "2028-02-29T00:00:00+00:00",
            "2032-02-29T00:00:00+00:00",
        ]
    );
    // 2100 is not a leap year, and the crate's calendar ends with it.
    let leap = CronSchedule::parse("0 0 29 2 *").expect("a real date");
    assert_eq!(leap.next_after(at("2096-03-01T00:00:00Z"), Tz::UTC), None);
    assert_eq!(
        fires("0 0 31 * *", "2024-01-31T00:00:00Z", Tz::UTC, 4),
        [
            "2024-03-31T00:00:00+00:00",
            "2024-05-31T00:00:00+00:00",
            "2024-07-31T00:00:00+00:00",
            "2024-08-31T00:00:00+00:00",
        ]
    );
    assert_eq!(
        fires("0 0 30,31 2,4 *", "2024-01-01T00:00:00Z", Tz::UTC, 2),
        ["2024-04-30T00:00:00+00:00", "2025-04-30T00:00:00+00:00"]
    );
}

#[test]
fn macros_expand_as_in_debian() {
    let from = "2024-03-01T00:30:00Z";
    for (expr, first) in [
        ("@yearly", "2025-01-01T00:00:00+00:00"),
        ("@annually", "2025-01-01T00:00:00+00:00"),
        ("@monthly", "2024-04-01T00:00:00+00:00"),
        ("@weekly", "2024-03-03T00:00:00+00:00"),
        ("@daily", "2024-03-02T00:00:00+00:00"),
        ("@midnight", "2024-03-02T00:00:00+00:00"),
        ("@hourly", "2024-03-01T01:00:00+00:00"),
    ] {
        assert_eq!(fires(expr, from, Tz::UTC, 1), [first], "{expr}");
    }
    assert!(CronSchedule::parse("@daily")
        .expect("macro")
        .is_fixed_time());
    assert!(!CronSchedule::parse("@hourly")
        .expect("macro")
        .is_fixed_time());
}

#[test]
fn next_after_is_strict_and_drops_subseconds() {
    let schedule = CronSchedule::parse("0 10 * * *").expect("valid");
    let next = |t: &str| schedule.next_after(at(t), Tz::UTC).map(|f| f.to_rfc3339());
    assert_eq!(
        next("2024-03-01T10:00:00Z").as_deref(),
        Some("2024-03-02T10:00:00+00:00")
    );
    assert_eq!(
        next("2024-03-01T10:00:00.5Z").as_deref(),
        Some("2024-03-02T10:00:00+00:00")
    );
    assert_eq!(
        next("2024-03-01T09:59:59.999Z").as_deref(),
        Some("2024-03-01T10:00:00+00:00")
    );
    let every = CronSchedule::parse("*/15 * * * *").expect("valid");
    assert_eq!(
        every
            .next_after(at("2024-03-01T10:07:30.25Z"), Tz::UTC)
            .map(|f| f.to_rfc3339()),
        Some("2024-03-01T10:15:00+00:00".to_string())
    );
}

#[test]
fn zone_shifts_the_wall_clock() {
    assert_eq!(
        fires("0 9 * * *", "2024-01-09T12:00:00Z", Tz::Asia__Tokyo, 2),
        ["2024-01-10T09:00:00+09:00", "2024-01-11T09:00:00+09:00"]
    );
}

#[test]
fn fixed_time_job_in_a_skipped_hour_runs_right_after_the_change() {
    // Europe/Amsterdam, 2024-03-31: 02:00 CET becomes 03:00 CEST.
    assert_eq!(
        fires("30 2 * * *", "2024-03-29T12:00:00Z", AMS, 3),
        [
            "2024-03-30T02:30:00+01:00",
            "2024-03-31T03:00:00+02:00",
            "2024-04-01T02:30:00+02:00",
        ]
    );
    // Two fixed times landing on the same instant run once.
    assert_eq!(
        fires("0 2,3 * * *", "2024-03-30T12:00:00Z", AMS, 3),
        [
            "2024-03-31T03:00:00+02:00",
            "2024-04-01T02:00:00+02:00",
            "2024-04-01T03:00:00+02:00",
        ]
    );
    // America/New_York, 2024-03-10: 02:00 EST becomes 03:00 EDT.
    assert_eq!(
        fires("30 2 * * *", "2024-03-09T12:00:00Z", NYC, 2),
        ["2024-03-10T03:00:00-04:00", "2024-03-11T02:30:00-04:00"]
    );
    assert_eq!(
        fires("0 2 * * *", "2024-03-10T06:59:59Z", NYC, 1),
        ["2024-03-10T03:00:00-04:00"]
    );
}

#[test]
fn midnight_that_does_not_exist_runs_at_the_first_instant_after() {
    // America/Sao_Paulo, 2018-11-04: 00:00 -03 became 01:00 -02.
    let sao_paulo = Tz::America__Sao_Paulo;
    assert_eq!(
        fires("@daily", "2018-11-03T12:00:00Z", sao_paulo, 2),
        ["2018-11-04T01:00:00-02:00", "2018-11-05T00:00:00-02:00"]
    );
    assert_eq!(
        fires("*/30 0 * * *", "2018-11-03T12:00:00Z", sao_paulo, 2),
        ["2018-11-05T00:00:00-02:00", "2018-11-05T00:30:00-02:00"]
    );
}

#[test]
fn instants_outside_the_calendar_give_the_nearest_answer() {
    let daily = CronSchedule::parse("@daily").expect("valid");
    assert_eq!(
        daily
            .next_after(DateTime::<Utc>::MIN_UTC, Tz::UTC)
            .map(|f| f.to_rfc3339()),
        Some("1970-01-01T00:00:00+00:00".to_string())
    );
    assert_eq!(daily.next_after(DateTime::<Utc>::MAX_UTC, AMS), None);
    assert_eq!(daily.next_after(at("2100-12-31T00:00:00Z"), Tz::UTC), None);
}

#[test]
fn clock_following_job_skips_a_skipped_hour() {
    assert_eq!(
        fires("0 * * * *", "2024-03-30T23:30:00Z", AMS, 3),
        [
            "2024-03-31T01:00:00+01:00",
            "2024-03-31T03:00:00+02:00",
            "2024-03-31T04:00:00+02:00",
        ]
    );
    assert_eq!(
        fires("30 * * * *", "2024-03-31T00:00:00Z", AMS, 2),
        ["2024-03-31T01:30:00+01:00", "2024-03-31T03:30:00+02:00"]
    );
    // Minute '*' makes it clock-following even with a fixed hour: no run at
    // all on the day 02:xx does not exist.
    assert_eq!(
        fires("* 2 * * *", "2024-03-31T00:00:00Z", AMS, 2),
        ["2024-04-01T02:00:00+02:00", "2024-04-01T02:01:00+02:00"]
    );
    assert_eq!(
        fires("*/30 * * * *", "2024-03-10T06:40:00Z", NYC, 2),
        ["2024-03-10T03:00:00-04:00", "2024-03-10T03:30:00-04:00"]
    );
}

#[test]
fn fixed_time_job_runs_once_in_a_repeated_hour() {
    // Europe/Amsterdam, 2024-10-27: 03:00 CEST becomes 02:00 CET.
    assert_eq!(
        fires("30 2 * * *", "2024-10-26T12:00:00Z", AMS, 2),
        ["2024-10-27T02:30:00+02:00", "2024-10-28T02:30:00+01:00"]
    );
    // Asked from inside the second 02:xx, after the first 02:30 ran.
    assert_eq!(
        fires("30 2 * * *", "2024-10-27T01:10:00Z", AMS, 1),
        ["2024-10-28T02:30:00+01:00"]
    );
    // Asked between the first 02:15 and the second.
    assert_eq!(
        fires("15 2 * * *", "2024-10-27T00:20:00Z", AMS, 1),
        ["2024-10-28T02:15:00+01:00"]
    );
    // America/New_York, 2024-11-03: 02:00 EDT becomes 01:00 EST.
    assert_eq!(
        fires("30 1 * * *", "2024-11-02T12:00:00Z", NYC, 2),
        ["2024-11-03T01:30:00-04:00", "2024-11-04T01:30:00-05:00"]
    );
}

#[test]
fn clock_following_job_runs_in_both_occurrences_of_a_repeated_hour() {
    assert_eq!(
        fires("0 * * * *", "2024-10-26T23:30:00Z", AMS, 3),
        [
            "2024-10-27T02:00:00+02:00",
            "2024-10-27T02:00:00+01:00",
            "2024-10-27T03:00:00+01:00",
        ]
    );
    assert_eq!(
        fires("*/15 * * * *", "2024-10-27T00:40:00Z", AMS, 3),
        [
            "2024-10-27T02:45:00+02:00",
            "2024-10-27T02:00:00+01:00",
            "2024-10-27T02:15:00+01:00",
        ]
    );
    assert_eq!(
        fires("30 * * * *", "2024-10-27T01:10:00Z", AMS, 1),
        ["2024-10-27T02:30:00+01:00"]
    );
    assert_eq!(
        fires("*/30 * * * *", "2024-11-03T05:20:00Z", NYC, 4),
        [
            "2024-11-03T01:30:00-04:00",
            "2024-11-03T01:00:00-05:00",
            "2024-11-03T01:30:00-05:00",
            "2024-11-03T02:00:00-05:00",
        ]
    );
}

#[test]
fn fixed_time_is_about_minute_and_hour_only() {
    for (expr, fixed) in [
        ("30 2 * * *", true),
        ("0-30 2 * * *", true),
        ("0 2,14 */2 * *", true),
        ("0 * * * *", false),
        ("*/15 2 * * *", false),
        ("0 */2 * * *", false),
        ("* * * * *", false),
    ] {
        assert_eq!(
            CronSchedule::parse(expr).expect("valid").is_fixed_time(),
            fixed,
            "{expr}"
        );
    }
}

#[test]
fn refusals_name_the_field_and_the_reason() {
    for (expr, message) in [
        ("", "empty expression"),
        ("   ", "empty expression"),
        ("0 0 *", "found 3 fields, expected 5"),
        ("0 0 0 * * *", "found 6 fields, expected 5 (minute hour day-of-month month day-of-week): a seconds field is not supported"),
        ("0 0 0 * * * 2030", "seconds and year fields are not supported"),
        ("0 0 1 1 1 1 1 1", "found 8 fields"),
        ("@reboot", "@reboot is not supported"),
        ("@Daily", "unknown macro \"@Daily\""),
        ("@fortnightly", "unknown macro \"@fortnightly\""),
        ("@daily 5", "stands alone"),
        ("61 * * * *", "minute: 61 is out of range 0-59"),
        ("* 24 * * *", "hour: 24 is out of range 0-23"),
        ("* * 0 * *", "day-of-month: 0 is out of range 1-31"),
        ("* * 32 * *", "day-of-month: 32 is out of range 1-31"),
        ("* * * 0 *", "month: 0 is out of range 1-12"),
        ("* * * 13 *", "month: 13 is out of range 1-12"),
        ("* * * * 8", "day-of-week: 8 is out of range 0-7"),
        ("99999999999 * * * *", "minute: 99999999999 is out of range 0-59"),
        ("5/15 * * * *", "minute: '5/15': a step needs a range or '*'"),
        ("* * * * 1/2", "day-of-week: '1/2': a step needs a range or '*'"),
        ("*/0 * * * *", "minute: '*/0': step 0"),
        ("1-5/x * * * *", "minute: '1-5/x': step 'x' is not a number"),
        ("*/ * * * *", "minute: '*/': a step is missing"),
        ("0 0 ? * *", "day-of-month: '?' is Quartz syntax"),
        ("0 0 * * ?", "day-of-week: '?' is Quartz syntax"),
        ("0 0 L * *", "day-of-month: 'L': 'L' (last day)"),
        ("0 0 15W * *", "day-of-month: '15W': 'W' (nearest weekday)"),
        ("0 0 * * 5L", "day-of-week: '5L': 'L' (last day)"),
        ("0 0 * * 1#2", "day-of-week: '#' (nth weekday of the month)"),
        ("5-1 * * * *", "minute: range '5-1' is reversed (5 > 1) and matches nothing"),
        ("0 0 * * fri-sun", "day-of-week: range 'fri-sun' is reversed (5 > 0)"),
        ("0 0 30 2 *", "day-of-month: '30' never occurs in month '2', so the expression never fires (February has 29 days at most)"),
        ("0 0 31 4,6,9,11 *", "day-of-month: '31' never occurs in month '4,6,9,11'"),
        ("0 0 30-31 feb *", "never fires"),
        ("0 0 * * monday", "day-of-week: 'monday' is not a day name"),
        ("0 0 * foo *", "month: 'foo' is not a month name"),
        ("jan * * * *", "minute: 'jan' is not a number"),
        ("1,,2 * * * *", "minute: empty element in the list '1,,2'"),
        ("*5 * * * *", "minute: '*5': '*' stands alone"),
        ("-5 * * * *", "minute: '-5': a number is missing"),
        ("0 0 * * 1~5", "day-of-week: unexpected character '~'"),
    ] {
        let got = refusal(expr);
        assert!(got.contains(message), "{expr:?}: {got:?} lacks {message:?}");
    }
    // Every bad field is named in one message.
    assert_eq!(
        refusal("61 25 * * *"),
        "minute: 61 is out of range 0-59; hour: 25 is out of range 0-23"
    );
    assert!(!refusal("0 0 31 4,6,9,11 *").contains("February"));
    // Sunday as 0 explains the reversed day range.
    assert!(refusal("0 0 * * fri-sun").contains("Sunday is 0 here"));
}

#[test]
fn control_characters_are_quoted_never_printed_raw() {
    // ESC, BEL and NUL in an expression (a declaration can carry any of
    // them) come out escaped, as every other field's message quotes them:
    // a refusal printed on a terminal never drives it.
    for (expr, shown) in [
        ("1 2 3 4 \u{1b}\u{7}", "'\\u{1b}' in \"\\u{1b}\\u{7}\""),
        ("\0 * * * *", "'\\0' in \"\\0\""),
        (
            "* * * * 1#\u{1b}",
            "'#' (nth weekday of the month) in \"1#\\u{1b}\"",
        ),
        ("@\u{7}daily", "unknown macro \"@\\u{7}daily\""),
        ("@daily \u{1b}", "the macro \"@daily\" stands alone"),
    ] {
        let got = refusal(expr);
        assert!(got.contains(shown), "{expr:?}: {got:?} lacks {shown:?}");
        assert!(!got.chars().any(char::is_control), "{expr:?}: {got:?}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
    /// Whatever the expression, a refusal holds no control character.
    #[test]
    fn no_refusal_prints_a_control_character(expr in "[ -~\\x00-\\x1f\\x7f\\u{80}-\\u{9f}@#*/,0-9a-z-]{0,40}") {
        if let Err(e) = CronSchedule::parse(&expr) {
            let text = e.to_string();
            proptest::prop_assert!(!text.chars().any(char::is_control), "{:?}: {:?}", expr, text);
        }
    }
}

#[test]
fn accepted_edge_cases() {
    for expr in [
        "0 0 29 2 *",
        "0 0 30 2 mon",
        "0 0 31 1-12 *",
        "0 0 * * 0-7",
        "0 0 * * sun-sat",
        "0 0 1 Jan-DEC *",
        "\t0  0 *\t* *  ",
        "59 23 31 12 7",
    ] {
        let schedule = CronSchedule::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        assert_eq!(schedule.expr(), expr);
        assert_eq!(schedule.to_string(), expr);
        assert!(
            schedule
                .next_after(at("2024-01-01T00:00:00Z"), AMS)
                .is_some(),
            "{expr}"
        );
    }
}

#[test]
fn preview_lists_the_next_fires_or_the_refusal() {
    let got: Vec<String> = preview("0 12 * * *", at("2024-03-01T13:00:00Z"), 3, AMS)
        .expect("valid")
        .iter()
        .map(|f| f.to_rfc3339())
        .collect();
    assert_eq!(
        got,
        [
            "2024-03-02T12:00:00+01:00",
            "2024-03-03T12:00:00+01:00",
            "2024-03-04T12:00:00+01:00",
        ]
    );
    assert!(
        preview("0 0 29 2 *", at("2096-03-01T00:00:00Z"), 3, Tz::UTC)
            .expect("valid")
            .is_empty()
    );
    let refused = preview("61 * * * *", at("2024-03-01T13:00:00Z"), 3, AMS);
    assert_eq!(
        refused.map_err(|e| e.to_string()),
        Err("minute: 61 is out of range 0-59".to_string())
    );
}
