//! The validation's result: each row's error, each group's mean error against its bound, and
//! the two text tables that `sim validate` prints.

use super::groups::{is_exact, Bound, Group};
use crate::analytic::fmt::Table;
use serde::Serialize;

/// One microbenchmark, measured and simulated.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub group: String,
    pub name: String,
    pub unit: String,
    pub measured: f64,
    pub simulated: f64,
    /// simulated / measured − 1, or simulated − measured in an exact group.
    pub error: f64,
}

/// One group's rows judged against its bound.
#[derive(Clone, Debug, Serialize)]
pub struct GroupResult {
    pub name: String,
    pub bound: Bound,
    pub rows: usize,
    /// Mean absolute error of the rows: relative, or in the rows' unit for an exact group.
    pub mae: f64,
    /// None where the group is not bounded.
    pub pass: Option<bool>,
    pub note: String,
}

/// The outcome of `sim validate`, as its JSON prints it.
#[derive(Clone, Debug, Serialize)]
pub struct Validation {
    pub gpu: String,
    pub rows: Vec<Row>,
    pub groups: Vec<GroupResult>,
}

impl GroupResult {
    /// Group `g` judged on its rows of `rows`; `None` when it has none.
    pub(super) fn of(g: &Group, rows: &[Row]) -> Option<GroupResult> {
        let errs: Vec<f64> = rows
            .iter()
            .filter(|r| r.group == g.name)
            .map(|r| r.error.abs())
            .collect();
        if errs.is_empty() {
            return None;
        }
        let mae = errs.iter().sum::<f64>() / errs.len() as f64;
        let pass = match g.bound {
            Bound::Relative(b) => Some(mae <= b),
            Bound::Exact => Some(mae == 0.0),
            Bound::None => None,
        };
        Some(GroupResult {
            name: g.name.to_string(),
            bound: g.bound,
            rows: errs.len(),
            mae,
            pass,
            note: g.note.to_string(),
        })
    }
}

impl Validation {
    /// The bounded groups over their bound, one line each.
    pub fn failures(&self) -> Vec<String> {
        self.groups
            .iter()
            .filter(|g| g.pass == Some(false))
            .map(|g| match g.bound {
                Bound::Exact => format!("{}: mean |error| {:.3}, must be 0", g.name, g.mae),
                Bound::Relative(b) => format!(
                    "{}: mean |error| {:.1}% over its {:.0}% bound",
                    g.name,
                    g.mae * 100.0,
                    b * 100.0
                ),
                Bound::None => String::new(),
            })
            .collect()
    }

    /// Both tables as text.
    pub fn table(&self) -> String {
        let mut rows = Table::new(&[
            "group",
            "microbenchmark",
            "measured",
            "simulated",
            "error",
            "unit",
        ])
        .right(&[2, 3, 4]);
        for r in &self.rows {
            let err = if is_exact(&r.group) {
                format!("{:+.0}", r.error)
            } else {
                format!("{:+.1}%", r.error * 100.0)
            };
            rows.row(vec![
                r.group.clone(),
                r.name.clone(),
                num(r.measured),
                num(r.simulated),
                err,
                r.unit.clone(),
            ]);
        }
        let mut groups =
            Table::new(&["group", "rows", "mean|err|", "bound", "result"]).right(&[1, 2, 3]);
        for g in &self.groups {
            let (mae, bound) = match g.bound {
                Bound::Relative(b) => (
                    format!("{:.1}%", g.mae * 100.0),
                    format!("{:.0}%", b * 100.0),
                ),
                Bound::Exact => (format!("{:.2}", g.mae), "exact".to_string()),
                Bound::None => (format!("{:.1}%", g.mae * 100.0), "-".to_string()),
            };
            let result = match g.pass {
                Some(true) => "pass".to_string(),
                Some(false) => "FAIL".to_string(),
                None => g.note.clone(),
            };
            groups.row(vec![g.name.clone(), g.rows.to_string(), mae, bound, result]);
        }
        format!("{}\n{}", rows.render(), groups.render())
    }
}

/// A value with two decimals, or none from 100 up.
fn num(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}
