//! The `per = "..."` grammar: one or more `NUMBER UNIT` parts, units `ms`, `s`, `m`, `h`,
//! `d`, each unit at most once and from the largest down: `"500ms"`, `"30s"`, `"1h30m"`;
//! or a calendar period, a unit without a number: `"day"`, `"week"`, `"month"`.

/// The longest window a store keeps exactly (`limiter_core::Policy::MAX_WINDOW`): 7 days.
const MAX_WINDOW_MS: u64 = 7 * 86_400_000;

const UNITS: [(&str, u64); 5] = [
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// A calendar period (`"day"`, `"week"`, `"month"`): its name in `limiter_core`'s
/// `Period` and its longest length in ms (`Period::longest_ms`).
pub(crate) fn calendar(text: &str) -> Option<(&'static str, u64)> {
    match text {
        "day" => Some(("Day", 86_400_000)),
        "week" => Some(("Week", 7 * 86_400_000)),
        "month" => Some(("Month", 31 * 86_400_000)),
        _ => None,
    }
}

/// Parses a window into milliseconds, or says what is wrong and how to write it — with the
/// window the writer probably meant, when a common slip (`"1 minute"`, `"1min"`, `"30 secs"`)
/// makes one.
pub(crate) fn parse(text: &str) -> Result<u64, String> {
    parse_length(text, WINDOW).map_err(|message| match calendar_hint(text) {
        Some(hint) if message.ends_with('?') => format!("{message} {hint}"),
        Some(hint) => format!("{message}; {hint}"),
        None => message,
    })
}

/// What a window that reads like a calendar period stands for: a month, a week, a day as
/// the calendar counts them (`"month"`), or a rolling length (`"7d"`).
fn calendar_hint(text: &str) -> Option<&'static str> {
    let plain: String = text.chars().filter(|c| c.is_ascii_alphabetic()).collect();
    let digits = text.chars().any(|c| c.is_ascii_digit());
    Some(match plain.to_ascii_lowercase().as_str() {
        // `M` is no unit: `m` is a minute; a month is the calendar's.
        "m" if plain == "M" => "(a minute; a month is per = \"month\", on the calendar)",
        "mo" | "mon" | "month" | "months" | "monthly" => {
            "a month is per = \"month\", counted on the calendar"
        }
        "w" | "wk" | "week" | "weeks" | "weekly" if digits => {
            "a week is per = \"week\" (on the calendar, from Monday) or \"7d\" (rolling); a \
             longer rolling window is a quota: per = \"month\""
        }
        "w" | "wk" | "week" | "weeks" | "weekly" => {
            "a week is per = \"week\" (on the calendar, from Monday) or \"7d\" (rolling)"
        }
        "daily" => "a day is per = \"day\" (on the calendar) or \"1d\" (rolling)",
        "hourly" => "an hour is per = \"1h\"",
        _ => return None,
    })
}

/// What a length is, for its errors: its noun, the longest one (ms) and how to say it.
pub(crate) struct Length {
    pub(crate) noun: &'static str,
    pub(crate) longest_ms: u64,
    pub(crate) longest: &'static str,
}

const WINDOW: Length = Length {
    noun: "window",
    longest_ms: MAX_WINDOW_MS,
    longest: "7d (a longer \"rate\" is a quota: per = \"month\", \"week\" or \"day\" counts one on the calendar)",
};

/// Parses a length of the window's grammar (a block's, say) into milliseconds, with the
/// same errors and suggestions as a window's.
pub(crate) fn parse_length(text: &str, length: Length) -> Result<u64, String> {
    let exact = |text: &str| parse_exact(text, &length);
    exact(text).map_err(|message| match suggestion(text, exact) {
        Some(meant) => format!("{message}; did you mean \"{meant}\"?"),
        None => message,
    })
}

/// The window a slip most likely stands for: spaces removed, long unit names shortened.
fn suggestion(text: &str, exact: impl Fn(&str) -> Result<u64, String>) -> Option<String> {
    const LONG_UNITS: [(&str, &str); 20] = [
        ("milliseconds", "ms"),
        ("millisecond", "ms"),
        ("millis", "ms"),
        ("msecs", "ms"),
        ("msec", "ms"),
        ("seconds", "s"),
        ("second", "s"),
        ("secs", "s"),
        ("sec", "s"),
        ("minutes", "m"),
        ("minute", "m"),
        ("mins", "m"),
        ("min", "m"),
        ("hours", "h"),
        ("hour", "h"),
        ("hrs", "h"),
        ("hr", "h"),
        ("days", "d"),
        ("day", "d"),
        ("and", ""),
    ];
    let mut meant: String = text
        .to_ascii_lowercase()
        .chars()
        .filter(|c| !c.is_whitespace() && *c != ',')
        .collect();
    for (long, short) in LONG_UNITS {
        meant = meant.replace(long, short);
    }
    (meant != text && exact(&meant).is_ok()).then_some(meant)
}

fn parse_exact(text: &str, length: &Length) -> Result<u64, String> {
    let Length {
        noun,
        longest_ms,
        longest,
    } = length;
    const HINT: &str =
        "write a number and a unit (ms, s, m, h, d), e.g. \"30s\", \"1m\" or \"1h30m\"";
    if text.trim().is_empty() {
        return Err(format!("the {noun} is empty: {HINT}"));
    }
    let mut rest = text;
    let mut total: u64 = 0;
    let mut last_rank: Option<usize> = None;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return Err(format!(
                "expected a number at `{rest}` in \"{text}\": {HINT}"
            ));
        }
        let number: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("the number `{}` is too large", &rest[..digits]))?;
        rest = &rest[digits..];
        let unit_len = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .len();
        let unit = &rest[..unit_len];
        if unit.is_empty() && rest.starts_with(char::is_whitespace) {
            return Err(format!(
                "\"{text}\" has a space after the number {number}: write the number and its \
                 unit together, with a unit of ms, s, m, h or d, e.g. \"30s\", \"1m\" or \"1h30m\""
            ));
        }
        if unit.is_empty() {
            return Err(format!(
                "the number {number} in \"{text}\" has no unit: {HINT}"
            ));
        }
        let Some(rank) = UNITS.iter().position(|(name, _)| *name == unit) else {
            return Err(format!("unknown unit `{unit}` in \"{text}\": {HINT}"));
        };
        if last_rank.is_some_and(|last| rank <= last) {
            return Err(format!(
                "units in \"{text}\" must go from the largest to the smallest, each once, e.g. \"1h30m\""
            ));
        }
        last_rank = Some(rank);
        rest = &rest[unit_len..];
        total = number
            .checked_mul(UNITS[rank].1)
            .and_then(|part| total.checked_add(part))
            .ok_or_else(|| {
                format!("the {noun} \"{text}\" is too long: the longest is {longest}")
            })?;
    }
    if total == 0 {
        return Err(format!(
            "the {noun} \"{text}\" is zero: it must last at least 1ms"
        ));
    }
    if total > *longest_ms {
        return Err(format!(
            "the {noun} \"{text}\" is too long: the longest is {longest}"
        ));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::parse;

    /// A window that reads like a calendar period is told what it stands for: `M` is no
    /// unit (a minute is `m`, a month the calendar's), `"monthly"`, `"2w"`.
    #[test]
    fn calendar_slips_are_told_the_calendar_periods() {
        let month = parse("1M").unwrap_err();
        assert!(
            month.contains("did you mean \"1m\"") && month.contains("per = \"month\""),
            "{month}"
        );
        let monthly = parse("monthly").unwrap_err();
        assert!(monthly.contains("per = \"month\""), "{monthly}");
        let weeks = parse("2w").unwrap_err();
        assert!(
            weeks.contains("per = \"week\"") && weeks.contains("\"7d\""),
            "{weeks}"
        );
        assert!(parse("daily").unwrap_err().contains("per = \"day\""));
        // Not every slip is a calendar's.
        assert!(!parse("1x").unwrap_err().contains("calendar"));
    }

    #[test]
    fn accepts_the_documented_forms() {
        assert_eq!(parse("500ms"), Ok(500));
        assert_eq!(parse("30s"), Ok(30_000));
        assert_eq!(parse("1m"), Ok(60_000));
        assert_eq!(parse("1h30m"), Ok(5_400_000));
        assert_eq!(parse("1d"), Ok(86_400_000));
        assert_eq!(parse("1m30s250ms"), Ok(90_250));
        assert_eq!(parse("7d"), Ok(7 * 86_400_000));
    }

    #[test]
    fn refuses_with_the_fix_in_words() {
        let err = |text| parse(text).unwrap_err();
        assert!(err("").contains("empty"));
        assert!(err("1x").contains("unknown unit `x`"));
        assert!(err("0s").contains("zero"));
        assert!(err("m").contains("expected a number"));
        assert!(err("10").contains("has no unit"));
        assert!(err("1 minute").contains("has a space after the number 1"));
        assert!(!err("1 minute").contains("no unit"));
        assert!(err("30m1h").contains("largest to the smallest"));
        assert!(err("1m1m").contains("largest to the smallest"));
        assert!(err("99999999999999999999d").contains("too large"));
        assert!(err("999999999999d").contains("too long"));
        assert!(err("8d").contains("too long"));
        assert!(err("1 m").contains("a space after the number"));
    }

    #[test]
    fn common_slips_get_the_window_they_meant() {
        let err = |text| parse(text).unwrap_err();
        assert!(
            err("1 minute").ends_with("did you mean \"1m\"?"),
            "{}",
            err("1 minute")
        );
        assert!(err("1min").ends_with("did you mean \"1m\"?"));
        assert!(err("30 secs").ends_with("did you mean \"30s\"?"));
        assert!(err("1 hour 30 minutes").ends_with("did you mean \"1h30m\"?"));
        assert!(err("2 Days").ends_with("did you mean \"2d\"?"));
        assert!(!err("1x").contains("did you mean"));
        assert!(
            !err("8 days").contains("did you mean"),
            "too long either way"
        );
    }
}
