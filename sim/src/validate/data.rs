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
    (
        "wgmma",
        include_str!("../../../calibration/data/h200-wgmma.csv"),
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
];

/// What is wrong with one program's CSV, or which row the data lack.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("no header line")]
    NoHeader,
    #[error("the header `{0}` lacks test, param (or sms) or value (or bytes_per_clk_total)")]
    BadHeader(String),
    #[error("line {line}: only {cells} cells")]
    MissingCell { line: usize, cells: usize },
    #[error("line {line}: `{text}` is not a number")]
    NotANumber { line: usize, text: String },
    #[error("line {line}: no SM clock for this row")]
    NoClock { line: usize },
    #[error("no measured row {test},{param} in {program}.csv")]
    MissingRow {
        program: String,
        test: String,
        param: String,
    },
}

/// The measured rows of the programs' CSV files, by (program, test, param), and each row's SM
/// clock (a `sm_clock_mhz` column, else the file's `sm_clock_mhz_at_start` header).
#[derive(Clone, Debug, Default)]
pub struct Data {
    rows: BTreeMap<(String, String, String), (f64, f64)>,
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

    /// The stored measurements with each `<program>.csv` found in `dir` in place of its own.
    pub fn with_dir(dir: &Path) -> Result<Data, ValidateError> {
        let mut d = Data::default();
        for (program, stored) in STORED {
            let path = dir.join(format!("{program}.csv"));
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => stored.to_string(),
                Err(source) => return Err(ValidateError::Read { path, source }),
            };
            d.add(program, &text)
                .map_err(|source| ValidateError::Parse {
                    file: path.display().to_string(),
                    source,
                })?;
        }
        Ok(d)
    }

    /// Parses one program's CSV: `#` lines (one may carry `sm_clock_mhz_at_start=MHz`), a
    /// header naming `test`, `param` or `sms`, and `value` or `bytes_per_clk_total`.
    pub fn add(&mut self, program: &str, text: &str) -> Result<(), DataError> {
        let mut clock = None;
        let mut header: Option<Vec<&str>> = None;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            if let Some(comment) = line.strip_prefix('#') {
                for word in comment.split_whitespace() {
                    if let Some(v) = word.strip_prefix("sm_clock_mhz_at_start=") {
                        clock = v.parse::<f64>().ok();
                    }
                }
                continue;
            }
            let cells: Vec<&str> = line.split(',').map(str::trim).collect();
            let Some(h) = &header else {
                header = Some(cells);
                continue;
            };
            let col = |names: &[&str]| h.iter().position(|c| names.contains(c));
            let (Some(t), Some(p), Some(v)) = (
                col(&["test"]),
                col(&["param", "sms"]),
                col(&["value", "bytes_per_clk_total"]),
            ) else {
                return Err(DataError::BadHeader(h.join(",")));
            };
            let cell = |i: usize| {
                cells.get(i).copied().ok_or(DataError::MissingCell {
                    line: n + 1,
                    cells: cells.len(),
                })
            };
            let text = cell(v)?;
            let value: f64 = text.parse().map_err(|_| DataError::NotANumber {
                line: n + 1,
                text: text.to_string(),
            })?;
            let row_clock = col(&["sm_clock_mhz"])
                .and_then(|c| cells.get(c))
                .and_then(|c| c.parse::<f64>().ok())
                .or(clock)
                .filter(|c| *c > 0.0)
                .ok_or(DataError::NoClock { line: n + 1 })?;
            self.rows.insert(
                (
                    program.to_string(),
                    cell(t)?.to_string(),
                    cell(p)?.to_string(),
                ),
                (value, row_clock),
            );
        }
        if header.is_none() {
            return Err(DataError::NoHeader);
        }
        Ok(())
    }

    /// The (value, SM clock in MHz) of row (test, param) of `program`.
    pub(super) fn get(
        &self,
        program: &str,
        test: &str,
        param: &str,
    ) -> Result<(f64, f64), DataError> {
        self.rows
            .get(&(program.to_string(), test.to_string(), param.to_string()))
            .copied()
            .ok_or_else(|| DataError::MissingRow {
                program: program.to_string(),
                test: test.to_string(),
                param: param.to_string(),
            })
    }

    /// Scales every value of `test` in `program` (for tests of the checking itself).
    pub fn scale(&mut self, program: &str, test: &str, factor: f64) {
        for ((p, t, _), (v, _)) in self.rows.iter_mut() {
            if p == program && t == test {
                *v *= factor;
            }
        }
    }
}
