//! `sim sweep --plot`: an SVG line chart of one metric against one swept parameter, a line per
//! combination of the other parameters' values. Text uses the generic `sans-serif` family, as
//! the report page does, so the chart needs no particular font.

use super::{Axis, Metrics, Sweep};
use crate::observe::report_html::esc;
use std::fmt::Write;

/// What the chart's y axis shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Metric {
    Cycles,
    #[value(name = "time_us")]
    TimeUs,
    Tflops,
    #[value(name = "dram_gbs")]
    DramGbs,
}

impl Metric {
    fn of(self, m: &Metrics) -> f64 {
        match self {
            Metric::Cycles => m.cycles as f64,
            Metric::TimeUs => m.time_us,
            Metric::Tflops => m.tflops,
            Metric::DramGbs => m.dram_gbs,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Metric::Cycles => "cycles",
            Metric::TimeUs => "time (µs)",
            Metric::Tflops => "TFLOP/s",
            Metric::DramGbs => "DRAM GB/s",
        }
    }
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlotError {
    #[error("--x {0}: not a swept parameter (swept: {1})")]
    NotSwept(String, String),
    #[error("--plot needs --x PARAM when more than one parameter is swept ({0})")]
    WhichX(String),
    #[error("--plot needs a swept parameter")]
    NothingSwept,
}

/// Colours that stay apart on white, one per line, repeating past eight.
const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
];

/// A point of a line: its x value and its metric, none where the point failed.
type Dot = (i64, Option<f64>);

/// `x` defaults to the only swept parameter.
pub fn line_chart(sweep: &Sweep, x: Option<&str>, metric: Metric) -> Result<String, PlotError> {
    let names: Vec<&str> = sweep.axes.iter().map(|a| a.name.as_str()).collect();
    let xi = x_axis(&sweep.axes, x)?;
    // One line per combination of the other values, in the order they first appear; a failed
    // point leaves a gap.
    let mut lines: Vec<(Vec<i64>, Vec<Dot>)> = Vec::new();
    for r in &sweep.rows {
        let others: Vec<i64> = (0..r.values.len())
            .filter(|&i| i != xi)
            .map(|i| r.values[i])
            .collect();
        let y = r.outcome().ok().map(|m| metric.of(m));
        match lines.iter_mut().find(|(o, _)| *o == others) {
            Some((_, pts)) => pts.push((r.values[xi], y)),
            None => lines.push((others, vec![(r.values[xi], y)])),
        }
    }
    let xs = &sweep.axes[xi].values;
    let (x0, x1) = (
        *xs.iter().min().unwrap_or(&0) as f64,
        *xs.iter().max().unwrap_or(&0) as f64,
    );
    let ymax = lines
        .iter()
        .flat_map(|(_, p)| p.iter().filter_map(|(_, y)| *y))
        .fold(0.0, f64::max);
    let ytop = if ymax > 0.0 { nice_ceiling(ymax) } else { 1.0 };
    let (left, right, top, bottom) = (80.0, 560.0, 30.0, 330.0);
    let px = |v: f64| {
        if x1 > x0 {
            left + (right - left) * (v - x0) / (x1 - x0)
        } else {
            (left + right) / 2.0
        }
    };
    let py = |v: f64| bottom - (bottom - top) * v / ytop;
    let legend_top = bottom + 50.0;
    let height = legend_top + 16.0 * lines.len() as f64 + 10.0;
    let mut o = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"{w}\" height=\"{height}\" fill=\"#fff\"/>\n<text x=\"{left}\" y=\"18\" font-weight=\"bold\">{}: {} against {}</text>\n<rect x=\"{left}\" y=\"{top}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n",
        esc(&sweep.scenario),
        metric.label(),
        esc(names[xi]),
        right - left,
        bottom - top,
        w = right + 40.0,
    );
    for i in 0..=5 {
        let v = ytop * i as f64 / 5.0;
        let _ = writeln!(
            o,
            "<line x1=\"{left}\" y1=\"{0:.1}\" x2=\"{right}\" y2=\"{0:.1}\" stroke=\"#eee\"/><text x=\"{1}\" y=\"{2:.1}\" text-anchor=\"end\" fill=\"#666\">{3}</text>",
            py(v),
            left - 6.0,
            py(v) + 4.0,
            tick(v)
        );
    }
    for &v in xs {
        let _ = writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" fill=\"#666\">{v}</text>",
            px(v as f64),
            bottom + 16.0
        );
    }
    let _ = writeln!(
        o,
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text><text x=\"12\" y=\"{:.1}\" transform=\"rotate(-90 12 {:.1})\" text-anchor=\"middle\">{}</text>",
        (left + right) / 2.0,
        bottom + 34.0,
        esc(names[xi]),
        (top + bottom) / 2.0,
        (top + bottom) / 2.0,
        metric.label()
    );
    let other_names: Vec<&str> = (0..names.len())
        .filter(|&i| i != xi)
        .map(|i| names[i])
        .collect();
    for (n, (others, pts)) in lines.iter().enumerate() {
        let c = PALETTE[n % PALETTE.len()];
        // A path restarts after each gap.
        let mut d = String::new();
        let mut pen_up = true;
        for &(x, y) in pts {
            match y {
                Some(y) => {
                    let _ = write!(
                        d,
                        "{}{:.1},{:.1} ",
                        if pen_up { "M" } else { "L" },
                        px(x as f64),
                        py(y)
                    );
                    pen_up = false;
                }
                None => pen_up = true,
            }
        }
        let label: Vec<String> = other_names
            .iter()
            .zip(others)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let label = if label.is_empty() {
            metric.label().to_string()
        } else {
            label.join(", ")
        };
        let _ = writeln!(
            o,
            "<path d=\"{}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"/>",
            d.trim_end()
        );
        for &(x, y) in pts {
            if let Some(y) = y {
                let _ = writeln!(
                    o,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{c}\"><title>{}, {}={x}: {}</title></circle>",
                    px(x as f64),
                    py(y),
                    esc(&label),
                    esc(names[xi]),
                    tick(y)
                );
            }
        }
        let ly = legend_top + 16.0 * n as f64;
        let _ = writeln!(
            o,
            "<line x1=\"{left}\" y1=\"{ly:.1}\" x2=\"{}\" y2=\"{ly:.1}\" stroke=\"{c}\" stroke-width=\"2\"/><text x=\"{}\" y=\"{:.1}\">{}</text>",
            left + 20.0,
            left + 26.0,
            ly + 4.0,
            esc(&label)
        );
    }
    o.push_str("</svg>\n");
    Ok(o)
}

/// Which of `axes` the chart's x is: `x`, or the only one. A sweep checks this before it
/// simulates, so that a wrong `--x` costs nothing.
pub fn x_axis(axes: &[Axis], x: Option<&str>) -> Result<usize, PlotError> {
    let names: Vec<&str> = axes.iter().map(|a| a.name.as_str()).collect();
    match (x, names.len()) {
        (_, 0) => Err(PlotError::NothingSwept),
        (None, 1) => Ok(0),
        (None, _) => Err(PlotError::WhichX(names.join(", "))),
        (Some(x), _) => names
            .iter()
            .position(|n| *n == x)
            .ok_or_else(|| PlotError::NotSwept(x.to_string(), names.join(", "))),
    }
}

/// The smallest of 1, 2, 2.5 or 5 times a power of ten at or above `v`: round axis ends.
fn nice_ceiling(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&c| c >= v)
        .unwrap_or(10.0 * p)
}

/// A tick label: whole numbers as they are, others with three significant digits.
fn tick(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{:.3}", v)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_ends_are_round() {
        assert_eq!(nice_ceiling(281_881.0), 500_000.0);
        assert_eq!(nice_ceiling(190.0), 200.0);
        assert_eq!(nice_ceiling(2.1), 2.5);
        assert_eq!(tick(100_000.0), "100000");
        assert_eq!(tick(0.5), "0.5");
    }
}
