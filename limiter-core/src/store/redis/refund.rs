//! Giving back what a check counted: by its receipt's marks, in one script call per node.

use std::time::Duration;

use super::{scripts, RedisStore};
use crate::{Charge, Receipt, StoreError};

impl RedisStore {
    /// Takes back what a check of `charges` counted, as `receipt` says; `now` is the
    /// caller's reading (used with the caller's clock; the script reads the server's
    /// otherwise).
    pub(super) async fn take_back(
        &self,
        charges: &[Charge<'_>],
        receipt: &Receipt,
        now: Duration,
    ) -> Result<(), StoreError> {
        let counted: Vec<usize> = (0..charges.len())
            .filter(|&i| receipt.marks().get(i).copied().flatten().is_some())
            .collect();
        let charges: Vec<Charge<'_>> = counted.iter().map(|&i| charges[i]).collect();
        let marks: Vec<Option<Duration>> = counted.iter().map(|&i| receipt.marks()[i]).collect();
        let names: Vec<String> = charges
            .iter()
            .map(|c| self.key_name(c.limit, c.key))
            .collect();
        // Each node's part on its own: one that cannot take its part back keeps it (erring
        // on the side of the limit), the others still take theirs.
        let mut failed = None;
        for members in self.by_node(&names) {
            let part: Vec<Charge<'_>> = members.iter().map(|&m| charges[m]).collect();
            let part_names: Vec<String> = members.iter().map(|&m| names[m].clone()).collect();
            let part_marks: Vec<Option<Duration>> = members.iter().map(|&m| marks[m]).collect();
            if let Err(error) = self.give_back(&part, &part_names, &part_marks, now).await {
                failed = Some(error);
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Refunds `charges` (on one node) by their `marks`.
    pub(super) async fn give_back(
        &self,
        charges: &[Charge<'_>],
        names: &[String],
        marks: &[Option<Duration>],
        now: Duration,
    ) -> Result<(), StoreError> {
        let mut command = redis::cmd("EVALSHA");
        command.arg(&self.inner.refund.sha).arg(charges.len());
        command.arg(names);
        // `now_ms` or "" for the server's clock, then six values per key: see the script.
        if self.inner.caller_clock {
            command.arg(now.as_millis().to_string());
        } else {
            command.arg("");
        }
        for (charge, mark) in charges.iter().zip(marks) {
            let policy = charge.limit.policy();
            let mark = mark.unwrap_or_default();
            // A calendar quota's refund needs no calendar: its period's number and end.
            let (window, interval) = match policy.calendar() {
                Some(calendar) => {
                    let index = calendar.index(millis(mark));
                    (u64::from(index), calendar.start_ms(index.saturating_add(1)))
                }
                None => (policy.window_ms(), policy.emission_interval_ns()),
            };
            command
                .arg(scripts::code(policy))
                .arg(window)
                .arg(interval)
                .arg(charge.units())
                .arg(mark.as_millis().to_string())
                .arg(mark.subsec_nanos() % 1_000_000);
        }
        self.run::<i64>(|inner| &inner.refund, command)
            .await
            .map(drop)
    }
}

/// A mark in whole milliseconds.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
