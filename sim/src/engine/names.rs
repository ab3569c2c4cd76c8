//! Identities and names of a kernel's objects across all launched CTAs: engine-wide slot
//! indices and the names that messages, traces and the sanitizer print (`sB[2]`, `full[1]`).

use isa::program::Kernel;

/// Names and the slot layout of one kernel, shared by the engine and its observers.
#[derive(Clone, Debug, Default)]
pub struct Names {
    /// Per buffer: its name and its first slot within a CTA's slots.
    buffers: Vec<(String, u32)>,
    /// Slots of all buffers of one CTA.
    slots_per_cta: u32,
    /// Per mbarrier array: its name and its first flat index.
    mbarriers: Vec<(String, u32)>,
    /// Flat mbarriers of one CTA.
    mbarriers_per_cta: u32,
    /// Per warp of a CTA (in launch order): its name, `consumer1.w2`.
    warps: Vec<String>,
    accs: Vec<String>,
    /// CTAs per cluster (consecutive CTA indices); 0 or 1: no clusters.
    cluster: u32,
}

/// `consumer1.w2` for each warp of a CTA, in launch order, from the roles as (name, warpgroups).
fn warp_names<'a>(roles: impl Iterator<Item = (&'a str, u32)>) -> Vec<String> {
    roles
        .flat_map(|(name, wgs)| {
            (0..wgs).flat_map(move |g| {
                (0..isa::program::WARPS_PER_WARPGROUP).map(move |w| format!("{name}{g}.w{w}"))
            })
        })
        .collect()
}

impl Names {
    pub fn new(k: &Kernel) -> Self {
        let mut first = 0;
        let buffers = k
            .buffers
            .iter()
            .map(|b| {
                let entry = (b.name.clone(), first);
                first += b.slots;
                entry
            })
            .collect();
        Names {
            buffers,
            slots_per_cta: first,
            mbarriers: k
                .mbarriers
                .iter()
                .map(|m| (m.name.clone(), m.first))
                .collect(),
            mbarriers_per_cta: k.mbarriers.iter().map(|m| m.count).sum(),
            warps: warp_names(k.roles.iter().map(|r| (r.name.as_str(), r.warpgroups))),
            accs: k.accs.clone(),
            cluster: k.cluster,
        }
    }

    /// A layout from its parts: buffers as (name, slots), mbarrier arrays as (name, count),
    /// roles as (name, warpgroups), accumulator labels (for tests of observers without a
    /// kernel).
    pub fn from_parts(
        buffers: &[(&str, u32)],
        mbarriers: &[(&str, u32)],
        roles: &[(&str, u32)],
        accs: &[&str],
    ) -> Self {
        let (mut first, mut flat) = (0, 0);
        Names {
            buffers: buffers
                .iter()
                .map(|&(n, slots)| {
                    first += slots;
                    (n.to_string(), first - slots)
                })
                .collect(),
            slots_per_cta: first,
            mbarriers: mbarriers
                .iter()
                .map(|&(n, count)| {
                    flat += count;
                    (n.to_string(), flat - count)
                })
                .collect(),
            mbarriers_per_cta: mbarriers.iter().map(|m| m.1).sum(),
            warps: warp_names(roles.iter().copied()),
            accs: accs.iter().map(|s| s.to_string()).collect(),
            cluster: 1,
        }
    }

    /// The same layout launched in clusters of `size` CTAs.
    pub fn with_cluster(self, size: u32) -> Self {
        Names {
            cluster: size,
            ..self
        }
    }

    /// Engine-wide index of slot `i` of buffer `buf` in CTA `cta` (engine-wide CTA index).
    pub fn slot(&self, cta: u32, buf: u16, i: u32) -> u32 {
        cta * self.slots_per_cta + self.buffers[buf as usize].1 + i
    }

    /// The engine-wide index of the slot of CTA `cta` that is `slot` in its own CTA.
    pub fn same_slot(&self, slot: u32, cta: u32) -> u32 {
        cta * self.slots_per_cta + slot % self.slots_per_cta.max(1)
    }

    /// `sB[2]` for an engine-wide slot index.
    pub fn slot_name(&self, slot: u32) -> String {
        let within = slot % self.slots_per_cta.max(1);
        let (name, first) = self
            .buffers
            .iter()
            .rev()
            .find(|b| b.1 <= within)
            .expect("slot indices come from declared buffers");
        format!("{name}[{}]", within - first)
    }

    /// `full[1]` for a flat mbarrier index.
    pub fn mbarrier(&self, flat: u32) -> String {
        let (name, first) = self
            .mbarriers
            .iter()
            .rev()
            .find(|m| m.1 <= flat)
            .expect("flat index comes from a declared mbarrier");
        format!("{name}[{}]", flat - first)
    }

    pub fn slots_per_cta(&self) -> u32 {
        self.slots_per_cta
    }
    pub fn mbarriers_per_cta(&self) -> u32 {
        self.mbarriers_per_cta
    }
    pub fn warps_per_cta(&self) -> u32 {
        self.warps.len() as u32
    }
    /// CTAs per cluster (1 without clusters).
    pub fn cluster_size(&self) -> u32 {
        self.cluster.max(1)
    }

    /// `consumer1.w2` for a warp's index within its CTA.
    pub fn warp(&self, within: u32) -> &str {
        &self.warps[within as usize]
    }

    pub fn acc(&self, label: u16) -> &str {
        &self.accs[label as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_and_barriers_are_named_by_array_and_index() {
        let n = Names::from_parts(
            &[("sA", 2), ("sB", 3)],
            &[("full", 2), ("empty", 2)],
            &[("producer", 1), ("consumer", 2)],
            &["acc"],
        );
        assert_eq!(n.slot(0, 1, 2), 4);
        assert_eq!(n.slot(1, 0, 1), 6);
        assert_eq!(n.slot_name(4), "sB[2]");
        assert_eq!(n.slot_name(6), "sA[1]");
        assert_eq!(n.mbarrier(0), "full[0]");
        assert_eq!(n.mbarrier(3), "empty[1]");
        assert_eq!(n.acc(0), "acc");
        assert_eq!((n.mbarriers_per_cta(), n.warps_per_cta()), (4, 12));
        assert_eq!(n.warp(3), "producer0.w3");
        assert_eq!(n.warp(9), "consumer1.w1");
    }
}
