//! Resource declarations: global tensors, shared-memory buffers, mbarrier arrays and counters,
//! and the CTA's shared-memory layout.

use super::limits::MAX_ARRIVALS;
use super::shapes::MAX_BYTES;
use super::Compiler;
use crate::diag::Diagnostic;
use crate::program;
use crate::scenario::{Buffer, Kernel};

/// Where the declarations put the CTA's mbarriers and how much shared memory they all take.
pub(super) struct Layout {
    pub mbarrier_count: u32,
    pub smem_bytes: u64,
}

/// The most global counters a kernel declares (all arrays together): counters are addressed
/// by a 16-bit index, one 128-byte line each.
const MAX_COUNTERS: u32 = 1 << 16;

/// A declared counter array.
pub(super) struct CounterDecl {
    pub name: String,
    pub init: i64,
    pub count: u32,
}

/// The counters one by one, as the engine holds them: `name` alone, or `name[i]` for each
/// element of an array.
pub(super) fn flat_counters(decls: &[CounterDecl]) -> Vec<(String, i64)> {
    decls
        .iter()
        .flat_map(|d| {
            (0..d.count).map(move |i| match d.count {
                1 => (d.name.clone(), d.init),
                _ => (format!("{}[{i}]", d.name), d.init),
            })
        })
        .collect()
}

impl Compiler<'_> {
    /// Declares the kernel's resources in file order and checks the CTA's shared memory.
    pub(super) fn declare(&mut self, k: &Kernel) -> Result<Layout, Diagnostic> {
        let mut placed = 0u64;
        for (i, t) in k.tensors.iter().enumerate() {
            let path = format!("{}.tensors[{i}] `{}`", self.at, t.name);
            self.unique_name(&t.name, &path)?;
            let shape = self.shape(&t.shape, &path)?;
            let dtype = self.dtype(&t.dtype, &path)?;
            let bytes = self.bytes(&shape, dtype, &path, &format!("tensor `{}`", t.name))?;
            // Tensors are laid out one after another, 4 KiB aligned (the engine's addresses).
            placed += bytes.div_ceil(4096) * 4096;
            if placed > MAX_BYTES {
                return Err(Diagnostic::new(
                    self.file,
                    format!("the tensors take {placed} bytes or more together; at most 2^48 are modeled"),
                )
                .in_path(path));
            }
            let warm = self.in_range(&t.warm, &path, "warm", 0, 1)? == 1;
            self.tensors.push(program::TensorInfo {
                name: t.name.clone(),
                dtype,
                shape,
                bytes,
                warm,
            });
        }

        // Buffers in declaration order, each 128-byte aligned (TMA needs aligned shared memory),
        // a swizzled one on 8 swizzle rows (the swizzle's pattern repeats every 8 rows; TMA
        // requires that alignment). In u128: up to 2^16 slots of up to 2^48 bytes each may be
        // declared, and the sum is reported as it is.
        let mut smem: u128 = 0;
        for (i, b) in k.smem.iter().enumerate() {
            let path = format!("{}.smem[{i}] `{}`", self.at, b.name);
            self.unique_name(&b.name, &path)?;
            let slots = self.in_range(&b.slots, &path, "slots", 1, 1 << 16)? as u32;
            let shape = self.shape(&b.shape, &path)?;
            let what = format!("a slot of buffer `{}`", b.name);
            let dtype = self.dtype(&b.dtype, &path)?;
            let slot_bytes = self.bytes(&shape, dtype, &path, &what)?;
            let swizzle =
                self.swizzle(b, shape.last().copied().unwrap_or(1) * dtype.bytes(), &path)?;
            let align = 128.max(8 * swizzle as u128);
            let base = smem.div_ceil(align) * align;
            smem = base + slot_bytes as u128 * slots as u128;
            self.buffers.push(program::BufferInfo {
                name: b.name.clone(),
                slots,
                dtype,
                shape,
                slot_bytes,
                // Past the limit only the error below reads the buffers.
                base: base.try_into().unwrap_or(u64::MAX),
                swizzle,
            });
        }
        // The mbarrier arrays, flattened; 8 bytes each after the buffers.
        let mut first = 0u32;
        for (i, m) in k.mbarriers.iter().enumerate() {
            let path = format!("{}.mbarriers[{i}] `{}`", self.at, m.name);
            self.unique_name(&m.name, &path)?;
            let count = self.in_range(&m.count, &path, "count", 1, 1 << 16)? as u32;
            let arrivals = self.in_range(&m.arrivals, &path, "arrivals", 1, MAX_ARRIVALS)? as u32;
            self.mbarriers.push(program::MBarrierInfo {
                name: m.name.clone(),
                count,
                arrivals,
                first,
            });
            first += count;
        }
        let smem_bytes = smem.div_ceil(8) * 8 + 8 * first as u128;
        let mut flat = 0u32;
        for (i, c) in k.counters.iter().enumerate() {
            let path = format!("{}.counters[{i}] `{}`", self.at, c.name);
            self.unique_name(&c.name, &path)?;
            let init = self.constant(&c.init, &path, "initial value")?;
            let count = self.in_range(&c.count, &path, "counters", 1, MAX_COUNTERS as i64)? as u32;
            if flat + count > MAX_COUNTERS {
                return Err(Diagnostic::new(
                    self.file,
                    format!("the kernel declares more than {MAX_COUNTERS} counters in all"),
                )
                .in_path(path));
            }
            flat += count;
            self.counters.push(CounterDecl {
                name: c.name.clone(),
                init,
                count,
            });
        }
        let smem_bytes = self.smem_limit(smem_bytes)?;
        Ok(Layout {
            mbarrier_count: first,
            smem_bytes,
        })
    }

    /// A buffer's TMA swizzle: 0, 32, 64 or 128 bytes, with a tile row (`row` bytes) no wider than it or a
    /// whole number of its width (columns of swizzled rows, as a tensor map with an extra box
    /// dimension loads them).
    fn swizzle(&self, b: &Buffer, row: u64, path: &str) -> Result<u32, Diagnostic> {
        let v = self.constant(&b.swizzle, path, "swizzle")?;
        if ![0, 32, 64, 128].contains(&v) {
            return Err(self.err(
                Some(b.swizzle.id),
                path,
                format!(
                    "swizzle is {v} (`{}`); expected 0 (none), 32, 64 or 128 bytes",
                    b.swizzle.text
                ),
            ));
        }
        if v > 0 && row > v as u64 && !row.is_multiple_of(v as u64) {
            return Err(self.err(
                Some(b.swizzle.id),
                path,
                format!(
                    "a tile row of buffer `{}` is {row} bytes: with a {v}-byte swizzle it must be \
                     at most {v} bytes or a multiple of {v} (TMA swizzles rows of at most the \
                     swizzle's width; wider tiles are columns of them)",
                    b.name
                ),
            ));
        }
        Ok(v as u32)
    }
}
