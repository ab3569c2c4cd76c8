//! Commit/wait groups of a warp's asynchronous copies (`cp.async.commit_group` /
//! `cp.async.wait_group`, and the bulk async-groups of TMA stores): copies issued since the last
//! commit form the open group; a group completes when its last copy does; `wait(n)` holds until
//! all but the `n` most recently committed groups are complete (PTX: commit order, not
//! completion order).
//!
//! Completion times are known when a copy issues, so a wait is a timed stall (`bulk_wait`), not
//! a waiter list.

use crate::engine::crossing::PENDING;
use crate::engine::error::Fault;
use crate::engine::schedule::Outcome;
use crate::engine::Shard;
use crate::observe::warp_state::State;
use isa::expr::Code;

use std::collections::VecDeque;

#[derive(Clone, Debug, Default)]
pub struct AsyncGroups {
    /// The open (uncommitted) group.
    open: Group,
    /// Each committed group not yet known complete, oldest first.
    committed: VecDeque<Group>,
    /// Groups committed so far, and those dropped from the front of `committed`: a group's
    /// number is the count of commits before it.
    commits: u64,
    dropped: u64,
}

/// A group's completion cycle so far, and its copies whose completion is still on its way from
/// the memory system (`crate::engine::crossing`).
#[derive(Clone, Copy, Debug, Default)]
struct Group {
    done: u64,
    pending: u32,
}

impl Group {
    /// When it completes ([`PENDING`] while a copy's answer is on its way).
    fn until(&self) -> u64 {
        if self.pending > 0 {
            PENDING
        } else {
            self.done
        }
    }
}

impl AsyncGroups {
    /// A copy of the open group completes at `done`.
    pub fn add(&mut self, done: u64) {
        self.open.done = self.open.done.max(done);
    }

    /// A copy of the open group whose completion is on its way; returns the group's number
    /// for [`AsyncGroups::deliver`].
    pub fn add_pending(&mut self) -> u64 {
        self.open.pending += 1;
        self.commits
    }

    /// The answer to a copy of group `group` ([`AsyncGroups::add_pending`]): it completes at
    /// `done`.
    pub fn deliver(&mut self, group: u64, done: u64) {
        let g = if group == self.commits {
            &mut self.open
        } else {
            &mut self.committed[(group - self.dropped) as usize]
        };
        g.done = g.done.max(done);
        g.pending -= 1;
    }

    pub fn commit(&mut self) {
        let g = std::mem::take(&mut self.open);
        self.committed.push_back(g);
        self.commits += 1;
    }

    /// When `wait_group(n)` issued at `now` may pass: `None` if at once.
    pub fn wait_until(&mut self, now: u64, n: usize) -> Option<u64> {
        while self.committed.front().is_some_and(|g| g.until() <= now) {
            self.committed.pop_front();
            self.dropped += 1;
        }
        let older = self.committed.len().saturating_sub(n);
        self.committed.iter().take(older).map(Group::until).max()
    }
}

/// Which of a warp's group sets an instruction commits or waits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GroupKind {
    TmaStores,
    CpAsync,
}

impl Shard<'_> {
    fn groups(&mut self, w: u32, kind: GroupKind) -> &mut AsyncGroups {
        let warp = &mut self.warps[w as usize];
        match kind {
            GroupKind::TmaStores => &mut warp.stores,
            GroupKind::CpAsync => &mut warp.copies,
        }
    }

    /// `cp.async.wait_group(n)` / `cp.async.bulk.wait_group.read(n)`.
    pub(crate) fn group_wait_outcome(
        &mut self,
        w: u32,
        kind: GroupKind,
        n: &Code,
    ) -> Result<Outcome, Fault> {
        let n = self.eval(w, n)?.max(0) as usize;
        let now = self.now;
        Ok(match self.groups(w, kind).wait_until(now, n) {
            Some(t) => Outcome::StallUntil(State::BulkWait, t),
            None => Outcome::Ready,
        })
    }

    pub(crate) fn issue_group_commit(&mut self, w: u32, kind: GroupKind) {
        self.groups(w, kind).commit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_follow_commit_order() {
        let mut g = AsyncGroups::default();
        g.add(500);
        g.commit(); // group A done at 500
        g.add(100);
        g.add(200);
        g.commit(); // group B done at 200, committed after A
        assert_eq!(g.wait_until(0, 0), Some(500));
        // wait_group(1): all but the newest (B) must be done, so A.
        assert_eq!(g.wait_until(0, 1), Some(500));
        assert_eq!(g.wait_until(0, 2), None);
        assert_eq!(g.wait_until(500, 0), None);
    }

    #[test]
    fn an_empty_group_is_complete() {
        let mut g = AsyncGroups::default();
        g.commit();
        assert_eq!(g.wait_until(0, 0), None);
    }
}
