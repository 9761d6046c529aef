//! The engine against an independent, minute-by-minute simulation of
//! Debian's cron.c main loop, on generated expressions, plus `parse` on
//! arbitrary text.
//!
//! The simulation shares no code with the engine: its own parser, its own
//! matcher, and a loop that wakes at every UTC minute, reads the wall clock
//! and does what cron.c does with the difference from its virtual time.

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, Offset, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use proptest::prelude::*;

use super::CronSchedule;

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
/// Field bounds as written: minute, hour, day-of-month, month, day-of-week.
const BOUNDS: [(u32, u32); 5] = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)];

/// A Debian crontab time spec read the simple way.
struct Spec {
    /// `sets[field][value]`.
    sets: [[bool; 64]; 5],
    /// Field text starts with `*`.
    stars: [bool; 5],
}

impl Spec {
    /// Reads the generated grammar only; validity is the engine's business.
    fn read(expr: &str) -> Spec {
        let expr = match expr {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        let words: Vec<&str> = expr.split_whitespace().collect();
        assert_eq!(words.len(), 5, "generated {expr:?}");
        let mut spec = Spec {
            sets: [[false; 64]; 5],
            stars: [false; 5],
        };
        for (field, word) in words.iter().enumerate() {
            spec.stars[field] = word.starts_with('*');
            for part in word.split(',') {
                let (range, step) = match part.split_once('/') {
                    Some((range, step)) => (range, step.parse::<u32>().expect("step")),
                    None => (part, 1),
                };
                let (low, high) = if range == "*" {
                    BOUNDS[field]
                } else if let Some((a, b)) = range.split_once('-') {
                    (value(field, a), value(field, b))
                } else {
                    (value(field, range), value(field, range))
                };
                let mut v = low;
                while v <= high {
                    spec.sets[field][v as usize] = true;
                    v += step;
                }
            }
        }
        if spec.sets[4][7] {
            spec.sets[4][0] = true;
        }
        spec
    }

    /// cron.c's `MIN_STAR | HR_STAR`.
    fn wildcard(&self) -> bool {
        self.stars[0] || self.stars[1]
    }

    fn day_matches(&self, date: NaiveDate) -> bool {
        let dom = self.sets[2][date.day() as usize];
        let dow = self.sets[4][date.weekday().num_days_from_sunday() as usize];
        let month = self.sets[3][date.month() as usize];
        month
            && if self.stars[2] || self.stars[4] {
                dom && dow
            } else {
                dom || dow
            }
    }

    fn matches(&self, wall: NaiveDateTime) -> bool {
        self.sets[0][wall.minute() as usize]
            && self.sets[1][wall.hour() as usize]
            && self.day_matches(wall.date())
    }
}

fn value(field: usize, text: &str) -> u32 {
    if let Ok(n) = text.parse() {
        return n;
    }
    let lower = text.to_ascii_lowercase();
    match field {
        3 => MONTHS.iter().position(|m| *m == lower).expect("month name") as u32 + 1,
        4 => DAYS.iter().position(|d| *d == lower).expect("day name") as u32,
        _ => panic!("no names in field {field}"),
    }
}

fn offset(zone: Tz, t: i64) -> i64 {
    let instant = DateTime::from_timestamp(t, 0).expect("in range");
    i64::from(
        zone.offset_from_utc_datetime(&instant.naive_utc())
            .fix()
            .local_minus_utc(),
    )
}

/// Wall-clock minutes since the epoch's wall clock at instant `t`, as cron.c
/// computes `clockTime`.
fn wall_minute(zone: Tz, t: i64) -> i64 {
    (t + offset(zone, t)).div_euclid(60)
}

fn wall(minute: i64) -> NaiveDateTime {
    DateTime::from_timestamp(minute * 60, 0)
        .expect("in range")
        .naive_utc()
}

/// Fires in `(after, until]` (at most `max`), by running cron.c's loop once
/// per UTC minute from a day before `after`.
fn simulate(spec: &Spec, zone: Tz, after: i64, until: i64, max: usize) -> Vec<i64> {
    let mut t = (after - 86_400).div_euclid(60) * 60;
    let mut virtual_time = wall_minute(zone, t);
    let mut out = Vec::new();
    while t < until && out.len() < max {
        t += 60;
        let running = wall_minute(zone, t);
        let diff = running - virtual_time;
        // Only DST-sized changes occur in these zones: no "small" (late
        // wake-up) or "large" (> 3 h) cases of cron.c.
        assert!(diff == 1 || (6..=180).contains(&diff) || (-180..=0).contains(&diff));
        let fire = if diff == 1 {
            virtual_time = running;
            spec.matches(wall(running))
        } else if diff > 1 {
            // "medium": wildcard jobs for now, fixed-time jobs for every
            // minute missed, up to and including now.
            let wild = spec.wildcard() && spec.matches(wall(running));
            let fixed =
                !spec.wildcard() && (virtual_time + 1..=running).any(|v| spec.matches(wall(v)));
            virtual_time = running;
            wild || fixed
        } else {
            // "negative": wildcard jobs only; virtual time waits.
            spec.wildcard() && spec.matches(wall(running))
        };
        if fire && t > after && t <= until {
            out.push(t);
        }
    }
    out
}

/// Deterministic xorshift64*, so a failure names a reproducible case.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn between(&mut self, low: u32, high: u32) -> u32 {
        low + self.below(u64::from(high - low + 1)) as u32
    }
    fn percent(&mut self, p: u64) -> bool {
        self.below(100) < p
    }
}

/// One list element of `field`, never reversed.
fn element(rng: &mut Rng, field: usize) -> String {
    let (min, max) = BOUNDS[field];
    let name = |rng: &mut Rng, v: u32| -> String {
        let word = match field {
            3 => MONTHS[(v - 1) as usize].to_string(),
            4 if v < 7 => DAYS[v as usize].to_string(),
            _ => return v.to_string(),
        };
        if rng.percent(30) {
            word.to_ascii_uppercase()
        } else {
            word
        }
    };
    let named = |rng: &mut Rng, v: u32| {
        if field >= 3 && rng.percent(40) {
            name(rng, v)
        } else {
            v.to_string()
        }
    };
    let a = rng.between(min, max);
    let b = rng.between(a, max);
    let step = rng.between(1, (max - min) / 2 + 1);
    match rng.below(4) {
        0 => named(rng, a),
        1 => format!("{}-{}", named(rng, a), named(rng, b)),
        2 => format!("{a}-{b}/{step}"),
        _ if field == 2 => format!("{}", rng.between(27, 31)),
        _ => named(rng, a),
    }
}

/// A field; `star` is the chance in percent that it starts with `*`.
fn field(rng: &mut Rng, field: usize, star: u64) -> String {
    if rng.percent(star) {
        if rng.percent(25) {
            let (min, max) = BOUNDS[field];
            return format!("*/{}", rng.between(1, (max - min) / 2 + 1));
        }
        return "*".into();
    }
    let count = if rng.percent(30) {
        rng.between(2, 3)
    } else {
        1
    };
    (0..count)
        .map(|_| element(rng, field))
        .collect::<Vec<_>>()
        .join(",")
}

/// An expression; `day_star` is the chance that each day field starts with `*`.
fn expression(rng: &mut Rng, day_star: u64) -> String {
    if rng.percent(4) {
        let macros = [
            "@yearly",
            "@annually",
            "@monthly",
            "@weekly",
            "@daily",
            "@midnight",
            "@hourly",
        ];
        return macros[rng.below(macros.len() as u64) as usize].into();
    }
    format!(
        "{} {} {} {} {}",
        field(rng, 0, 35),
        field(rng, 1, 45),
        field(rng, 2, day_star),
        field(rng, 3, 75),
        field(rng, 4, day_star),
    )
}

/// Late days in short months, some of which never occur (`0 0 30 2 *`).
fn short_month_ends(rng: &mut Rng) -> String {
    let short = ["2", "feb", "4", "apr", "6", "jun", "9", "sep", "11", "nov"];
    let mut months: Vec<&str> = (0..rng.between(1, 2))
        .map(|_| short[rng.below(short.len() as u64) as usize])
        .collect();
    months.dedup();
    let days = if rng.percent(50) {
        rng.between(29, 31).to_string()
    } else {
        format!("{}-31", rng.between(29, 31))
    };
    format!(
        "{} {} {days} {} *",
        rng.between(0, 59),
        rng.between(0, 23),
        months.join(",")
    )
}

/// Instants (Unix seconds) at which `zone` changes offset in [from, to).
fn transitions(zone: Tz, from: i64, to: i64) -> Vec<i64> {
    let mut found = Vec::new();
    let mut t = from;
    while t < to {
        let next = t + 3600;
        if offset(zone, t) != offset(zone, next) {
            let (mut low, mut high) = (t, next);
            while high - low > 1 {
                let mid = (low + high) / 2;
                if offset(zone, mid) == offset(zone, t) {
                    low = mid;
                } else {
                    high = mid;
                }
            }
            found.push(high);
        }
        t = next;
    }
    found
}

fn rfc(zone: Tz, t: i64) -> String {
    DateTime::from_timestamp(t, 0)
        .expect("in range")
        .with_timezone(&zone)
        .to_rfc3339()
}

#[test]
fn next_fires_match_a_simulation_of_cron_c() {
    const HORIZON: i64 = 3 * 86_400;
    const FIRES: usize = 4;
    let from = Utc
        .with_ymd_and_hms(2024, 1, 1, 0, 0, 0)
        .unwrap()
        .timestamp();
    let to = Utc
        .with_ymd_and_hms(2027, 1, 1, 0, 0, 0)
        .unwrap()
        .timestamp();
    // Lord Howe moves its clock by 30 minutes.
    let zones = [
        Tz::UTC,
        Tz::Europe__Amsterdam,
        Tz::America__New_York,
        Tz::Australia__Lord_Howe,
    ];
    let changes: Vec<Vec<i64>> = zones.iter().map(|z| transitions(*z, from, to)).collect();
    assert!(
        changes[1].len() == 6 && changes[3].len() == 6,
        "DST zones change twice a year"
    );

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut compared = 0;
    let mut through_changes = 0;
    for _ in 0..500 {
        let expr = expression(&mut rng, 60);
        let Ok(schedule) = CronSchedule::parse(&expr) else {
            continue;
        };
        let spec = Spec::read(&expr);
        let pick = rng.below(zones.len() as u64) as usize;
        let zone = zones[pick];
        let mut starts = vec![from + rng.below((to - from - HORIZON) as u64) as i64];
        if !changes[pick].is_empty() {
            // Near a change: up to a day before it, or inside the next hour.
            for _ in 0..2 {
                let change = changes[pick][rng.below(changes[pick].len() as u64) as usize];
                starts.push(change - 86_400 + rng.below(86_400 + 3600) as i64);
            }
        }
        for start in starts {
            // Sub-seconds must not matter.
            let after =
                DateTime::from_timestamp(start, rng.below(1_000_000_000) as u32).expect("in range");
            let expected = simulate(&spec, zone, start, start + HORIZON, FIRES);
            let got: Vec<i64> = schedule
                .upcoming(after, zone)
                .map(|f| f.timestamp())
                .take_while(|f| *f <= start + HORIZON)
                .take(FIRES)
                .collect();
            assert_eq!(
                got.iter().map(|t| rfc(zone, *t)).collect::<Vec<_>>(),
                expected.iter().map(|t| rfc(zone, *t)).collect::<Vec<_>>(),
                "{expr:?} in {zone} after {}",
                rfc(zone, start)
            );
            compared += 1;
            if changes[pick]
                .iter()
                .any(|c| (start..start + HORIZON).contains(c))
            {
                through_changes += 1;
            }
        }
    }
    assert!(compared >= 1000, "compared only {compared} queries");
    assert!(
        through_changes >= 300,
        "only {through_changes} queries crossed a change"
    );
}

#[test]
fn day_rules_match_a_day_by_day_search_over_decades() {
    // Sparse day fields, long horizons: the day rule, month ends, leap years.
    const YEARS: i64 = 12;
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let epoch = NaiveDate::from_ymd_opt(2000, 1, 1).expect("valid");
    let mut accepted = 0;
    let mut refused = 0;
    for round in 0..400 {
        let expr = if round % 8 == 0 {
            short_month_ends(&mut rng)
        } else {
            expression(&mut rng, 25)
        };
        let spec = Spec::read(&expr);
        // Any real date matching within 28 years (every date on every
        // weekday, February 29 included) means the expression can fire.
        let can_fire = (0..28 * 366)
            .filter_map(|d| epoch.checked_add_days(chrono::Days::new(d)))
            .any(|date| spec.day_matches(date));
        let schedule = match CronSchedule::parse(&expr) {
            Ok(schedule) => schedule,
            Err(e) => {
                assert!(!can_fire, "{expr:?} refused ({e}) yet it can fire");
                assert!(e.to_string().contains("never fires"), "{expr:?}: {e}");
                refused += 1;
                continue;
            }
        };
        assert!(can_fire, "{expr:?} accepted yet it never fires");
        accepted += 1;
        for _ in 0..3 {
            let start = Utc
                .with_ymd_and_hms(2000, 1, 1, 0, 0, 0)
                .unwrap()
                .timestamp()
                + rng.below(88 * 365 * 86_400) as i64;
            let after = DateTime::from_timestamp(start, 0).expect("in range");
            let until = start + YEARS * 366 * 86_400;
            let mut expected = None;
            let mut date = after.date_naive();
            'days: while date
                .and_hms_opt(0, 0, 0)
                .expect("midnight")
                .and_utc()
                .timestamp()
                <= until
            {
                if spec.day_matches(date) {
                    for minute in 0..24 * 60 {
                        let t = date
                            .and_hms_opt(minute / 60, minute % 60, 0)
                            .expect("valid");
                        if t.and_utc().timestamp() > start && spec.matches(t) {
                            expected = Some(t.and_utc().timestamp());
                            break 'days;
                        }
                    }
                }
                date = date.succ_opt().expect("in range");
            }
            let got = schedule.next_after(after, Tz::UTC).map(|f| f.timestamp());
            match expected {
                Some(t) => assert_eq!(got, Some(t), "{expr:?} after {after}"),
                // Nothing within the horizon: the engine must agree.
                None => assert!(
                    got.is_none_or(|g| g > until),
                    "{expr:?} after {after}: {got:?}"
                ),
            }
        }
    }
    assert!(
        accepted >= 300 && refused >= 3,
        "accepted {accepted}, refused {refused}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn parse_never_panics_on_any_text(text in "\\PC{0,40}") {
        check_any(&text)?;
    }

    #[test]
    fn parse_never_panics_on_cron_like_text(text in "[0-9*/,@? #LW~a-zA-Z-]{0,30}") {
        check_any(&text)?;
    }
}

/// Whatever the text, `parse` answers; what it accepts yields sane fires.
fn check_any(text: &str) -> Result<(), TestCaseError> {
    match CronSchedule::parse(text) {
        Ok(schedule) => {
            prop_assert_eq!(schedule.expr(), text);
            let after = Utc.with_ymd_and_hms(2024, 10, 26, 23, 0, 0).unwrap();
            if let Some(next) = schedule.next_after(after, Tz::Europe__Amsterdam) {
                prop_assert!(next.with_timezone(&Utc) > after);
            }
        }
        Err(e) => prop_assert!(!e.to_string().is_empty()),
    }
    Ok(())
}
