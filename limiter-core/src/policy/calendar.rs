//! The calendar a quota counts by: a period (day, week from Monday, month) and an offset
//! from UTC, and where each period starts and ends (see `algorithm::calendar` for how a
//! quota counts within them).

use std::fmt;

pub(crate) const DAY_MS: u64 = 86_400_000;

/// The calendar periods a quota resets at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Period {
    /// From midnight to midnight.
    Day,
    /// From Monday midnight to Monday midnight (ISO weeks).
    Week,
    /// From the first of the month at midnight to the first of the next.
    Month,
}

impl Period {
    /// The name `per = "..."` takes: `day`, `week`, `month`.
    pub const fn name(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Week => "week",
            Period::Month => "month",
        }
    }

    /// The period with that name, if there is one.
    pub fn from_name(name: &str) -> Option<Period> {
        [Period::Day, Period::Week, Period::Month]
            .into_iter()
            .find(|p| p.name() == name)
    }

    /// The longest such period in ms (a month of 31 days): the window the RateLimit fields
    /// announce, so that a client pacing itself by `q / w` never sends more than allowed.
    pub const fn longest_ms(self) -> u64 {
        match self {
            Period::Day => DAY_MS,
            Period::Week => 7 * DAY_MS,
            Period::Month => 31 * DAY_MS,
        }
    }
}

/// A calendar period at an offset from UTC: where a quota's periods begin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Calendar {
    period: Period,
    /// Minutes east of UTC, within ±14 hours.
    offset_min: i16,
}

impl Calendar {
    /// The largest offset from UTC: 14 hours, in minutes (UTC+14 exists; UTC−12 is the
    /// lowest in use).
    pub const MAX_OFFSET_MIN: i16 = 14 * 60;

    /// `period` in UTC.
    pub const fn utc(period: Period) -> Calendar {
        Calendar {
            period,
            offset_min: 0,
        }
    }

    /// `period` at `minutes` east of UTC (negative: west), or `None` beyond ±14 hours.
    pub const fn at_offset(period: Period, minutes: i16) -> Option<Calendar> {
        if minutes > Calendar::MAX_OFFSET_MIN || minutes < -Calendar::MAX_OFFSET_MIN {
            return None;
        }
        Some(Calendar {
            period,
            offset_min: minutes,
        })
    }

    /// The period.
    pub const fn period(&self) -> Period {
        self.period
    }

    /// Minutes east of UTC.
    pub const fn offset_minutes(&self) -> i16 {
        self.offset_min
    }

    /// The number of the period that holds the Unix instant `now_ms`, counted from the one
    /// that holds 1970-01-01 (local time). Instants before then count as period 0.
    pub fn index(&self, now_ms: u64) -> u32 {
        let local = self.local_ms(now_ms);
        let day = (local / DAY_MS) as i64;
        let index = match self.period {
            Period::Day => day,
            // 1970-01-01 was a Thursday: the Monday of its week is day −3.
            Period::Week => (day + 3).div_euclid(7),
            Period::Month => {
                let (year, month) = civil_from_days(day);
                (year - 1970) * 12 + (month - 1)
            }
        };
        index.clamp(0, i64::from(u32::MAX)) as u32
    }

    /// The Unix instant (ms) at which period `index` begins.
    pub fn start_ms(&self, index: u32) -> u64 {
        let index = i64::from(index);
        let day = match self.period {
            Period::Day => index,
            Period::Week => index * 7 - 3,
            Period::Month => days_from_civil(1970 + index.div_euclid(12), index.rem_euclid(12) + 1),
        };
        let offset = i64::from(self.offset_min) * 60_000;
        (day * DAY_MS as i64 - offset).max(0) as u64
    }

    /// `now_ms` on the local clock, 0 before 1970 there.
    fn local_ms(&self, now_ms: u64) -> u64 {
        let offset = i64::from(self.offset_min) * 60_000;
        (now_ms as i64).saturating_add(offset).max(0) as u64
    }
}

/// `month`, or `day, utc+02:00` with an offset: the form a policy's text uses.
impl fmt::Display for Calendar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.period.name())?;
        if self.offset_min != 0 {
            let sign = if self.offset_min < 0 { '-' } else { '+' };
            let minutes = self.offset_min.unsigned_abs();
            write!(f, ", utc{sign}{:02}:{:02}", minutes / 60, minutes % 60)?;
        }
        Ok(())
    }
}

/// The (year, month 1–12) of a day counted from 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(day: i64) -> (i64, i64) {
    let z = day + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month)
}

/// The day, counted from 1970-01-01, of the first of `month` (1–12) in `year`.
fn days_from_civil(year: i64, month: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year - era * 400;
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
