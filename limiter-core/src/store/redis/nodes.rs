//! A check whose keys live on several cluster nodes: each node's part is atomic, and all or
//! nothing across nodes is kept by giving back.

use std::time::Duration;

use super::batch::Peek;
use super::{Answer, RedisStore};
use crate::{Charge, Decision, StoreError};

/// A part of a cross-node check that its node counted: which of the check's charges, their
/// key names, and their marks.
struct Part<'m, 'c> {
    members: &'m [usize],
    charges: Vec<Charge<'c>>,
    names: Vec<String>,
    marks: Vec<Option<Duration>>,
}

impl RedisStore {
    /// The parts counted before one that rejects (or fails) are given back — exactly what
    /// they counted, by their receipts — and then say where they stand; the parts after it
    /// only read. Between the count and the giving back another request may see those
    /// units taken: erring on the side of the limit, never past it. Giving back is never
    /// worth an error: a node that cannot take it back keeps the units (the request is
    /// still rejected, as the node that rejected it said).
    pub(super) async fn check_across_nodes(
        &self,
        unique: &[Charge<'_>],
        names: &[String],
        nodes: &[Vec<usize>],
        now: Duration,
    ) -> Result<Vec<Answer>, StoreError> {
        let mut answers: Vec<Answer> =
            vec![(Decision::reject(0, Duration::ZERO), None); unique.len()];
        let mut counted: Vec<Part<'_, '_>> = Vec::new();
        let mut rejected = false;
        for members in nodes {
            let charges: Vec<Charge<'_>> = members.iter().map(|&m| unique[m]).collect();
            let part: Vec<String> = members.iter().map(|&m| names[m].clone()).collect();
            let peek = if rejected { Peek::Read } else { Peek::No };
            let replies = match self
                .check_on_one_node(&charges, part.clone(), now, peek)
                .await
            {
                Ok(replies) => replies,
                // Once a node rejected the request, the others are only read: one that
                // cannot say where it stands changes nothing, the request is rejected.
                Err(_) if rejected => charges.iter().map(|c| (unread(c), None)).collect(),
                Err(error) => {
                    // A node that fails fails the request (the fault policy answers it): the
                    // parts counted before it give their units back, if their nodes answer.
                    for part in &counted {
                        let _ = self
                            .give_back(&part.charges, &part.names, &part.marks, now)
                            .await;
                    }
                    return Err(error);
                }
            };
            if !rejected {
                if replies.iter().all(|(d, _)| d.allowed()) {
                    counted.push(Part {
                        members,
                        charges,
                        names: part,
                        marks: replies.iter().map(|(_, mark)| *mark).collect(),
                    });
                } else {
                    rejected = true;
                }
            }
            for (&m, reply) in members.iter().zip(replies) {
                answers[m] = reply;
            }
        }
        if rejected {
            for part in &counted {
                let _ = self
                    .give_back(&part.charges, &part.names, &part.marks, now)
                    .await;
                // Where the part stands with nothing counted; if its node cannot say now,
                // its allowed answer stands, counted nothing.
                let statuses = self
                    .check_on_one_node(&part.charges, part.names.clone(), now, Peek::Status)
                    .await;
                for (i, &m) in part.members.iter().enumerate() {
                    answers[m] = match &statuses {
                        Ok(statuses) => (statuses[i].0, None),
                        Err(_) => (unread(&part.charges[i]), None),
                    };
                }
            }
        }
        Ok(answers)
    }
}

/// The answer of a limit whose node could not say where it stands, in a request another
/// limit rejected: it would admit it, with nothing known used.
fn unread(charge: &Charge<'_>) -> Decision {
    let max = charge.limit.policy().max().get();
    Decision::allow(max, max, Duration::ZERO)
}
