//! Plain-text output for `sim analyze`: grouped integers, times in readable units, and tables
//! aligned in columns (laid out by `comfy-table`).

/// `1234567` → `1,234,567`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Seconds as ms from 0.1 ms up (2 decimals), µs with 1 decimal from 1 µs, else µs with 3.
pub fn time(s: f64) -> String {
    if s >= 1e-4 {
        format!("{:.2} ms", s * 1e3)
    } else if s >= 1e-6 {
        format!("{:.1} µs", s * 1e6)
    } else {
        format!("{:.3} µs", s * 1e6)
    }
}

/// A fraction as a percentage with `decimals` decimals.
pub fn percent(f: f64, decimals: usize) -> String {
    format!("{:.*}%", decimals, f * 100.0)
}

/// Rows of cells, each column padded to its widest cell; columns are left-aligned unless
/// marked right-aligned (numbers).
#[derive(Clone, Debug, Default)]
pub struct Table {
    rows: Vec<Vec<String>>,
    right: Vec<usize>,
}

impl Table {
    /// A table whose first row is `header`.
    pub fn new(header: &[&str]) -> Table {
        let mut t = Table::default();
        t.row(header.iter().map(|h| h.to_string()).collect());
        t
    }

    /// Right-aligns the columns `cols`.
    pub fn right(mut self, cols: &[usize]) -> Table {
        self.right = cols.to_vec();
        self
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Each row indented by two spaces, columns two spaces apart, trailing spaces trimmed.
    pub fn render(&self) -> String {
        let mut t = comfy_table::Table::new();
        t.load_style(comfy_table::presets::NOTHING);
        for row in &self.rows {
            t.add_row(row);
        }
        for (c, column) in t.column_iter_mut().enumerate() {
            // No borders: the left padding is both the indent and the gap between columns.
            column.set_padding((2, 0));
            if self.right.contains(&c) {
                column.set_cell_alignment(comfy_table::CellAlignment::Right);
            }
        }
        t.lines()
            .map(|line| line.trim_end().to_string() + "\n")
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_inserts_a_comma_every_three_digits() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(137_438_953_472), "137,438,953,472");
    }

    #[test]
    fn time_picks_the_unit_by_magnitude() {
        assert_eq!(time(3.436e-3), "3.44 ms");
        assert_eq!(time(2.247e-4), "0.22 ms");
        assert_eq!(time(2.81e-5), "28.1 µs");
        assert_eq!(time(1.31e-8), "0.013 µs");
    }

    #[test]
    fn percent_scales_and_rounds() {
        assert_eq!(percent(12.0 / 46.0, 0), "26%");
        assert_eq!(percent(1024.0 / 1058.0, 1), "96.8%");
    }

    #[test]
    fn table_pads_columns_and_right_aligns_the_marked_ones() {
        let mut t = Table::new(&["name", "value", "note"]).right(&[1]);
        t.row(vec!["smem".into(), "1".into(), "x".into()]);
        t.row(vec!["µ".into(), "1,024".into()]);
        assert_eq!(
            t.render(),
            "  name  value  note\n  smem      1  x\n  µ     1,024\n"
        );
        let mut plain = Table::default();
        plain.row(vec!["a".into(), "b".into()]);
        assert_eq!(plain.render(), "  a  b\n");
    }
}
