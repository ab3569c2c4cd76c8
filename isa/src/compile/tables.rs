//! The scenario's integer tables (`tables`), computed once after the parameters, in order: a
//! list of values, an inclusive prefix sum, or the counts of a seeded top-k Zipf sampling.

use super::names::{Names, NUM_SMS};
use super::Compiler;
use crate::diag::Diagnostic;
use crate::expr::Table;
use crate::program::slot;
use crate::scenario::{Expr, Scenario, Table as TableDef};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

/// The most entries a table may have.
pub const MAX_TABLE_LEN: i64 = 65_536;

/// The most items a Zipf table may weigh in all (`draws × len`): its sampling takes that long.
pub const MAX_ZIPF_WORK: i64 = 1 << 26;

/// The largest Zipf exponent, in hundredths (s = 10).
const MAX_EXPONENT: i64 = 1000;

impl Compiler<'_> {
    /// Computes the scenario's tables in order; each sees the ones above it.
    pub(super) fn tables(&mut self, s: &Scenario) -> Result<(), Diagnostic> {
        for (i, t) in s.tables.iter().enumerate() {
            let name = t.name();
            let path = format!("tables[{i}] `{name}`");
            self.table_name(name, &path)?;
            let values = match t {
                TableDef::List {
                    len, var, value, ..
                } => self.each(len, var, value, &path)?,
                TableDef::Prefix {
                    len, var, value, ..
                } => {
                    let mut sum = 0i64;
                    let mut out = self.each(len, var, value, &path)?;
                    for v in &mut out {
                        sum = sum.checked_add(*v).ok_or_else(|| {
                            self.err(
                                Some(value.id),
                                &path,
                                format!("the prefix sum of `{}` overflows", value.text),
                            )
                        })?;
                        *v = sum;
                    }
                    out
                }
                TableDef::Zipf {
                    len,
                    draws,
                    picks,
                    exponent,
                    seed,
                    ..
                } => {
                    let n = self.in_range(len, &path, "table length", 1, MAX_TABLE_LEN)?;
                    let limit = MAX_ZIPF_WORK / n;
                    let d =
                        self.in_range(draws, &path, "draws (len × draws at most 2^26)", 0, limit)?;
                    let k = self.in_range(picks, &path, "picks per draw (at most len)", 1, n)?;
                    let e = self.in_range(
                        exponent,
                        &path,
                        "Zipf exponent in hundredths",
                        0,
                        MAX_EXPONENT,
                    )?;
                    let seed = self.constant(seed, &path, "seed")?;
                    zipf_counts(
                        n as usize,
                        d as usize,
                        k as usize,
                        e as f64 / 100.0,
                        seed as u64,
                    )
                }
            };
            self.tables.insert(
                name.to_string(),
                Arc::new(Table {
                    name: name.to_string(),
                    values,
                }),
            );
        }
        Ok(())
    }

    /// A table's name: a valid name that no parameter, table or built-in has.
    fn table_name(&self, name: &str, path: &str) -> Result<(), Diagnostic> {
        let message = if crate::expr::parse(name) != Ok(crate::expr::Ast::Name(name.to_string())) {
            format!("`{name}` is not a valid table name")
        } else if self.params.contains_key(name)
            || self.tables.contains_key(name)
            || name == NUM_SMS
            || slot::BUILTINS.iter().any(|(b, _)| *b == name)
        {
            format!("table `{name}` shadows a parameter, a table above it, a built-in or `{NUM_SMS}`; rename it")
        } else {
            return Ok(());
        };
        Err(Diagnostic::new(self.file, message).in_path(path))
    }

    /// `value` for `var` in `0..len`.
    fn each(
        &mut self,
        len: &Expr,
        var: &str,
        value: &Expr,
        path: &str,
    ) -> Result<Vec<i64>, Diagnostic> {
        let n = self.in_range(len, path, "table length", 1, MAX_TABLE_LEN)?;
        let at = self.bind(var, path)?;
        let code = self.code(value, Names::Table, path);
        self.scope.clear();
        self.next_slot = slot::FIRST_LOOP_SLOT;
        let code = code?;
        let mut env = vec![0; at as usize + 1];
        (0..n)
            .map(|i| {
                env[at as usize] = i;
                code.eval(&env).map_err(|err| {
                    self.err(
                        Some(value.id),
                        path,
                        format!("entry {i} (`{var}` = {i}) of `{}`: {err}", value.text),
                    )
                })
            })
            .collect()
    }
}

/// How often each of `len` items is picked when each of `draws` draws picks `picks` distinct
/// items, item `i` weighted `1 / (i + 1)^s`, without replacement (rand's weighted sampling,
/// Efraimidis and Spirakis's algorithm, on a ChaCha8 stream seeded with `seed`).
pub fn zipf_counts(len: usize, draws: usize, picks: usize, s: f64, seed: u64) -> Vec<i64> {
    let weights: Vec<f64> = (0..len).map(|i| ((i + 1) as f64).powf(-s)).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut counts = vec![0i64; len];
    for _ in 0..draws {
        // Positive finite weights and picks ≤ len: the sampling cannot fail.
        let picked = rand::seq::index::sample_weighted(&mut rng, len, |i| weights[i], picks)
            .expect("positive finite weights");
        for i in picked {
            counts[i] += 1;
        }
    }
    counts
}
