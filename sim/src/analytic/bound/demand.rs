//! What a kernel asks of each unit, per SM and per partition, in the units' own cycles or bytes.

/// What one SM's CTAs ask of its units.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Demand {
    /// HGMMA cycles on the SM's tensor pipe: math, at least `tensor.rs_min_cycles` in the RS form.
    pub tensor: u64,
    /// Shared-memory port cycles (wavefronts).
    pub smem: u64,
    /// TMA issue cycles.
    pub tma: u64,
    /// Cycles of the SM's L1 tag stage (global and local warp accesses, `sm::lsu`).
    pub l1: u64,
    /// Bytes through the SM's port to L2.
    pub port_bytes: u64,
    /// Bytes TMA loads move from L2 into shared memory (the SM's fill path).
    pub fill_bytes: u64,
    /// The fill path's time for them, each box at its rate (`sm::tma::fill_bytes_per_cycle`),
    /// in the fill path's sub-cycle units (`engine::server::fp_to_cycles`).
    pub fill_time: u64,
    /// Bytes TMA stores move from shared memory towards L2 (the SM's store path).
    pub store_bytes: u64,
    /// Bytes the SM's requests move through L2.
    pub l2_bytes: u64,
    /// Per partition: cycles of the ALU, FMA, MUFU and mma.sync pipes (`sm::pipes::pipe_index`).
    pub pipes: Vec<[u64; 5]>,
    /// Per partition: issue slots.
    pub issue: Vec<u64>,
}

impl Demand {
    pub(super) fn new(partitions: usize) -> Self {
        Demand {
            pipes: vec![[0; 5]; partitions],
            issue: vec![0; partitions],
            ..Default::default()
        }
    }

    pub(super) fn add(&mut self, o: &Demand) {
        self.tensor += o.tensor;
        self.smem += o.smem;
        self.tma += o.tma;
        self.l1 += o.l1;
        self.port_bytes += o.port_bytes;
        self.fill_bytes += o.fill_bytes;
        self.fill_time = self.fill_time.saturating_add(o.fill_time);
        self.store_bytes += o.store_bytes;
        self.l2_bytes += o.l2_bytes;
        for (a, b) in self.pipes.iter_mut().zip(&o.pipes) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        for (a, b) in self.issue.iter_mut().zip(&o.issue) {
            *a += b;
        }
    }
}
