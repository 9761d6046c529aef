//! Reading an expression the way Debian's cron (`entry.c`) reads it.
//!
//! Each field becomes a bit set (bit `n` set means value `n` matches) plus
//! the "starts with `*`" flag that cron keeps for the day rule and for telling
//! fixed-time jobs from clock-following ones. Everything Debian would refuse
//! is refused here too, and so is what Debian accepts but can never run.

use super::error::CronError;

/// The five fields, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FieldKind {
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
}

/// Three-letter month names; `jan` is 1.
const MONTH_NAMES: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// Three-letter day names; `sun` is 0.
const DAY_NAMES: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// The longest each month can be, February in a leap year included.
const MAX_DAYS_IN_MONTH: [u32; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/// How the five fields are named in messages.
const FIELD_LIST: &str = "minute hour day-of-month month day-of-week";

impl FieldKind {
    const ALL: [FieldKind; 5] = [
        FieldKind::Minute,
        FieldKind::Hour,
        FieldKind::DayOfMonth,
        FieldKind::Month,
        FieldKind::DayOfWeek,
    ];

    /// The name used in error messages.
    fn label(self) -> &'static str {
        match self {
            FieldKind::Minute => "minute",
            FieldKind::Hour => "hour",
            FieldKind::DayOfMonth => "day-of-month",
            FieldKind::Month => "month",
            FieldKind::DayOfWeek => "day-of-week",
        }
    }

    /// Inclusive bounds as written (day-of-week accepts 7 for Sunday).
    fn bounds(self) -> (u32, u32) {
        match self {
            FieldKind::Minute => (0, 59),
            FieldKind::Hour => (0, 23),
            FieldKind::DayOfMonth => (1, 31),
            FieldKind::Month => (1, 12),
            FieldKind::DayOfWeek => (0, 7),
        }
    }

    /// The value of a three-letter name, for the fields that have names.
    fn value_of_name(self, token: &str) -> Option<u32> {
        let (names, first): (&[&str], u32) = match self {
            FieldKind::Month => (&MONTH_NAMES, 1),
            FieldKind::DayOfWeek => (&DAY_NAMES, 0),
            _ => return None,
        };
        // Debian compares with strcasecmp against the three-letter names only.
        let index = names.iter().position(|n| n.eq_ignore_ascii_case(token))?;
        u32::try_from(index).ok().map(|i| i + first)
    }
}

/// A parsed expression: one bit set per field and cron's `*` flags.
///
/// Day-of-week is stored with Sunday as bit 0 only (7 folded into 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fields {
    pub(super) minutes: u64,
    pub(super) hours: u64,
    pub(super) days_of_month: u64,
    pub(super) months: u64,
    pub(super) days_of_week: u64,
    /// The minute field starts with `*`.
    pub(super) minute_star: bool,
    /// The hour field starts with `*`.
    pub(super) hour_star: bool,
    /// The day-of-month field starts with `*`.
    pub(super) dom_star: bool,
    /// The day-of-week field starts with `*`.
    pub(super) dow_star: bool,
}

impl Fields {
    /// cron.c's test for a fixed-time job: neither minute nor hour starts
    /// with `*` (`MIN_STAR | HR_STAR` unset).
    pub(super) fn is_fixed_time(&self) -> bool {
        !(self.minute_star || self.hour_star)
    }

    /// cron.c ORs the day fields only when neither starts with `*`;
    /// otherwise it ANDs both bit sets.
    pub(super) fn days_ored(&self) -> bool {
        !(self.dom_star || self.dow_star)
    }
}

/// Parse a whole expression: five fields or one macro.
pub(super) fn parse_expression(expr: &str) -> Result<Fields, CronError> {
    let words: Vec<&str> = expr.split_whitespace().collect();
    let Some(first) = words.first() else {
        return Err(CronError(format!(
            "empty expression: expected five fields ({FIELD_LIST}) or a macro such as @daily"
        )));
    };
    if first.starts_with('@') {
        if words.len() > 1 {
            return Err(CronError(format!(
                "the macro {first:?} stands alone; found more after it"
            )));
        }
        let expanded = expand_macro(first)?;
        return parse_expression(expanded);
    }
    match words.len() {
        5 => {}
        6 => {
            return Err(CronError(format!(
                "found 6 fields, expected 5 ({FIELD_LIST}): a seconds field is not supported"
            )))
        }
        7 => {
            return Err(CronError(format!(
            "found 7 fields, expected 5 ({FIELD_LIST}): seconds and year fields are not supported"
        )))
        }
        n => {
            return Err(CronError(format!(
                "found {n} fields, expected 5 ({FIELD_LIST})"
            )))
        }
    }

    // Every field is checked so that one message names every problem.
    let mut problems = Vec::new();
    let mut parsed = [(0u64, false); 5];
    for ((kind, text), slot) in FieldKind::ALL.iter().zip(&words).zip(parsed.iter_mut()) {
        match parse_field(*kind, text) {
            Ok(field) => *slot = field,
            Err(why) => problems.push(format!("{}: {why}", kind.label())),
        }
    }
    if !problems.is_empty() {
        return Err(CronError(problems.join("; ")));
    }
    let [minute, hour, dom, month, dow] = parsed;
    let fields = Fields {
        minutes: minute.0,
        hours: hour.0,
        days_of_month: dom.0,
        months: month.0,
        days_of_week: dow.0,
        minute_star: minute.1,
        hour_star: hour.1,
        dom_star: dom.1,
        dow_star: dow.1,
    };
    check_can_fire(&fields, words[2], words[3])?;
    Ok(fields)
}

/// The five-field meaning of each macro Debian accepts (`entry.c`).
fn expand_macro(word: &str) -> Result<&'static str, CronError> {
    // Debian matches macros with strcmp: lowercase only.
    match word {
        "@yearly" | "@annually" => Ok("0 0 1 1 *"),
        "@monthly" => Ok("0 0 1 * *"),
        "@weekly" => Ok("0 0 * * 0"),
        "@daily" | "@midnight" => Ok("0 0 * * *"),
        "@hourly" => Ok("0 * * * *"),
        "@reboot" => Err(CronError(
            "@reboot is not supported: a scheduled step runs on a calendar, not at boot".into(),
        )),
        _ => Err(CronError(format!(
            "unknown macro {word:?}; accepted: @yearly @annually @monthly @weekly @daily \
             @midnight @hourly (lowercase)"
        ))),
    }
}

/// Parse one field into its bit set and whether it starts with `*`.
fn parse_field(kind: FieldKind, text: &str) -> Result<(u64, bool), String> {
    if let Some(c) = text
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '*' | '-' | '/' | ',')))
    {
        return Err(match c {
            '?' => "'?' is Quartz syntax, not Debian cron's; write '*'".to_string(),
            // The field may hold anything (ESC, BEL, NUL): quoted as Rust
            // quotes it, as every other field's message does.
            '#' => format!("'#' (nth weekday of the month) in {text:?} is not supported"),
            _ => format!("unexpected character {c:?} in {text:?}"),
        });
    }
    let mut bits = 0u64;
    for element in text.split(',') {
        if element.is_empty() {
            return Err(format!("empty element in the list '{text}'"));
        }
        bits |= parse_element(kind, element)?;
    }
    if kind == FieldKind::DayOfWeek && bits & (1 << 7) != 0 {
        // 0 and 7 are both Sunday.
        bits = (bits & !(1 << 7)) | 1;
    }
    Ok((bits, text.starts_with('*')))
}

/// One list element: `*`, `N`, `N-M`, each range optionally `/STEP`.
fn parse_element(kind: FieldKind, element: &str) -> Result<u64, String> {
    let (min, max) = kind.bounds();
    let (range, step) = match element.split_once('/') {
        Some((range, step)) => (range, Some(step)),
        None => (element, None),
    };
    let (low, high) = if range == "*" {
        (min, max)
    } else if range.contains('*') {
        return Err(format!("'{element}': '*' stands alone or as '*/STEP'"));
    } else if let Some((a, b)) = range.split_once('-') {
        let low = parse_value(kind, a, element)?;
        let high = parse_value(kind, b, element)?;
        if low > high {
            let sunday = if kind == FieldKind::DayOfWeek && high == 0 {
                " (Sunday is 0 here; 7 ends a range on Sunday, as in 5-7)"
            } else {
                ""
            };
            return Err(format!(
                "range '{range}' is reversed ({low} > {high}) and matches nothing, so it would \
                 never run (Debian cron accepts it and never runs it){sunday}"
            ));
        }
        (low, high)
    } else {
        let value = parse_value(kind, range, element)?;
        if let Some(step) = step {
            // Debian's get_range only takes a step after '*' or a range.
            return Err(format!(
                "'{element}': a step needs a range or '*' before it (write {value}-{max}/{step} \
                 or */{step}); Debian cron refuses '{element}' too"
            ));
        }
        (value, value)
    };
    let step = match step {
        None => 1,
        Some(step) => parse_step(step, element)?,
    };
    let mut bits = 0u64;
    let mut value = low;
    while value <= high {
        bits |= 1 << value;
        value = match value.checked_add(step) {
            Some(next) => next,
            None => break,
        };
    }
    Ok(bits)
}

/// A number or (for month and day-of-week) a three-letter name, in range.
fn parse_value(kind: FieldKind, token: &str, element: &str) -> Result<u32, String> {
    let (min, max) = kind.bounds();
    if token.is_empty() {
        return Err(format!("'{element}': a number is missing"));
    }
    if token.bytes().all(|b| b.is_ascii_digit()) {
        return match token.parse::<u32>() {
            Ok(value) if (min..=max).contains(&value) => Ok(value),
            _ => Err(format!("{token} is out of range {min}-{max}")),
        };
    }
    if let Some(value) = kind.value_of_name(token) {
        return Ok(value);
    }
    Err(describe_bad_token(kind, token))
}

/// The reason a token that is neither a number nor a known name is refused.
fn describe_bad_token(kind: FieldKind, token: &str) -> String {
    let (min, max) = kind.bounds();
    let upper = token.to_ascii_uppercase();
    let only = |allowed: &[u8]| {
        upper
            .bytes()
            .all(|b| b.is_ascii_digit() || allowed.contains(&b))
    };
    if matches!(kind, FieldKind::DayOfMonth | FieldKind::DayOfWeek) && only(b"LW") {
        if upper.contains('L') {
            return format!("'{token}': 'L' (last day) is Quartz syntax and not supported");
        }
        return format!("'{token}': 'W' (nearest weekday) is Quartz syntax and not supported");
    }
    match kind {
        FieldKind::Month => {
            format!("'{token}' is not a month name (jan..dec) or a number {min}-{max}")
        }
        FieldKind::DayOfWeek => {
            format!("'{token}' is not a day name (sun..sat, three letters) or a number {min}-{max}")
        }
        _ => format!("'{token}' is not a number"),
    }
}

/// The number after `/`.
fn parse_step(token: &str, element: &str) -> Result<u32, String> {
    if token.is_empty() {
        return Err(format!("'{element}': a step is missing after '/'"));
    }
    if !token.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("'{element}': step '{token}' is not a number"));
    }
    match token.parse::<u32>() {
        Ok(0) => Err(format!(
            "'{element}': step 0 never advances; it must be at least 1"
        )),
        Ok(step) => Ok(step),
        Err(_) => Err(format!("'{element}': step {token} is too large")),
    }
}

/// Refuse day-of-month and month fields that never meet on a real date.
///
/// Only the AND case can fail: when both day fields are restricted they are
/// ORed and any day-of-week occurs in every month; when day-of-month starts
/// with `*` it includes day 1. With day-of-week ANDed in, every real date
/// falls on each weekday in some year, so only the date itself matters.
fn check_can_fire(fields: &Fields, dom_text: &str, month_text: &str) -> Result<(), CronError> {
    if fields.days_ored() || fields.dom_star {
        return Ok(());
    }
    let exists = (1..=12u32).any(|month| {
        fields.months & (1 << month) != 0
            && (1..=MAX_DAYS_IN_MONTH[(month - 1) as usize])
                .any(|day| fields.days_of_month & (1 << day) != 0)
    });
    if exists {
        return Ok(());
    }
    let february = if fields.months & (1 << 2) != 0 {
        " (February has 29 days at most)"
    } else {
        ""
    };
    Err(CronError(format!(
        "day-of-month: '{dom_text}' never occurs in month '{month_text}', so the \
         expression never fires{february}"
    )))
}
