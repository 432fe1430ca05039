//! `enforce = "10%"`: the share of clients a limit is enforced on, read when compiled.

use syn::Expr;

use crate::ast::Spanned;
use crate::errors::Errors;
use crate::values::string;

/// `enforce = "10%"`: a share of the clients in percent, 0 to 100, to four decimals (a
/// millionth); in millionths.
pub(crate) fn parse_share(value: &Expr, errors: &mut Errors) -> Option<Spanned<u32>> {
    let text = string(
        value,
        "`enforce` (a share of clients, e.g. \"10%\")",
        errors,
    )?;
    let written = text.value();
    let fail = |errors: &mut Errors, why: String| {
        errors.at(&text, why);
        None
    };
    let Some(number) = written.trim().strip_suffix('%') else {
        let meant = match written.trim().parse::<f64>() {
            Ok(n) if (0.0..=1.0).contains(&n) && n.fract() != 0.0 => {
                let percent = (n * 1_000_000.0).round() / 10_000.0;
                format!("; a fraction? did you mean \"{percent}%\"?")
            }
            Ok(n) => format!("; did you mean \"{n}%\"?"),
            Err(_) => String::new(),
        };
        return fail(
            errors,
            format!("`enforce` is a share of clients in percent, e.g. \"10%\"{meant}"),
        );
    };
    let (whole, part) = number
        .trim_end()
        .split_once('.')
        .unwrap_or((number.trim_end(), ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !(part.is_empty() || digits(part)) {
        return fail(
            errors,
            format!(
                "`enforce` takes a number from 0 to 100 and %, e.g. \"10%\", not \"{written}\""
            ),
        );
    }
    if part.len() > 4 {
        return fail(
            errors,
            format!("\"{written}\" has more than four decimals: a share counts millionths of the clients"),
        );
    }
    let share = whole
        .parse::<u32>()
        .ok()
        .and_then(|whole| whole.checked_mul(10_000))
        .and_then(|whole| whole.checked_add(format!("{part:0<4}").parse::<u32>().unwrap_or(0)));
    match share {
        Some(share) if share <= 1_000_000 => Some(Spanned {
            value: share,
            span: text.span(),
        }),
        _ => fail(
            errors,
            format!("\"{written}\" is more than every client: give a share from 0% to 100%"),
        ),
    }
}
