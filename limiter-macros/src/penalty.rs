//! `block = "15m"` and `penalty = "3 in 1h -> 1d"`: how long a client the limit rejects is
//! refused outright, and the longer block of a repeat offender; and `jitter = "1s"`, the
//! random part added to a rejection's wait.

use syn::Expr;

use crate::ast::{Escalation, Spanned};
use crate::errors::Errors;
use crate::period::{parse_length, Length};
use crate::values::string;

/// The longest block, and escalation window (`limiter_core::Penalty::MAX_BLOCK`): 30 days.
const MAX_BLOCK_MS: u64 = 30 * 86_400_000;
/// The most past blocks an escalation counts (`limiter_core::Penalty::MAX_STRIKES`).
const MAX_STRIKES: u32 = 16;

const BLOCK: Length = Length {
    noun: "block",
    longest_ms: MAX_BLOCK_MS,
    longest: "30d",
};

/// `block = "15m"`: the block in milliseconds.
pub(crate) fn parse_block(value: &Expr, errors: &mut Errors) -> Option<Spanned<u64>> {
    let what = "`block` (how long a rejected client is refused, e.g. \"15m\")";
    parse_span(value, what, BLOCK, errors)
}

/// `jitter = "1s"`: up to an hour, in milliseconds.
pub(crate) fn parse_jitter(value: &Expr, errors: &mut Errors) -> Option<Spanned<u64>> {
    let what = "`jitter` (the most added to a rejection's wait at random, e.g. \"1s\")";
    let jitter = Length {
        noun: "jitter",
        longest_ms: 3_600_000,
        longest: "1h",
    };
    parse_span(value, what, jitter, errors)
}

/// `delay = "2s"`: up to a minute, in milliseconds.
pub(crate) fn parse_delay(value: &Expr, errors: &mut Errors) -> Option<Spanned<u64>> {
    let what = "`delay` (how long a refused request may wait for its turn instead, e.g. \"2s\")";
    let delay = Length {
        noun: "delay",
        longest_ms: 60_000,
        longest: "1m",
    };
    parse_span(value, what, delay, errors)
}

/// A length of the window's grammar, in ms, as a string literal naming `what` it is.
fn parse_span(
    value: &Expr,
    what: &str,
    length: Length,
    errors: &mut Errors,
) -> Option<Spanned<u64>> {
    let text = string(value, what, errors)?;
    match parse_length(&text.value(), length) {
        Ok(ms) => Some(Spanned {
            value: ms,
            span: text.span(),
        }),
        Err(message) => {
            errors.at(&text, message);
            None
        }
    }
}

/// `penalty = "3 in 1h -> 1d"`.
pub(crate) fn parse_penalty(value: &Expr, errors: &mut Errors) -> Option<Spanned<Escalation>> {
    let text = string(
        value,
        "`penalty` (a longer block for repeat offenders, e.g. \"3 in 1h -> 1d\")",
        errors,
    )?;
    match escalation(&text.value()) {
        Ok(value) => Some(Spanned {
            value,
            span: text.span(),
        }),
        Err(message) => {
            errors.at(&text, message);
            None
        }
    }
}

fn escalation(text: &str) -> Result<Escalation, String> {
    const FORM: &str = "write `N in WINDOW -> BLOCK`, e.g. \"3 in 1h -> 1d\": after 3 blocks within an hour, the next lasts a day";
    let Some((count, rest)) = text.split_once(" in ") else {
        return Err(format!("\"{text}\" is not an escalation: {FORM}"));
    };
    let Some((within, block)) = rest.split_once("->") else {
        return Err(format!(
            "\"{text}\" has no `->` before the longer block: {FORM}"
        ));
    };
    let after: u32 = count
        .trim()
        .parse()
        .map_err(|_| format!("\"{}\" is not a number of blocks: {FORM}", count.trim()))?;
    if after == 0 || after > MAX_STRIKES {
        return Err(format!(
            "an escalation counts 1 to {MAX_STRIKES} past blocks, got {after}"
        ));
    }
    let within_ms = parse_length(
        within.trim(),
        Length {
            noun: "escalation's window",
            ..BLOCK
        },
    )?;
    let block_ms = parse_length(block.trim(), BLOCK)?;
    Ok(Escalation {
        after,
        within_ms,
        block_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::escalation;

    #[test]
    fn reads_the_documented_form() {
        let e = escalation("3 in 1h -> 1d").unwrap();
        assert_eq!(
            (e.after, e.within_ms, e.block_ms),
            (3, 3_600_000, 86_400_000)
        );
        let e = escalation("1 in 10m->2h").unwrap();
        assert_eq!((e.after, e.within_ms, e.block_ms), (1, 600_000, 7_200_000));
    }

    #[test]
    fn refuses_with_the_fix_in_words() {
        let err = |text| escalation(text).err().unwrap();
        assert!(err("3 per 1h -> 1d").contains("N in WINDOW -> BLOCK"));
        assert!(err("3 in 1h 1d").contains("no `->`"));
        assert!(err("three in 1h -> 1d").contains("not a number of blocks"));
        assert!(err("0 in 1h -> 1d").contains("1 to 16"));
        assert!(err("3 in 1h -> 31d").contains("the longest is 30d"));
        assert!(err("3 in 1 hour -> 1d").contains("did you mean \"1h\""));
    }
}
