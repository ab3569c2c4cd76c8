//! The events on the engine's one queue, and where each is handled: scheduling events here,
//! unit completions beside their unit (`crate::sm::tensor_core`, `crate::sm::tma`).

use super::crossing::PENDING;
use super::Shard;

#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    /// A timed stall is over, or a blocked warp was released: evaluate it again.
    Wake(u32),
    /// A polling warp's next `test_wait` is due (`Shard::polls_pending` counts these).
    Poll(u32),
    /// A named barrier completed: the warp may go on (its `hold` is cleared).
    Release(u32),
    /// The running HGMMA left this SM's tensor pipe.
    TensorDone(u32),
    /// An HGMMA of this warpgroup no longer holds a place in the in-flight window.
    HgmmaReleased(u32),
    /// An HGMMA of this warpgroup has its results visible to `wgmma.wait_group`.
    HgmmaComplete(u32),
    /// A chunk of `tma.chunk_bytes` of a TMA load in flight (its index in `Shard::tma_loads`)
    /// is back from L2: stream it into shared memory. Booking the SM's fill path at this
    /// event, not earlier, keeps that path's bookings in time order.
    TmaChunk(u32),
    /// The last chunk of a TMA load in flight (its index in `Shard::tma_loads`) is back.
    TmaLastChunk(u32),
    /// A TMA load's bytes are in shared memory: complete-tx on the mbarrier; the slot is
    /// filled.
    TxComplete(u32),
    /// The CTA slot a retired CTA left on this SM takes its next CTA (`sm.cta_launch_gap`).
    CtaSlotFree(u32),
    /// A remote mbarrier arrival (its index in `Shard::remote_arrivals`) reaches its CTA.
    RemoteArrive(u32),
    /// A CTA the engine's scheduler placed on one of the shard's SMs starts (its index in
    /// `Shard::launches`).
    Launch(u32),
}

// An event is an index and its tag: the heap moves (cycle, seq, event) at every level of a
// push or pop, so what an event refers to lives in the engine, not in the event.
const _: () = assert!(std::mem::size_of::<Event>() == 8);

impl Shard<'_> {
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
                    self.activate(p);
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
            Event::HgmmaComplete(wg) => self.on_hgmma_complete(wg),
            Event::TmaChunk(load) => self.on_tma_chunk(load),
            Event::TmaLastChunk(load) => self.on_tma_last_chunk(load),
            Event::TxComplete(load) => self.on_tx_complete(load),
            Event::CtaSlotFree(sm) => self.free_cta_slot(sm),
            Event::RemoteArrive(i) => self.on_remote_arrive(i),
            Event::Launch(i) => {
                let l = self.launches.remove(i);
                self.launch_cta(l);
            }
        }
    }

    /// Wakes warp `w` at `t`; a stall until [`PENDING`] (an answer on its way from the memory
    /// system) is woken by the answer instead.
    pub(crate) fn wake_at(&mut self, w: u32, t: u64) {
        if t >= PENDING {
            self.warps[w as usize].answer_wakes = true;
            return;
        }
        self.q.push(t, Event::Wake(w));
    }
}
