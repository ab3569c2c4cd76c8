//! Warp divergence: which lanes of a warp take part in its next instruction.
//!
//! Rule (CUDA C++ Programming Guide, "SIMT Architecture"): a warp executes one common
//! instruction at a time; when its threads take different paths of a branch, it runs each path
//! in turn with the threads not on that path disabled, and they reconverge where the paths
//! join. Here an `If` whose condition reads `lane` splits the warp: the lanes where the
//! condition holds run the then-path, then the others the else-path, and all reconverge after
//! the `If`. A path no lane takes is skipped, so a lane-dependent condition that happens to be
//! warp-uniform costs what a uniform one costs. A `Loop` whose trip count reads `lane` runs to
//! the largest trip count of its active lanes, each lane masked off once its own count is done.
//! Every path's instructions issue once for the warp whatever its active lanes; per-lane effects
//! (addresses, bank conflicts, sectors) come from the active lanes only.

use crate::expr::{Code, EvalError};
use crate::program::{slot, WARP_SIZE};

/// One bit per lane: lane `l` is bit `l`.
pub type Mask = u32;

/// All 32 lanes.
pub const FULL: Mask = u32::MAX;

/// A lane-dependent `If` or `Loop` the warp is inside.
#[derive(Clone, Debug)]
enum Frame {
    /// The lanes active before the `If`, and those that run its else-path.
    If { outer: Mask, otherwise: Mask },
    /// The lanes active before the `Loop`, and each lane's trip count (boxed: an `If` frame,
    /// the common one, stays small).
    Loop {
        outer: Mask,
        trips: Box<[i64; WARP_SIZE as usize]>,
    },
}

/// A warp's active lanes and the lane-dependent `If`s and `Loop`s it is inside, innermost last
/// (the reconvergence stack).
#[derive(Clone, Debug)]
pub struct Lanes {
    active: Mask,
    frames: Vec<Frame>,
}

impl Default for Lanes {
    fn default() -> Self {
        Lanes {
            active: FULL,
            frames: Vec::new(),
        }
    }
}

/// The lanes of `active` whose value in `values` is non-zero.
fn nonzero(values: &[i64; WARP_SIZE as usize], active: Mask) -> Mask {
    let mut m = 0;
    for (l, &v) in values.iter().enumerate() {
        if v != 0 {
            m |= 1 << l;
        }
    }
    m & active
}

impl Lanes {
    /// The lanes that take part in the warp's next instruction.
    pub fn active(&self) -> Mask {
        self.active
    }

    /// Enters a lane-dependent `If` whose condition has `values` per lane: the lanes where it
    /// is non-zero run the then-path. Returns whether any lane does (otherwise the warp goes
    /// straight to the else-path).
    pub fn branch(&mut self, values: &[i64; WARP_SIZE as usize]) -> bool {
        let taken = nonzero(values, self.active);
        self.frames.push(Frame::If {
            outer: self.active,
            otherwise: self.active & !taken,
        });
        self.active = taken;
        taken != 0
    }

    /// The end of the innermost `If`'s then-path: the lanes that did not take it run the
    /// else-path. Returns whether any lane does.
    pub fn otherwise(&mut self) -> bool {
        if let Some(Frame::If { otherwise, .. }) = self.frames.last() {
            self.active = *otherwise;
        }
        self.active != 0
    }

    /// Enters a lane-dependent `Loop` with `trips` per lane (inactive lanes' are ignored);
    /// returns the largest trip count among the active lanes, the iterations the warp runs.
    pub fn loop_start(&mut self, trips: [i64; WARP_SIZE as usize]) -> i64 {
        let outer = self.active;
        let most = (0..WARP_SIZE as usize)
            .filter(|&l| outer & (1 << l) != 0)
            .map(|l| trips[l])
            .max()
            .unwrap_or(0);
        self.frames.push(Frame::Loop {
            outer,
            trips: Box::new(trips),
        });
        self.iteration(0);
        most
    }

    /// Iteration `i` (from 0) of the innermost `Loop` starts: only lanes with more than `i`
    /// trips run it.
    pub fn iteration(&mut self, i: i64) {
        if let Some(Frame::Loop { outer, trips }) = self.frames.last() {
            let more: [i64; WARP_SIZE as usize] = std::array::from_fn(|l| (trips[l] > i) as i64);
            self.active = nonzero(&more, *outer);
        }
    }

    /// Leaves the innermost lane-dependent `If` or `Loop`: the lanes active before it are
    /// active again.
    pub fn reconverge(&mut self) {
        if let Some(Frame::If { outer, .. } | Frame::Loop { outer, .. }) = self.frames.pop() {
            self.active = outer;
        }
    }
}

/// The per-lane value of `code` for each lane active in `mask`, evaluated over a warp's
/// variables `env` (inactive lanes give 0). An error of an inactive lane does not count: its
/// value is not used.
pub fn lane_values(
    env: &mut [i64],
    code: &Code,
    mask: Mask,
) -> Result<[i64; WARP_SIZE as usize], EvalError> {
    if let Some(v) = code.eval_lanes(env, slot::LANE) {
        return Ok(std::array::from_fn(|l| {
            if mask & (1 << l) != 0 {
                v[l]
            } else {
                0
            }
        }));
    }
    // Lane by lane: some lane's evaluation fails, or the expression branches on the lane.
    let mut out = [0; WARP_SIZE as usize];
    let result = out.iter_mut().enumerate().try_for_each(|(lane, o)| {
        if mask & (1 << lane) != 0 {
            env[slot::LANE as usize] = lane as i64;
            *o = code.eval(env)?;
        }
        Ok(())
    });
    env[slot::LANE as usize] = 0;
    result.map(|()| out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn per_lane(f: impl Fn(i64) -> i64) -> [i64; 32] {
        std::array::from_fn(|l| f(l as i64))
    }

    #[test]
    fn an_if_splits_the_warp_and_reconverges() {
        let mut lanes = Lanes::default();
        assert!(lanes.branch(&per_lane(|l| l % 2)));
        assert_eq!(lanes.active(), 0xaaaa_aaaa);
        // Nested: of the odd lanes, those below 8.
        assert!(lanes.branch(&per_lane(|l| (l < 8) as i64)));
        assert_eq!(lanes.active(), 0xaa);
        assert!(lanes.otherwise());
        assert_eq!(lanes.active(), 0xaaaa_aa00);
        lanes.reconverge();
        assert!(lanes.otherwise());
        assert_eq!(lanes.active(), 0x5555_5555);
        lanes.reconverge();
        assert_eq!(lanes.active(), FULL);
    }

    #[test]
    fn a_path_no_lane_takes_is_empty() {
        let mut lanes = Lanes::default();
        assert!(!lanes.branch(&per_lane(|_| 0)));
        assert!(lanes.otherwise());
        assert_eq!(lanes.active(), FULL);
        lanes.reconverge();
        assert!(lanes.branch(&per_lane(|_| 1)));
        assert!(!lanes.otherwise(), "every lane took the then-path");
        lanes.reconverge();
        assert_eq!(lanes.active(), FULL);
    }

    #[test]
    fn a_loop_runs_to_the_largest_trip_count_of_its_active_lanes() {
        let mut lanes = Lanes::default();
        // Only the even lanes are active; lane l runs l / 2 trips.
        lanes.branch(&per_lane(|l| (l % 2 == 0) as i64));
        assert_eq!(lanes.loop_start(per_lane(|l| l / 2)), 15);
        assert_eq!(lanes.active(), 0x5555_5554, "lane 0 has no trips");
        lanes.iteration(14);
        assert_eq!(lanes.active(), 1 << 30);
        lanes.reconverge();
        assert_eq!(lanes.active(), 0x5555_5555);
        lanes.reconverge();
        assert_eq!(lanes.active(), FULL);
    }

    #[test]
    fn inactive_lanes_neither_count_nor_fail() {
        let code =
            crate::expr::Code::compile(&crate::expr::parse("64 / (3 - lane)").unwrap(), &mut |n| {
                (n == "lane").then_some(crate::expr::Binding::Slot(slot::LANE))
            })
            .unwrap();
        let mut env = vec![0; slot::LANE as usize + 1];
        assert!(lane_values(&mut env, &code, FULL).is_err());
        let v = lane_values(&mut env, &code, 0b111).unwrap();
        assert_eq!(v[..4], [21, 32, 64, 0]);
        assert_eq!(env[slot::LANE as usize], 0);
    }
}
