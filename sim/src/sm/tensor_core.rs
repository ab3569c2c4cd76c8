//! The SM's tensor pipe: its four tensor cores work on one HGMMA (wgmma m64nNk16 step) at a time.
//!
//! Cost of one HGMMA: `2·64·N·16 / flops_per_cycle` cycles of math, and its shared-memory operands
//! (A: 64×16×2 = 2048 B in the SS form, none in the RS form; B: N×16×2 = 32·N B) read through the
//! shared-memory port it shares with every other user. The pipe is held for the longer of the two,
//! which gives back-to-back SS wgmma a busy fraction of `min(1, 0.5N / (16 + 0.25N))` on H100.
//! HGMMAs queue FIFO across the SM's warpgroups.

use crate::engine::server::Server;
use std::collections::VecDeque;

/// One HGMMA waiting for or running on the pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hgmma {
    /// Index of the warpgroup (engine-wide) that issued it.
    pub warpgroup: u32,
    pub n: u32,
    /// A comes from shared memory (SS form).
    pub a_smem: bool,
    /// The shared-memory slots it reads (engine-wide slot indices; `NO_SLOT` for none), so the
    /// sanitizer knows what it still reads until it completes.
    pub reads: [u32; 2],
}

/// No slot (an RS-form HGMMA reads no A slot).
pub const NO_SLOT: u32 = u32::MAX;

impl Hgmma {
    pub fn flops(&self) -> u64 {
        2 * 64 * self.n as u64 * 16
    }
    /// Bytes read from shared memory.
    pub fn smem_bytes(&self) -> u64 {
        let a = if self.a_smem { 64 * 16 * 2 } else { 0 };
        a + self.n as u64 * 16 * 2
    }
}

#[derive(Clone, Debug, Default)]
pub struct TensorPipe {
    queue: VecDeque<Hgmma>,
    running: Option<Hgmma>,
    /// Math cycles (the busy measure: the fraction of time the tensor cores compute).
    busy: u64,
    flops: u64,
}

impl TensorPipe {
    pub fn submit(&mut self, h: Hgmma) {
        self.queue.push_back(h);
    }

    pub fn is_idle(&self) -> bool {
        self.running.is_none()
    }

    /// Starts the next queued HGMMA at `now` if the pipe is idle; books its operand reads on the
    /// shared-memory `port` (moving `port_bytes_per_cycle`). Returns the cycle it finishes.
    pub fn start_next(
        &mut self,
        now: u64,
        flops_per_cycle: u64,
        port: &mut Server,
        port_bytes_per_cycle: u64,
    ) -> Option<u64> {
        if self.running.is_some() {
            return None;
        }
        let h = self.queue.pop_front()?;
        let math = h.flops().div_ceil(flops_per_cycle);
        let (_, read_end) = port.book(now, h.smem_bytes().div_ceil(port_bytes_per_cycle));
        self.running = Some(h);
        self.busy += math;
        self.flops += h.flops();
        Some((now + math).max(read_end))
    }

    /// The running HGMMA finished.
    pub fn finish(&mut self) -> Option<Hgmma> {
        self.running.take()
    }

    pub fn busy(&self) -> u64 {
        self.busy
    }
    pub fn flops(&self) -> u64 {
        self.flops
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `count` back-to-back HGMMAs and returns (end cycle, math busy cycles).
    fn stream(n: u32, a_smem: bool, count: u32) -> (u64, u64) {
        let mut pipe = TensorPipe::default();
        let mut port = Server::default();
        for _ in 0..count {
            pipe.submit(Hgmma {
                warpgroup: 0,
                n,
                a_smem,
                reads: [NO_SLOT; 2],
            });
        }
        let mut now = 0;
        while let Some(end) = pipe.start_next(now, 4096, &mut port, 128) {
            now = end;
            pipe.finish();
        }
        (now, pipe.busy())
    }

    #[test]
    fn ss_busy_fraction_matches_the_feed_model() {
        for n in [16u32, 32, 64, 128, 256] {
            let (end, busy) = stream(n, true, 100);
            let expect = (0.5 * n as f64 / (16.0 + 0.25 * n as f64)).min(1.0);
            let got = busy as f64 / end as f64;
            assert!((got - expect).abs() < 1e-9, "N={n}: {got} vs {expect}");
        }
    }

    #[test]
    fn rs_form_is_compute_bound() {
        for n in [32u32, 64, 256] {
            let (end, busy) = stream(n, false, 100);
            assert_eq!(end, busy, "N={n}");
            assert_eq!(busy, 100 * n as u64 / 2);
        }
    }

    #[test]
    fn operand_reads_wait_for_a_busy_port() {
        let mut pipe = TensorPipe::default();
        let mut port = Server::default();
        port.book(0, 100); // e.g. a TMA write holds the port
        pipe.submit(Hgmma {
            warpgroup: 0,
            n: 256,
            a_smem: true,
            reads: [NO_SLOT; 2],
        });
        // Reads 80 cycles from 100 to 180; math alone would end at 128.
        assert_eq!(pipe.start_next(0, 4096, &mut port, 128), Some(180));
    }
}
