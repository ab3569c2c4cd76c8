//! The warp-state taxonomy and its exact accounting. Every cycle of a warp's lifetime is in
//! exactly one state; [`Accounting::set`] is the only way a warp changes state, and it adds the
//! time spent in the old state to that state's counter. Documented in `docs/stalls.md`.

/// What a warp is doing in a cycle. Each maps to a Nsight Compute stall reason ([`State::ncu`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    /// Issued an instruction this cycle.
    Selected,
    /// Could issue, but the scheduler picked another warp.
    NotSelected,
    /// Waiting for a fixed-latency result (ALU/FMA).
    Wait,
    /// Waiting for a shared-memory load or MUFU result.
    ShortScoreboard,
    /// Waiting for a global-memory load result.
    LongScoreboard,
    /// The ALU/FMA/MUFU pipe it needs is busy.
    MathPipeThrottle,
    /// Picked, but the partition's dispatch is held (beside a running HGMMA).
    DispatchStall,
    /// The shared-memory port queue or the TMA unit is full.
    MioThrottle,
    /// The L1's queue of global accesses is full (`sm::lsu`).
    LgThrottle,
    /// `mbarrier.wait` on a phase that has not completed.
    MbarrierWait,
    /// `bar.sync` on a named barrier that has not completed.
    NamedBarrier,
    /// `wgmma.wait_group` with too many groups pending.
    WgmmaWait,
    /// `tma_store_wait` (bulk async-group wait) with too many stores pending.
    BulkWait,
    /// `setmaxnreg.inc` waiting for registers from the CTA's pool.
    Setmaxnreg,
    /// In a GPU-scope memory barrier (`Fence`, a `.release.cluster` arrive, a non-relaxed
    /// cluster-barrier arrive).
    Membar,
}

impl State {
    pub const ALL: [State; 15] = [
        State::Selected,
        State::NotSelected,
        State::Wait,
        State::ShortScoreboard,
        State::LongScoreboard,
        State::MathPipeThrottle,
        State::DispatchStall,
        State::MioThrottle,
        State::LgThrottle,
        State::MbarrierWait,
        State::NamedBarrier,
        State::WgmmaWait,
        State::BulkWait,
        State::Setmaxnreg,
        State::Membar,
    ];
    pub const COUNT: usize = Self::ALL.len();

    pub fn name(self) -> &'static str {
        match self {
            State::Selected => "selected",
            State::NotSelected => "not_selected",
            State::Wait => "wait",
            State::ShortScoreboard => "short_scoreboard",
            State::LongScoreboard => "long_scoreboard",
            State::MathPipeThrottle => "math_pipe_throttle",
            State::DispatchStall => "dispatch_stall",
            State::MioThrottle => "mio_throttle",
            State::LgThrottle => "lg_throttle",
            State::MbarrierWait => "mbarrier_wait",
            State::NamedBarrier => "named_barrier",
            State::WgmmaWait => "wgmma_wait",
            State::BulkWait => "bulk_wait",
            State::Setmaxnreg => "setmaxnreg",
            State::Membar => "membar",
        }
    }

    /// The Nsight Compute stall reason this state is reported as.
    pub fn ncu(self) -> &'static str {
        match self {
            State::Selected => "selected",
            State::NotSelected => "not_selected",
            State::Wait => "wait",
            State::ShortScoreboard => "short_scoreboard",
            State::LongScoreboard | State::MbarrierWait | State::BulkWait => "long_scoreboard",
            State::MathPipeThrottle => "math_pipe_throttle",
            State::DispatchStall => "dispatch_stall",
            State::MioThrottle => "mio_throttle",
            State::LgThrottle => "lg_throttle",
            // Nsight Compute 2025.3 reports wgmma.wait_group (WARPGROUP.DEPBAR) as `barrier`.
            State::NamedBarrier | State::WgmmaWait => "barrier",
            State::Setmaxnreg => "misc",
            State::Membar => "membar",
        }
    }

    /// The state's colour in `sim stalls` and `sim report` (one palette for both).
    pub fn color(self) -> &'static str {
        match self {
            State::Selected => "#2e7d32",
            State::NotSelected => "#81c784",
            State::Wait => "#fdd835",
            State::ShortScoreboard => "#ffb300",
            State::LongScoreboard => "#ef6c00",
            State::MathPipeThrottle => "#8e24aa",
            State::DispatchStall => "#3949ab",
            State::MioThrottle => "#d81b60",
            State::LgThrottle => "#f48fb1",
            State::MbarrierWait => "#e53935",
            State::NamedBarrier => "#1e88e5",
            State::WgmmaWait => "#00acc1",
            State::BulkWait => "#6d4c41",
            State::Setmaxnreg => "#757575",
            State::Membar => "#9e9d24",
        }
    }

    /// A one-character symbol for bars drawn without colour.
    pub fn symbol(self) -> char {
        match self {
            State::Selected => '#',
            State::NotSelected => '+',
            State::Wait => 'w',
            State::ShortScoreboard => 's',
            State::LongScoreboard => 'L',
            State::MathPipeThrottle => 'M',
            State::DispatchStall => 'D',
            State::MioThrottle => 'I',
            State::LgThrottle => 'T',
            State::MbarrierWait => 'B',
            State::NamedBarrier => 'N',
            State::WgmmaWait => 'G',
            State::BulkWait => 'K',
            State::Setmaxnreg => 'R',
            State::Membar => 'F',
        }
    }

    pub fn from_name(name: &str) -> Option<State> {
        State::ALL.iter().copied().find(|s| s.name() == name)
    }
}

/// One warp's state and the cycles it has spent in each.
#[derive(Clone, Debug)]
pub struct Accounting {
    state: State,
    since: u64,
    cycles: [u64; State::COUNT],
    launched: u64,
    exited: Option<u64>,
}

impl Accounting {
    pub fn new(now: u64, state: State) -> Self {
        Accounting {
            state,
            since: now,
            cycles: [0; State::COUNT],
            launched: now,
            exited: None,
        }
    }

    pub fn state(&self) -> State {
        self.state
    }

    /// When the current state began.
    pub fn since(&self) -> u64 {
        self.since
    }

    /// Enters `state` at `now`, closing the interval spent in the old one; returns that
    /// interval's state and start.
    pub fn set(&mut self, now: u64, state: State) -> (State, u64) {
        debug_assert!(self.exited.is_none() && now >= self.since);
        let closed = (self.state, self.since);
        self.cycles[self.state as usize] += now - self.since;
        self.state = state;
        self.since = now;
        closed
    }

    /// The warp exits at `now`; returns the last interval's state and start.
    pub fn exit(&mut self, now: u64) -> (State, u64) {
        let closed = (self.state, self.since);
        self.cycles[self.state as usize] += now - self.since;
        self.since = now;
        self.exited = Some(now);
        closed
    }

    pub fn exited(&self) -> Option<u64> {
        self.exited
    }

    /// Cycles in each state, counting the open interval up to `now`.
    pub fn cycles_at(&self, now: u64) -> [u64; State::COUNT] {
        let mut c = self.cycles;
        if self.exited.is_none() {
            c[self.state as usize] += now.saturating_sub(self.since);
        }
        c
    }

    pub fn lifetime_at(&self, now: u64) -> u64 {
        self.exited.unwrap_or(now) - self.launched
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_sum_to_lifetime() {
        let mut a = Accounting::new(10, State::NotSelected);
        a.set(12, State::Selected);
        a.set(13, State::MbarrierWait);
        a.set(40, State::NotSelected);
        a.set(41, State::Selected);
        a.exit(42);
        let c = a.cycles_at(1000);
        assert_eq!(c.iter().sum::<u64>(), a.lifetime_at(1000));
        assert_eq!(a.lifetime_at(1000), 32);
        assert_eq!(c[State::MbarrierWait as usize], 27);
        assert_eq!(c[State::Selected as usize], 2);
        assert_eq!(c[State::NotSelected as usize], 3);
    }

    #[test]
    fn colors_and_symbols_are_distinct() {
        let mut c: Vec<&str> = State::ALL.iter().map(|s| s.color()).collect();
        let mut y: Vec<char> = State::ALL.iter().map(|s| s.symbol()).collect();
        c.sort();
        c.dedup();
        y.sort();
        y.dedup();
        assert_eq!((c.len(), y.len()), (State::COUNT, State::COUNT));
        assert_eq!(State::from_name("wgmma_wait"), Some(State::WgmmaWait));
    }

    #[test]
    fn every_state_has_a_unique_name_and_an_ncu_reason() {
        let mut names: Vec<&str> = State::ALL.iter().map(|s| s.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), State::COUNT);
        for (i, s) in State::ALL.iter().enumerate() {
            assert_eq!(*s as usize, i);
            assert!(!s.ncu().is_empty());
        }
    }
}
