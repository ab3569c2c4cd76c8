//! Shape checks: array shapes, TMA coordinates and boxes, wgmma's M, N, k-steps and operand
//! sizes, per-lane access widths, and the scoreboard numbers of loads.

use super::names::Names;
use super::Compiler;
use super::MAX_RANK;
use crate::diag::Diagnostic;
use crate::expr::Code;
use crate::program::{SlotRef, SCOREBOARDS};
use crate::scenario::{AOperand, DType, DTypeSpec, Expr, Instr, Ref};

/// wgmma N: a multiple of 8 in 8..=256 (PTX wgmma.mma_async, 16-bit types).
const WGMMA_N_MAX: i64 = 256;

/// The most rows one warpgroup's wgmma may cover: four m64 blocks, each N/2 accumulator registers
/// per thread (CUTLASS tiles a warpgroup's M with repeated m64 atoms).
const WGMMA_M_MAX: i64 = 256;

/// The largest TMA box dimension, in elements (cuTensorMapEncodeTiled's boxDim).
const TMA_BOX_MAX: u64 = 256;

/// The most bytes a tensor, a buffer's slot, or all tensors together may take (256 TiB).
pub(super) const MAX_BYTES: u64 = 1 << 48;

/// A checked wgmma shape: m`m` n`n` k(`k` x `ksteps`), with its shared-memory operands.
pub(super) struct WgmmaShape {
    /// m64 blocks per k-step (`m / 64`).
    pub blocks: u32,
    pub n: u32,
    /// K of one HGMMA: 32 bytes of an operand row, 16 elements of a 16-bit type, 32 of an
    /// 8-bit one, 8 of tf32.
    pub k: u32,
    pub ksteps: u32,
    pub a: Option<SlotRef>,
    pub b: SlotRef,
}

impl Compiler<'_> {
    /// The element type `d` names, or whose bytes its expression gives (1, 2 or 4).
    pub(super) fn dtype(&self, d: &DTypeSpec, path: &str) -> Result<DType, Diagnostic> {
        let e = match d {
            DTypeSpec::F8 => return Ok(DType::F8),
            DTypeSpec::F16 => return Ok(DType::F16),
            DTypeSpec::BF16 => return Ok(DType::BF16),
            DTypeSpec::F32 => return Ok(DType::F32),
            DTypeSpec::Bytes(e) => e,
        };
        match self.constant(e, path, "element bytes")? {
            1 => Ok(DType::F8),
            2 => Ok(DType::BF16),
            4 => Ok(DType::F32),
            b => Err(self.err(
                Some(e.id),
                path,
                format!(
                    "dtype Bytes(\"{}\") is {b}; an element is 1 (F8), 2 (BF16) or 4 (F32) bytes",
                    e.text
                ),
            )),
        }
    }

    /// A tensor's or buffer slot's shape: 1 to `MAX_RANK` dimensions, each positive.
    pub(super) fn shape(&self, dims: &[Expr], path: &str) -> Result<Vec<u64>, Diagnostic> {
        if dims.is_empty() || dims.len() > MAX_RANK {
            return Err(Diagnostic::new(
                self.file,
                format!(
                    "a shape has 1 to {MAX_RANK} dimensions, this one has {}",
                    dims.len()
                ),
            )
            .in_path(path));
        }
        dims.iter()
            .map(|d| {
                self.in_range(d, path, "dimension", 1, 1 << 40)
                    .map(|v| v as u64)
            })
            .collect()
    }

    /// The bytes of a `shape` of `dtype` elements, within [`MAX_BYTES`]: a product that
    /// wrapped around u64 would pass every later size check.
    pub(super) fn bytes(
        &self,
        shape: &[u64],
        dtype: DType,
        path: &str,
        what: &str,
    ) -> Result<u64, Diagnostic> {
        shape
            .iter()
            .try_fold(dtype.bytes(), |a, &d| a.checked_mul(d))
            .filter(|&b| b <= MAX_BYTES)
            .ok_or_else(|| {
                let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
                Diagnostic::new(
                    self.file,
                    format!(
                        "{what} is {} elements of {} bytes: more than 2^48 bytes, the address space modeled",
                        dims.join("x"),
                        dtype.bytes()
                    ),
                )
                .in_path(path)
            })
    }

    /// TMA coordinates: one per dimension of `tensor`.
    pub(super) fn coords(
        &self,
        tensor: u16,
        coords: &[Expr],
        path: &str,
    ) -> Result<Vec<Code>, Diagnostic> {
        let rank = self.tensors[tensor as usize].shape.len();
        if coords.len() != rank {
            return Err(Diagnostic::new(
                self.file,
                format!(
                    "tensor `{}` has {rank} dimensions but {} coordinates are given",
                    self.tensors[tensor as usize].name,
                    coords.len()
                ),
            )
            .in_path(path));
        }
        coords
            .iter()
            .map(|c| self.code(c, Names::Program, path))
            .collect()
    }

    /// The bytes one TMA copy moves: the box is the buffer's slot, of the tensor's rank and type.
    /// A `TmaLoad`'s `part` count: it divides the slot's rows (the dimension above the
    /// innermost) into equal boxes.
    pub(super) fn tma_parts(
        &self,
        slot: &SlotRef,
        n: &Expr,
        path: &str,
    ) -> Result<u32, Diagnostic> {
        let b = &self.buffers[slot.buf as usize];
        let rows = match b.shape.len() {
            0 | 1 => 0,
            r => b.shape[r - 2],
        };
        let parts = self.in_range(n, path, "TMA load parts", 1, 16)?;
        if rows == 0 || rows % parts as u64 != 0 {
            return Err(self.err(
                Some(n.id),
                path,
                format!(
                    "{parts} parts do not divide buffer `{}`'s slot rows evenly (shape {:?}: the dimension above the innermost)",
                    b.name, b.shape
                ),
            ));
        }
        Ok(parts as u32)
    }

    pub(super) fn tma_box(
        &self,
        tensor: u16,
        slot: &SlotRef,
        path: &str,
    ) -> Result<u64, Diagnostic> {
        let t = &self.tensors[tensor as usize];
        let b = &self.buffers[slot.buf as usize];
        if t.shape.len() != b.shape.len() {
            return Err(Diagnostic::new(
                self.file,
                format!(
                    "the TMA box is buffer `{}`'s slot shape ({} dimensions) but tensor `{}` has {}",
                    b.name,
                    b.shape.len(),
                    t.name,
                    t.shape.len()
                ),
            )
            .in_path(path));
        }
        if let Some(d) = b.shape.iter().find(|&&d| d > TMA_BOX_MAX) {
            return Err(Diagnostic::new(
                self.file,
                format!(
                    "TMA box dimension {d} of buffer `{}` exceeds {TMA_BOX_MAX} elements",
                    b.name
                ),
            )
            .in_path(path));
        }
        if t.dtype != b.dtype {
            return Err(Diagnostic::new(
                self.file,
                format!(
                    "tensor `{}` is {:?} but buffer `{}` is {:?}",
                    t.name, t.dtype, b.name, b.dtype
                ),
            )
            .in_path(path));
        }
        Ok(b.slot_bytes)
    }

    /// wgmma's N and k-steps, and operand slots large enough for A (64 x K) and B (N x K).
    pub(super) fn wgmma_shape(
        &self,
        m: &Expr,
        n: &Expr,
        ksteps: &Expr,
        a: &AOperand,
        b: &Ref,
        path: &str,
    ) -> Result<WgmmaShape, Diagnostic> {
        let mv = self.constant(m, path, "wgmma M")?;
        if mv % 64 != 0 || !(64..=WGMMA_M_MAX).contains(&mv) {
            return Err(self.err(
                Some(m.id),
                path,
                format!("wgmma M is {mv}; expected 64, 128, 192 or 256 (m64nNk16 per 64 rows)"),
            ));
        }
        let nv = self.constant(n, path, "wgmma N")?;
        if nv % 8 != 0 || !(8..=WGMMA_N_MAX).contains(&nv) {
            return Err(self.err(
                Some(n.id),
                path,
                format!(
                    "wgmma N is {nv}; expected a multiple of 8 in 8..={WGMMA_N_MAX} (m64nNk16)"
                ),
            ));
        }
        let ks = self.in_range(ksteps, path, "wgmma k-steps", 1, 64)? as u32;
        // Every HGMMA reads 32 bytes of each operand row, whatever the type.
        let a = match a {
            AOperand::Regs => None,
            AOperand::Smem(r) => Some(self.operand(r, path, mv as u64 * 32 * ks as u64, "A")?),
        };
        let b_ref = b;
        let b = self.operand(b_ref, path, nv as u64 * 32 * ks as u64, "B")?;
        let dtype = self.buffers[b.buf as usize].dtype;
        if let Some(a) = &a {
            let (ab, bb) = (&self.buffers[a.buf as usize], &self.buffers[b.buf as usize]);
            if ab.dtype.bytes() != bb.dtype.bytes() {
                return Err(self.err(
                    Some(b_ref.id),
                    path,
                    format!(
                        "wgmma operands differ in width: A (`{}`) is {:?}, B (`{}`) is {:?}; both are 8-bit (e4m3/e5m2), 16-bit (bf16/f16) or 32-bit (tf32)",
                        ab.name, ab.dtype, bb.name, bb.dtype
                    ),
                ));
            }
        }
        Ok(WgmmaShape {
            blocks: (mv / 64) as u32,
            n: nv as u32,
            k: 32 / dtype.bytes() as u32,
            ksteps: ks,
            a,
            b,
        })
    }

    /// A wgmma operand slot; checks the slot holds `bytes` bytes.
    fn operand(&self, r: &Ref, path: &str, need: u64, which: &str) -> Result<SlotRef, Diagnostic> {
        let s = self.slot(r, path)?;
        let b = &self.buffers[s.buf as usize];
        if b.slot_bytes < need {
            return Err(self.err(
                Some(r.id),
                path,
                format!(
                    "wgmma operand {which} needs {need} bytes but a slot of `{}` holds {}",
                    b.name, b.slot_bytes
                ),
            ));
        }
        Ok(s)
    }

    /// Bytes per lane of a load or store: 1, 2, 4, 8 or 16.
    pub(super) fn width(&self, e: &Expr, path: &str) -> Result<u32, Diagnostic> {
        let w = self.constant(e, path, "access width")?;
        if ![1, 2, 4, 8, 16].contains(&w) {
            return Err(self.err(
                Some(e.id),
                path,
                format!("access width is {w} bytes per lane; expected 1, 2, 4, 8 or 16"),
            ));
        }
        Ok(w as u32)
    }

    /// Bytes per lane of a cp.async: 4, 8 or 16 (PTX cp.async.ca/cg cp-size).
    pub(super) fn cp_async_width(&self, e: &Expr, path: &str) -> Result<u32, Diagnostic> {
        let w = self.width(e, path)?;
        if ![4, 8, 16].contains(&w) {
            return Err(self.err(
                Some(e.id),
                path,
                format!("cp.async copies 4, 8 or 16 bytes per lane, not {w}"),
            ));
        }
        Ok(w)
    }

    /// The scoreboard a load names (`sb`), checked to be 0 to 5; `None` for a store.
    pub(super) fn load_scoreboard(
        &self,
        ins: &Instr,
        path: &str,
    ) -> Result<Option<u8>, Diagnostic> {
        match ins {
            Instr::LdShared { sb, .. } | Instr::LdGlobal { sb, .. } => {
                sb.map(|k| self.scoreboard(k, path)).transpose()
            }
            _ => Ok(None),
        }
    }

    /// Scoreboard `k`, checked to be 0 to 5.
    pub(super) fn scoreboard(&self, k: u8, path: &str) -> Result<u8, Diagnostic> {
        if usize::from(k) >= SCOREBOARDS {
            return Err(self.err(
                None,
                path,
                format!("scoreboard {k} does not exist: a warp has scoreboards 0 to 5"),
            ));
        }
        Ok(k)
    }

    /// The scoreboards a `WaitScoreboard` names, as a mask (bit k: scoreboard k).
    pub(super) fn scoreboard_mask(&self, sbs: &[u8], path: &str) -> Result<u8, Diagnostic> {
        if sbs.is_empty() {
            return Err(self.err(None, path, "`WaitScoreboard` names no scoreboard".into()));
        }
        sbs.iter()
            .try_fold(0u8, |mask, &k| Ok(mask | 1 << self.scoreboard(k, path)?))
    }
}
