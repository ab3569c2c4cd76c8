//! Operand evaluation shared by the instruction families: expressions over the warp's
//! variables, mbarrier and slot references, per-lane addresses, transaction byte counts.

use super::error::Fault;
use super::Shard;
use isa::expr::Code;
use isa::program::{lane_addresses, BarRef, CounterRef, IndexError, LaneAddrs, SlotRef};

impl Shard<'_> {
    pub(crate) fn eval(&self, w: u32, code: &Code) -> Result<i64, Fault> {
        Ok(code.eval(&self.warps[w as usize].env)?)
    }

    /// The flat (CTA-wide) index of an mbarrier reference.
    pub(crate) fn bar_index(&self, w: u32, b: &BarRef) -> Result<u32, Fault> {
        Ok(self.k.mbarriers[b.array as usize].flat(self.eval(w, &b.index)?)?)
    }

    /// The flat index of a counter reference's element.
    pub(crate) fn counter_index(&self, w: u32, c: &CounterRef) -> Result<usize, Fault> {
        let index = self.eval(w, &c.index)?;
        if !(0..c.len as i64).contains(&index) {
            let name = &self.k.counters[c.first as usize].0;
            return Err(IndexError::Counter {
                name: name.split('[').next().unwrap_or(name).to_string(),
                index,
                len: c.len,
            }
            .into());
        }
        Ok(c.first as usize + index as usize)
    }

    /// The byte offset of a slot in the CTA's shared memory.
    pub(crate) fn slot_base(&self, w: u32, s: &SlotRef) -> Result<u64, Fault> {
        Ok(self.slot(w, s)?.0)
    }

    /// The shard's index of a slot reference's slot.
    pub(crate) fn slot_index(&self, w: u32, s: &SlotRef) -> Result<u32, Fault> {
        Ok(self.slot(w, s)?.1)
    }

    /// A slot reference's slot, its reference evaluated once: its byte offset in the CTA's
    /// shared memory and the shard's index of it.
    pub(crate) fn slot(&self, w: u32, s: &SlotRef) -> Result<(u64, u32), Fault> {
        let i = self.eval(w, &s.slot)?;
        // Every CTA's shared memory starts 128-byte aligned, so bank mapping needs no CTA base.
        let base = self.k.buffers[s.buf as usize].slot_offset(i)?;
        Ok((
            base,
            self.names.slot(self.warps[w as usize].cta, s.buf, i as u32),
        ))
    }

    /// The active lanes' addresses of a per-lane expression; each one's `width` bytes must lie
    /// inside `limit` bytes from `base`.
    pub(crate) fn lane_addrs(
        &mut self,
        w: u32,
        addr: &Code,
        base: u64,
        limit: u64,
        width: u32,
        what: &'static str,
    ) -> Result<LaneAddrs, Fault> {
        let warp = &mut self.warps[w as usize];
        let mask = warp.lanes.active();
        Ok(lane_addresses(
            &mut warp.env,
            addr,
            mask,
            base,
            limit,
            width,
            what,
        )?)
    }

    pub(crate) fn tx_bytes(&self, w: u32, bytes: &Code) -> Result<u64, Fault> {
        let b = self.eval(w, bytes)?;
        if !(0..1 << 20).contains(&b) {
            return Err(Fault::TxBytes(b));
        }
        Ok(b as u64)
    }
}
