//! The measured rows: the stored H200 measurements compiled in from `calibration/data/`, or a
//! new run's CSV files from a folder.

use super::ValidateError;
use std::collections::BTreeMap;
use std::path::Path;

/// The stored measurements: (program, CSV text).
const STORED: &[(&str, &str)] = &[
    (
        "core",
        include_str!("../../../calibration/data/h200-core.csv"),
    ),
    // core.cu's later build on an H100: its broadcast shared-memory loads.
    (
        "core_bcast",
        include_str!("../../../calibration/data/h100-core_bcast.csv"),
    ),
    (
        "wgmma",
        include_str!("../../../calibration/data/h200-wgmma.csv"),
    ),
    (
        "mma_sync",
        include_str!("../../../calibration/data/h200-mma_sync.csv"),
    ),
    (
        "fundamentals",
        include_str!("../../../calibration/data/h200-fundamentals.csv"),
    ),
    (
        "l1_rate",
        include_str!("../../../calibration/data/h200-l1_rate.csv"),
    ),
    (
        "loaded_lat",
        include_str!("../../../calibration/data/h200-loaded_lat.csv"),
    ),
    (
        "mem",
        include_str!("../../../calibration/data/h200-mem.csv"),
    ),
    (
        "tma",
        include_str!("../../../calibration/data/h200-tma.csv"),
    ),
    (
        "mem_bw",
        include_str!("../../../calibration/data/h200-mem_bw.csv"),
    ),
    (
        "smem_port",
        include_str!("../../../calibration/data/h200-smem_port.csv"),
    ),
    (
        "softmax",
        include_str!("../../../calibration/data/h200-softmax.csv"),
    ),
    (
        "wgmma_dtype",
        include_str!("../../../calibration/data/h100-wgmma_dtype.csv"),
    ),
    (
        "cluster",
        include_str!("../../../calibration/data/h100-cluster.csv"),
    ),
    // The fourth run of cluster.cu: its arrive_cost and mcast rows (the program's later
    // version); the third's rows above stay the source of the groups fitted to them.
    (
        "cluster2",
        include_str!("../../../calibration/data/h100-cluster2.csv"),
    ),
    (
        "cutlass_gemm",
        include_str!("../../../calibration/data/h100-cutlass_gemm.csv"),
    ),
    // Nsight Compute's counters of the fourth run's mcast kernels, as rows (ncu_rows.py).
    (
        "cluster_mcast_ncu",
        include_str!("../../../calibration/data/h100-cluster_mcast_ncu.csv"),
    ),
    (
        "l2_share",
        include_str!("../../../calibration/data/h100-l2_share.csv"),
    ),
    // l2_share.cu's later run: its lag rows (its other rows agree with the run above's).
    (
        "l2_share2",
        include_str!("../../../calibration/data/h100-l2_share_lag.csv"),
    ),
    (
        "sched",
        include_str!("../../../calibration/data/h100-sched.csv"),
    ),
    (
        "l1_cache",
        include_str!("../../../calibration/data/h100-l1_cache.csv"),
    ),
    (
        "softmax_h100",
        include_str!("../../../calibration/data/h100-softmax.csv"),
    ),
    (
        "attention",
        include_str!("../../../calibration/data/h200-attention.csv"),
    ),
    (
        "fa3",
        include_str!("../../../calibration/data/h200-fa3.csv"),
    ),
    (
        "fa3_real",
        include_str!("../../../calibration/data/h200-fa3_real.csv"),
    ),
    (
        "fa3_ncu",
        include_str!("../../../calibration/data/h100-fa3_ncu.csv"),
    ),
    (
        "mbar_cost",
        include_str!("../../../calibration/data/h200-mbar_cost.csv"),
    ),
    (
        "dram_map",
        include_str!("../../../calibration/data/h200-dram_map.csv"),
    ),
    (
        "gemm_ws",
        include_str!("../../../calibration/data/h200-gemm_ws.csv"),
    ),
    (
        "wgmma_arb",
        include_str!("../../../calibration/data/h200-wgmma_arb.csv"),
    ),
    (
        "tma_box",
        include_str!("../../../calibration/data/h200-tma_box.csv"),
    ),
    (
        "tma_unit",
        include_str!("../../../calibration/data/h200-tma_unit.csv"),
    ),
    (
        "memsys",
        include_str!("../../../calibration/data/h200-memsys.csv"),
    ),
    (
        "sector",
        include_str!("../../../calibration/data/h200-sector.csv"),
    ),
    (
        "clocks",
        include_str!("../../../calibration/data/h200-clocks.csv"),
    ),
    (
        "spill",
        include_str!("../../../calibration/data/h200-spill.csv"),
    ),
    (
        "triton_gemm",
        include_str!("../../../calibration/data/h200-triton_gemm.csv"),
    ),
];

/// The CSV file a new run writes a stored program's rows to: a later run's rows stored apart
/// (`cluster2`, `l2_share2`) come from the program's own file.
fn csv_name(program: &str) -> &str {
    match program {
        "cluster2" => "cluster",
        "l2_share2" => "l2_share",
        p => p,
    }
}

/// (line, clock) of each `#` line that states `sm_clock_mhz_at_start=MHz` (the last one on the
/// line; `None` where it is not a number), lines counted from 1.
fn comment_clocks(text: &str) -> Vec<(usize, Option<f64>)> {
    text.lines()
        .enumerate()
        .filter_map(|(n, line)| {
            let comment = line.trim().strip_prefix('#')?;
            let clock = comment
                .split_whitespace()
                .filter_map(|word| word.strip_prefix("sm_clock_mhz_at_start="))
                .next_back()?;
            Some((n + 1, clock.parse::<f64>().ok()))
        })
        .collect()
}

/// What is wrong with one program's CSV, or which row the data lack.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error(transparent)]
    Csv(#[from] csv::Error),
    #[error("no header line")]
    NoHeader,
    #[error("the header `{0}` lacks test, param (or sms) or value (or bytes_per_clk_total)")]
    BadHeader(String),
    #[error("line {line}: only {cells} cells")]
    MissingCell { line: usize, cells: usize },
    #[error("line {line}: `{text}` is not a number")]
    NotANumber { line: usize, text: String },
    #[error("{program}.csv line {line}: no SM clock for row {test},{param}")]
    NoClock {
        program: String,
        test: String,
        param: String,
        line: usize,
    },
    #[error("no measured row {test},{param} in {program}.csv")]
    MissingRow {
        program: String,
        test: String,
        param: String,
    },
}

/// One measured row: its value, the SM clock it ran at where the file states one, its line.
#[derive(Clone, Copy, Debug)]
struct Measurement {
    value: f64,
    clock: Option<f64>,
    line: usize,
}

/// The measured rows of the programs' CSV files, by (program, test, param), and each row's SM
/// clock (a `sm_clock_mhz` column, else the file's `sm_clock_mhz_at_start` header; the clock
/// measurements have none).
#[derive(Clone, Debug, Default)]
pub struct Data {
    rows: BTreeMap<(String, String, String), Measurement>,
}

impl Data {
    /// The stored measurements.
    pub fn stored() -> Result<Data, ValidateError> {
        let mut d = Data::default();
        for (program, text) in STORED {
            d.add(program, text)
                .map_err(|source| ValidateError::Parse {
                    file: format!("calibration/data/h200-{program}.csv"),
                    source,
                })?;
        }
        Ok(d)
    }

    /// The stored measurements with each `<program>.csv` found in `dir` in place of its own. A
    /// `dir` that is missing, or holds none of them, is an error: comparing against the stored
    /// data then would pass off old measurements as the new run's.
    pub fn with_dir(dir: &Path) -> Result<Data, ValidateError> {
        if !dir.is_dir() {
            return Err(ValidateError::NoDataDir(dir.to_path_buf()));
        }
        let mut d = Data::default();
        let mut found = 0;
        for (program, stored) in STORED {
            let path = dir.join(format!("{}.csv", csv_name(program)));
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => {
                    found += 1;
                    t
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => stored.to_string(),
                Err(source) => return Err(ValidateError::Read { path, source }),
            };
            d.add(program, &text)
                .map_err(|source| ValidateError::Parse {
                    file: path.display().to_string(),
                    source,
                })?;
        }
        if found == 0 {
            let mut names: Vec<String> = Vec::new();
            for (p, _) in STORED {
                let name = format!("{}.csv", csv_name(p));
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            return Err(ValidateError::NoData {
                dir: dir.to_path_buf(),
                expected: names.join(", "),
            });
        }
        Ok(d)
    }

    /// Parses one program's CSV: `#` lines (one may carry `sm_clock_mhz_at_start=MHz`), a
    /// header naming `test`, `param` or `sms`, and `value` or `bytes_per_clk_total`.
    pub fn add(&mut self, program: &str, text: &str) -> Result<(), DataError> {
        let clocks = comment_clocks(text);
        // The clock a row gets is the last one stated above it.
        let clock_at = |line: usize| {
            clocks
                .iter()
                .take_while(|(at, _)| *at < line)
                .last()
                .and_then(|(_, c)| *c)
        };
        // The reader counts neither the empty lines it skips nor comment lines in its line
        // numbers: both become a one-cell `#` record, which keeps them the file's.
        let records: String = text
            .lines()
            .map(|line| {
                let t = line.trim();
                if t.is_empty() || t.starts_with('#') {
                    "#"
                } else {
                    line
                }
            })
            .flat_map(|line| [line, "\n"])
            .collect();
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .trim(csv::Trim::All)
            .flexible(true)
            .from_reader(records.as_bytes());
        let mut header: Option<csv::StringRecord> = None;
        for record in reader.records() {
            let cells = record?;
            if cells.get(0).is_some_and(|c| c.starts_with('#')) {
                continue;
            }
            let line = cells.position().map_or(0, |p| p.line() as usize);
            let Some(h) = &header else {
                header = Some(cells);
                continue;
            };
            let col = |names: &[&str]| h.iter().position(|c| names.contains(&c));
            let (Some(t), Some(p), Some(v)) = (
                col(&["test"]),
                col(&["param", "sms"]),
                col(&["value", "bytes_per_clk_total"]),
            ) else {
                return Err(DataError::BadHeader(h.iter().collect::<Vec<_>>().join(",")));
            };
            let cell = |i: usize| {
                cells.get(i).ok_or(DataError::MissingCell {
                    line,
                    cells: cells.len(),
                })
            };
            let text = cell(v)?;
            let value: f64 = text.parse().map_err(|_| DataError::NotANumber {
                line,
                text: text.to_string(),
            })?;
            let clock = col(&["sm_clock_mhz"])
                .and_then(|c| cells.get(c))
                .and_then(|c| c.parse::<f64>().ok())
                .or(clock_at(line))
                .filter(|c| *c > 0.0);
            self.rows.insert(
                (
                    program.to_string(),
                    cell(t)?.to_string(),
                    cell(p)?.to_string(),
                ),
                Measurement { value, clock, line },
            );
        }
        if header.is_none() {
            return Err(DataError::NoHeader);
        }
        Ok(())
    }

    fn row(&self, program: &str, test: &str, param: &str) -> Result<Measurement, DataError> {
        self.rows
            .get(&(program.to_string(), test.to_string(), param.to_string()))
            .copied()
            .ok_or_else(|| DataError::MissingRow {
                program: program.to_string(),
                test: test.to_string(),
                param: param.to_string(),
            })
    }

    /// The (value, SM clock in MHz) of row (test, param) of `program`.
    pub(super) fn get(
        &self,
        program: &str,
        test: &str,
        param: &str,
    ) -> Result<(f64, f64), DataError> {
        let m = self.row(program, test, param)?;
        let clock = m.clock.ok_or_else(|| DataError::NoClock {
            program: program.to_string(),
            test: test.to_string(),
            param: param.to_string(),
            line: m.line,
        })?;
        Ok((m.value, clock))
    }

    /// The value of row (test, param) of `program`, with or without a clock.
    pub fn value(&self, program: &str, test: &str, param: &str) -> Result<f64, DataError> {
        Ok(self.row(program, test, param)?.value)
    }

    /// Scales every value of `test` in `program` (for tests of the checking itself).
    pub fn scale(&mut self, program: &str, test: &str, factor: f64) {
        for ((p, t, _), m) in self.rows.iter_mut() {
            if p == program && t == test {
                m.value *= factor;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_take_the_clock_stated_above_them_and_errors_name_the_line() {
        let mut d = Data::default();
        d.add(
            "p",
            "test,param,value\n# sm_clock_mhz_at_start=1500\n  a, 1 , 2.5\n",
        )
        .unwrap();
        assert_eq!(d.get("p", "a", "1").unwrap(), (2.5, 1500.0));
        // A row without a clock has its value; asking for its clock names it.
        let late = "test,param,value\nb,1,3\n# sm_clock_mhz_at_start=1500\n";
        d.add("q", late).unwrap();
        assert_eq!(d.value("q", "b", "1").unwrap(), 3.0);
        assert_eq!(
            d.get("q", "b", "1").unwrap_err().to_string(),
            "q.csv line 2: no SM clock for row b,1"
        );
        let bad = "# x\n\n   # indented\ntest,param,value,sm_clock_mhz\nc,1,x,1000\n";
        assert_eq!(
            d.add("p", bad).unwrap_err().to_string(),
            "line 5: `x` is not a number"
        );
    }
}
