//! The requests waiting for their turn (`delay`), counted over a limiter and by limit: the
//! bound every front end's queue keeps.

/// The requests waiting for their turn now, over a limiter, and by limit (its id).
#[derive(Debug, Default)]
pub struct Waiting(parking_lot::Mutex<(usize, Vec<(u64, usize)>)>);

impl Waiting {
    /// Takes a place for a request of the limit `id`: one of `most` in all, or — all taken —
    /// one of the limit's share of them.
    pub fn take(&self, id: u64, most: usize) -> bool {
        let mut waiting = self.0.lock();
        let (total, by_limit) = &mut *waiting;
        let at = by_limit.iter().position(|(limit, _)| *limit == id);
        let own = at.map_or(0, |at| by_limit[at].1);
        let limits = by_limit.len() + usize::from(at.is_none());
        if *total >= most && (own >= most / limits || *total >= 2 * most) {
            return false;
        }
        *total += 1;
        match at {
            Some(at) => by_limit[at].1 += 1,
            None => by_limit.push((id, 1)),
        }
        true
    }

    /// Gives a place of the limit `id` back.
    pub fn give(&self, id: u64) {
        let mut waiting = self.0.lock();
        let (total, by_limit) = &mut *waiting;
        *total = total.saturating_sub(1);
        if let Some(at) = by_limit.iter().position(|(limit, _)| *limit == id) {
            by_limit[at].1 -= 1;
            if by_limit[at].1 == 0 {
                by_limit.swap_remove(at);
            }
        }
    }
}
