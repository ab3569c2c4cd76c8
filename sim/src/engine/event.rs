//! The events on the engine's one queue, and where each is handled: scheduling events here,
//! unit completions beside their unit (`crate::sm::tensor_core`, `crate::sm::tma`).

use super::Engine;
use crate::sm::tensor_core::Hgmma;

/// A piece of a TMA load on its way into shared memory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Chunk {
    pub sm: u32,
    pub cta: u32,
    pub bar: u32,
    pub bytes: u64,
    /// On the last chunk: what the box completes.
    pub complete: Option<TmaDone>,
}

/// What the last chunk of a TMA load completes: its box's bytes, the slot it fills
/// (engine-wide), and the warp and instruction that issued it (for diagnostics).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TmaDone {
    pub bytes: u64,
    pub slot: u32,
    pub warp: u32,
    pub pc: u32,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    /// A timed stall is over, or a blocked warp was released: evaluate it again.
    Wake(u32),
    /// A polling warp's next `test_wait` is due (`Engine::polls_pending` counts these).
    Poll(u32),
    /// A named barrier completed: the warp may go on (its `hold` is cleared).
    Release(u32),
    /// The running HGMMA left this SM's tensor pipe.
    TensorDone(u32),
    /// An HGMMA of this warpgroup no longer counts against its in-flight limit.
    HgmmaReleased(u32),
    /// An HGMMA's results are visible to `wgmma.wait_group` of its warpgroup.
    HgmmaComplete(Hgmma),
    /// A chunk of a TMA load is back from L2: stream it into shared memory. Booking the SM's
    /// fill path at this event, not earlier, keeps that path's bookings in time order.
    TmaChunk(Chunk),
    /// TMA bytes are in shared memory: complete-tx on the mbarrier; the slot is filled.
    TxComplete { cta: u32, bar: u32, done: TmaDone },
    /// The CTA slot a retired CTA left on this SM takes its next CTA (`sm.cta_launch_gap`).
    CtaSlotFree(u32),
}

impl Engine<'_> {
    pub(crate) fn handle(&mut self, ev: Event) {
        match ev {
            Event::Wake(w) => {
                // A wake may outlive its warp (a stall booked before the warp exited).
                let Some(warp) = self.warps.get(w) else {
                    return;
                };
                if warp.acct.exited().is_none() {
                    let p = warp.partition as usize;
                    self.parts[p].check |= 1 << warp.slot;
                    self.active[p / 64] |= 1 << (p % 64);
                }
            }
            Event::Poll(w) => {
                self.polls_pending -= 1;
                self.handle(Event::Wake(w));
            }
            Event::Release(w) => {
                self.warps[w as usize].hold = None;
                self.handle(Event::Wake(w));
            }
            Event::TensorDone(sm) => self.on_tensor_done(sm),
            Event::HgmmaReleased(wg) => self.on_hgmma_released(wg),
            Event::HgmmaComplete(h) => self.on_hgmma_complete(h),
            Event::TmaChunk(c) => self.on_tma_chunk(c),
            Event::TxComplete { cta, bar, done } => self.on_tx_complete(cta, bar, done),
            Event::CtaSlotFree(sm) => self.free_cta_slot(sm),
        }
    }

    pub(crate) fn wake_at(&mut self, w: u32, t: u64) {
        self.q.push(t, Event::Wake(w));
    }
}
