//! The report as one table, a row per number (`sim run --csv`): every number of the `--json`
//! object, in its order, named by its JSON Pointer (RFC 6901: `/units/tensor/busy`), with its
//! unit and, for the `ncu` object's entries, the Nsight Compute metric name. Text fields
//! (names, notes, the trace's path) stay in `--json`. Columns: `scenario,gpu,seed,metric,
//! value,unit,ncu`, so the tables of several runs concatenate into one.

use super::ncu;
use super::report::Report;
use crate::sequence::SequenceReport;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// The shape of a JSON value with its objects' keys in document order (`serde_json::Value`
/// sorts them); the numbers themselves are taken from the report's `Value`, exact.
enum Node {
    Number,
    Object(Vec<(String, Node)>),
    Array(Vec<Node>),
    /// Strings, booleans and nulls: not numbers, not rows.
    Other,
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Node;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_i64<E>(self, _: i64) -> Result<Node, E> {
                Ok(Node::Number)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Node, E> {
                Ok(Node::Number)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
                Ok(Node::Number)
            }
            fn visit_str<E>(self, _: &str) -> Result<Node, E> {
                Ok(Node::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
                Ok(Node::Other)
            }
            fn visit_unit<E>(self) -> Result<Node, E> {
                Ok(Node::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
                let mut items = Vec::new();
                while let Some(n) = a.next_element()? {
                    items.push(n);
                }
                Ok(Node::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = a.next_entry()? {
                    entries.push(entry);
                }
                Ok(Node::Object(entries))
            }
        }
        d.deserialize_any(V)
    }
}

/// One number of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Its JSON Pointer in the `--json` object.
    pub metric: String,
    /// As `--json` prints it.
    pub value: String,
    pub unit: &'static str,
    /// The Nsight Compute metric name, for the entries of `ncu`.
    pub ncu: Option<String>,
}

/// A key as a JSON Pointer segment: `~` and `/` escaped.
fn segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The rows of the numbers under `node`, at `path` in `json`, the same value.
fn collect(node: &Node, json: &Value, path: &mut Vec<String>, rows: &mut Vec<Row>) {
    match node {
        Node::Object(entries) => {
            for (k, n) in entries {
                path.push(k.clone());
                collect(n, &json[k], path, rows);
                path.pop();
            }
        }
        Node::Array(items) => {
            for (i, n) in items.iter().enumerate() {
                path.push(i.to_string());
                collect(n, &json[i], path, rows);
                path.pop();
            }
        }
        Node::Number => {
            let keys: Vec<&str> = path.iter().map(String::as_str).collect();
            rows.push(Row {
                metric: keys.iter().map(|k| format!("/{}", segment(k))).collect(),
                // The digits `--json` prints for this value.
                value: json.to_string(),
                unit: unit(&keys),
                ncu: match keys[..] {
                    ["ncu", name] => Some(name.to_string()),
                    _ => None,
                },
            });
        }
        Node::Other => {}
    }
}

/// The unit of the number at `path` (keys from the top of the report).
fn unit(path: &[&str]) -> &'static str {
    match path {
        ["ncu", name] => ncu::unit(name),
        ["sms" | "sms_total"] | ["sm_ctas", _] => "SMs",
        ["ctas"] => "CTAs",
        ["ctas_per_sm"] => "CTAs/SM",
        ["waves"] => "waves",
        ["last_wave_fill" | "tensor_load"] | ["l1" | "l2", "hit_rate"] | ["units", _, "busy"] => {
            "fraction"
        }
        ["cycles"] | ["analytic" | "bound", "cycles"] | ["bound", "units", _] => "cycles",
        ["trace", "truncated_at"] => "cycles",
        ["clock_mhz" | "reference_clock_mhz"] => "MHz",
        ["time_us"] => "us",
        ["flops"] => "FLOP",
        ["tflops"] => "TFLOP/s",
        ["instructions"] | ["roles", _, "instructions"] => "warp-inst",
        ["l2" | "dram", "bandwidth_gbs"] => "GB/s",
        ["l2", "bytes" | "shared_bytes"] | ["dram", _] => "B",
        ["l1", "sectors"] => "sectors",
        ["schedulers", "active_warps" | "eligible_warps"] | ["roles", _, "warps"] => "warps",
        ["schedulers", "issued_per_cycle"] => "inst/cycle",
        ["roles", _, "lifetime"] => "warp-cycles",
        ["roles", _, "states" | "ncu" | "mbarrier_waits" | "wgmma_waits", _] => "warp-cycles",
        ["roles", _, "cycles_per_issued", _] => "cycles/inst",
        ["analytic" | "bound", "ratio"] => "ratio",
        ["events"] | ["trace", "events"] => "events",
        ["peak", "tensor_flops_per_cycle"] => "FLOP/cycle",
        ["peak", _] => "B/cycle",
        // The seed and the scenario's parameters have none.
        _ => "",
    }
}

impl Report {
    /// Every number of [`Report::to_json`], in its order.
    pub fn rows(&self) -> Vec<Row> {
        let json = serde_json::to_value(self).expect("the report serializes");
        let shape: Node = serde_json::from_str(&self.to_json()).expect("its JSON reads back");
        let mut rows = Vec::new();
        collect(&shape, &json, &mut Vec::new(), &mut rows);
        rows
    }

    /// The rows as CSV with a header line (`sim run --csv`).
    pub fn to_csv(&self) -> Result<String, csv::Error> {
        table(&self.scenario, &self.gpu, self.seed, self.rows())
    }
}

impl SequenceReport {
    /// A sequence's rows: its cycles, time and tensor load, then each kernel's place and its report's rows,
    /// their pointers into the sequence's `--json` object (`/kernels/1/report/cycles`).
    pub fn rows(&self) -> Vec<Row> {
        let row = |metric: String, value: String, unit| Row {
            metric,
            value,
            unit,
            ncu: None,
        };
        let mut rows = vec![
            row("/cycles".into(), self.cycles.to_string(), "cycles"),
            row(
                "/time_us".into(),
                Value::from(self.time_us).to_string(),
                "us",
            ),
            row(
                "/tensor_load".into(),
                Value::from(self.tensor_load).to_string(),
                "fraction",
            ),
        ];
        for (i, k) in self.kernels.iter().enumerate() {
            let at = format!("/kernels/{i}");
            rows.push(row(format!("{at}/start"), k.start.to_string(), "cycles"));
            rows.push(row(format!("{at}/gap"), k.gap.to_string(), "cycles"));
            rows.extend(k.report.rows().into_iter().map(|r| Row {
                metric: format!("{at}/report{}", r.metric),
                ..r
            }));
        }
        rows
    }

    /// The rows as CSV, as [`Report::to_csv`] (the seed is every kernel's).
    pub fn to_csv(&self) -> Result<String, csv::Error> {
        let seed = self.kernels.first().map_or(0, |k| k.report.seed);
        table(&self.scenario, &self.gpu, seed, self.rows())
    }
}

/// `rows` as CSV with a header line, the run's names on every row.
fn table(scenario: &str, gpu: &str, seed: u64, rows: Vec<Row>) -> Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(["scenario", "gpu", "seed", "metric", "value", "unit", "ncu"])?;
    let seed = seed.to_string();
    for r in rows {
        let ncu = r.ncu.as_deref().unwrap_or("");
        w.write_record([scenario, gpu, &seed, &r.metric, &r.value, r.unit, ncu])?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(json: &str) -> Vec<Row> {
        let mut rows = Vec::new();
        let (shape, value) = (serde_json::from_str(json), serde_json::from_str(json));
        collect(&shape.unwrap(), &value.unwrap(), &mut Vec::new(), &mut rows);
        rows
    }

    #[test]
    fn numbers_keep_their_order_their_digits_and_a_pointer_each() {
        let r = rows(
            r#"{"z": 1, "a": {"b/c": 0.1, "t~": 18446744073709551615}, "s": "x", "n": null,
                "ncu": {"sm__throughput.avg.pct_of_peak_sustained_elapsed": 2.5}, "v": [3, -4]}"#,
        );
        let got: Vec<(&str, &str)> = r
            .iter()
            .map(|r| (r.metric.as_str(), r.value.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("/z", "1"),
                ("/a/b~1c", "0.1"),
                ("/a/t~0", "18446744073709551615"),
                (
                    "/ncu/sm__throughput.avg.pct_of_peak_sustained_elapsed",
                    "2.5"
                ),
                ("/v/0", "3"),
                ("/v/1", "-4"),
            ]
        );
        assert_eq!(
            r[3].ncu.as_deref(),
            Some("sm__throughput.avg.pct_of_peak_sustained_elapsed")
        );
        assert_eq!((r[3].unit, r[0].ncu.as_deref()), ("%", None));
    }
}
