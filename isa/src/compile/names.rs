//! Name resolution: parameters and their `--set` overrides, the predefined `num_sms`, built-ins,
//! loop variables, declared tensors, buffers, mbarriers and counters, and accumulator labels.
//! An unknown name is reported with the names defined at that point and the closest one.

use super::Compiler;
use crate::diag::Diagnostic;
use crate::expr::{Ast, Binding, Code, CompileError};
use crate::program::{slot, BarRef, CounterRef, SlotRef};
use crate::scenario::{Expr, ParamValue, Ref, Scenario};
use std::collections::BTreeMap;

/// Predefined constant: the GPU's SM count (for persistent grids).
pub(super) const NUM_SMS: &str = "num_sms";

/// Which names an expression may use.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Names {
    /// Parameters only (resource declarations, evaluated once).
    Params,
    /// Parameters, built-ins except `lane`, and loop variables.
    Program,
    /// As `Program`, plus `lane` (per-lane addresses, `If` conditions and `Loop` counts).
    Lanes,
    /// Parameters and the variables in scope, without built-ins (a table's entries).
    Table,
}

/// The scenario's parameters with `overrides` applied and derived parameters evaluated; none
/// may shadow a predefined name. An override replaces a derived parameter's expression.
pub(super) fn params(
    scenario: &Scenario,
    overrides: &[(String, i64)],
    file: &str,
    source: &str,
    sm_count: u32,
) -> Result<BTreeMap<String, i64>, Diagnostic> {
    let mut values: BTreeMap<String, i64> = BTreeMap::new();
    let mut derived: BTreeMap<&str, &Expr> = BTreeMap::new();
    for (k, v) in &scenario.params {
        match v {
            ParamValue::Int(v) => {
                values.insert(k.clone(), *v);
            }
            ParamValue::Derived(e) => {
                derived.insert(k, e);
            }
        }
    }
    for (key, value) in overrides {
        if !scenario.params.contains_key(key) {
            let known: Vec<&str> = scenario.params.keys().map(String::as_str).collect();
            return Err(Diagnostic::new(
                file,
                format!(
                    "--set {key}: the scenario has no parameter `{key}`{} (parameters: {})",
                    suggest(key, known.iter().copied()),
                    list_or_none(&known)
                ),
            ));
        }
        derived.remove(key.as_str());
        values.insert(key.clone(), *value);
    }
    for name in scenario.params.keys() {
        if name == NUM_SMS {
            return Err(Diagnostic::new(
                file,
                format!("parameter `{name}` shadows the predefined constant `{NUM_SMS}` (the GPU's SM count); rename it"),
            )
            .in_path("params"));
        }
        if let Some((b, _)) = slot::BUILTINS.iter().find(|(b, _)| b == name) {
            return Err(Diagnostic::new(
                file,
                format!("parameter `{name}` shadows the built-in variable `{b}`; rename it"),
            )
            .in_path("params"));
        }
    }
    resolve_derived(&mut values, derived, file, source, sm_count)?;
    Ok(values)
}

/// Evaluates derived parameters in dependency order: each pass evaluates those whose names are
/// all known; a pass that evaluates none leaves a cycle or an unknown name.
fn resolve_derived(
    values: &mut BTreeMap<String, i64>,
    mut pending: BTreeMap<&str, &Expr>,
    file: &str,
    source: &str,
    sm_count: u32,
) -> Result<(), Diagnostic> {
    let located = |e: &Expr, message: String| {
        let d = Diagnostic::new(file, message).in_path("params");
        match crate::locate(source, e.id) {
            Some((line, col)) => d.at(source, line, col),
            None => d,
        }
    };
    while !pending.is_empty() {
        let mut done = Vec::new();
        let mut blocked = None;
        for (&name, &e) in &pending {
            let mut waits_on = None;
            let code = Code::compile(&e.ast, &mut |n: &str| {
                if let Some(&v) = values.get(n) {
                    Some(Binding::Const(v))
                } else if n == NUM_SMS {
                    Some(Binding::Const(sm_count as i64))
                } else {
                    if pending.contains_key(n) {
                        waits_on = Some(n.to_string());
                    }
                    None
                }
            });
            match code {
                Ok(code) => {
                    let v = code.as_const().ok_or_else(|| {
                        located(e, format!("parameter `{name}` = `{}` cannot be evaluated (division by zero or overflow)", e.text))
                    })?;
                    done.push((name, v));
                }
                Err(CompileError::UnknownName(n)) if waits_on.as_deref() == Some(n.as_str()) => {
                    blocked.get_or_insert((name, n));
                }
                Err(CompileError::UnknownName(n)) => {
                    let mut known: Vec<&str> = values.keys().map(String::as_str).collect();
                    known.extend(pending.keys());
                    known.push(NUM_SMS);
                    return Err(located(
                        e,
                        format!(
                            "unknown name `{n}` in parameter `{name}` = `{}`{}; a parameter may use the other parameters and `{NUM_SMS}`: {}",
                            e.text,
                            suggest(&n, known.iter().copied()),
                            list_or_none(&known)
                        ),
                    ));
                }
                Err(err) => return Err(located(e, format!("{err}: `{}`", e.text))),
            }
        }
        if done.is_empty() {
            let (name, on) =
                blocked.expect("a pending parameter that is not done waits on another");
            return Err(located(
                pending[name],
                format!("parameter `{name}` depends on itself (through `{on}`); give one of them a value"),
            ));
        }
        for (name, v) in done {
            pending.remove(name);
            values.insert(name.to_string(), v);
        }
    }
    Ok(())
}

impl Compiler<'_> {
    /// Compiles expression `e` with the names that `names` allows.
    pub(super) fn code(&self, e: &Expr, names: Names, path: &str) -> Result<Code, Diagnostic> {
        let mut resolve = |n: &str| -> Option<Binding> {
            if let Some(&v) = self.params.get(n) {
                return Some(Binding::Const(v));
            }
            if n == NUM_SMS {
                return Some(Binding::Const(self.limits.sm_count as i64));
            }
            if let Some(t) = self.tables.get(n) {
                return Some(Binding::Table(t.clone()));
            }
            if names == Names::Params {
                return None;
            }
            if let Some((_, s)) = self.scope.iter().rev().find(|(v, _)| v == n) {
                return Some(Binding::Slot(*s));
            }
            if names == Names::Table {
                return None;
            }
            slot::BUILTINS
                .iter()
                .find(|(b, s)| *b == n && (names == Names::Lanes || *s != slot::LANE))
                .map(|(_, s)| Binding::Slot(*s))
        };
        Code::compile(&e.ast, &mut resolve).map_err(|err| {
            let unknown = match err {
                CompileError::UnknownName(n) => n,
                CompileError::TooDeep
                | CompileError::TableWithoutIndex(_)
                | CompileError::NotATable(_) => {
                    return self.err(Some(e.id), path, format!("{err}: `{}`", e.text))
                }
            };
            let mut known: Vec<&str> = self.params.keys().map(String::as_str).collect();
            known.push(NUM_SMS);
            known.extend(self.tables.keys().map(String::as_str));
            if names != Names::Params {
                known.extend(self.scope.iter().map(|(v, _)| v.as_str()));
            }
            if names == Names::Program || names == Names::Lanes {
                known.extend(
                    slot::BUILTINS
                        .iter()
                        .filter(|(_, s)| names == Names::Lanes || *s != slot::LANE)
                        .map(|(b, _)| *b),
                );
            }
            let hint = if unknown == "lane" {
                " (`lane` is only defined in per-lane addresses, `If` conditions and `Loop` counts)"
                    .to_string()
            } else {
                suggest(&unknown, known.iter().copied())
            };
            self.err(
                Some(e.id),
                path,
                format!(
                    "unknown name `{unknown}` in expression `{}`{hint}; names defined here: {}",
                    e.text,
                    list_or_none(&known)
                ),
            )
        })
    }

    /// An expression that must be a constant once parameters are folded.
    pub(super) fn constant(&self, e: &Expr, path: &str, what: &str) -> Result<i64, Diagnostic> {
        let code = self.code(e, Names::Params, path).map_err(|d| {
            if self.scope.is_empty() {
                d
            } else {
                self.err(
                    Some(e.id),
                    path,
                    format!("{what} must be a constant (parameters only): `{}`", e.text),
                )
            }
        })?;
        code.as_const().ok_or_else(|| {
            // A constant index outside its table is named as such; the code reads no slot.
            let why = match code.eval(&[]) {
                Err(err @ crate::expr::EvalError::Index { .. }) => format!(": {err}"),
                _ => " (division by zero or overflow)".to_string(),
            };
            self.err(
                Some(e.id),
                path,
                format!("{what} `{}` cannot be evaluated{why}", e.text),
            )
        })
    }

    /// A constant expression that must lie in `lo..=hi`.
    pub(super) fn in_range(
        &self,
        e: &Expr,
        path: &str,
        what: &str,
        lo: i64,
        hi: i64,
    ) -> Result<i64, Diagnostic> {
        let v = self.constant(e, path, what)?;
        if v < lo || v > hi {
            return Err(self.err(
                Some(e.id),
                path,
                format!("{what} is {v} (`{}`); expected {lo}..={hi}", e.text),
            ));
        }
        Ok(v)
    }

    /// Tensors, buffers, mbarriers and counters share one namespace.
    pub(super) fn unique_name(&self, name: &str, path: &str) -> Result<(), Diagnostic> {
        let taken = self.tensors.iter().any(|t| t.name == name)
            || self.buffers.iter().any(|b| b.name == name)
            || self.mbarriers.iter().any(|m| m.name == name)
            || self.counters.iter().any(|c| c.name == name);
        if taken {
            return Err(Diagnostic::new(
                self.file,
                format!("the name `{name}` is declared twice (tensors, buffers, mbarriers and counters share one namespace)"),
            )
            .in_path(path));
        }
        Ok(())
    }

    /// The mbarrier element `r` names.
    pub(super) fn bar(&self, r: &Ref, path: &str) -> Result<BarRef, Diagnostic> {
        let arrays = self.mbarriers.iter().map(|m| (m.name.as_str(), m.count));
        let (array, index) = self.element(r, path, "mbarrier", arrays)?;
        Ok(BarRef { array, index })
    }

    /// The buffer slot `r` names.
    pub(super) fn slot(&self, r: &Ref, path: &str) -> Result<SlotRef, Diagnostic> {
        let arrays = self.buffers.iter().map(|b| (b.name.as_str(), b.slots));
        let (buf, slot) = self.element(r, path, "shared-memory buffer", arrays)?;
        Ok(SlotRef { buf, slot })
    }

    /// The array that `r` names among `arrays` (name and length), and its index.
    fn element<'n>(
        &self,
        r: &Ref,
        path: &str,
        kind: &str,
        arrays: impl Iterator<Item = (&'n str, u32)> + Clone,
    ) -> Result<(u16, Code), Diagnostic> {
        match arrays
            .clone()
            .enumerate()
            .find(|(_, (n, _))| *n == r.parsed.name)
        {
            Some((i, (_, len))) => Ok((i as u16, self.index(r, len, path)?)),
            None => Err(self.err(
                Some(r.id),
                path,
                not_declared(kind, &r.parsed.name, arrays.map(|(n, _)| n)),
            )),
        }
    }

    /// A reference's index; a constant one must lie in `0..len`.
    fn index(&self, r: &Ref, len: u32, path: &str) -> Result<Code, Diagnostic> {
        let e = Expr {
            text: r.text.clone(),
            ast: r.parsed.index.clone(),
            id: r.id,
        };
        let code = self.code(&e, Names::Program, path)?;
        if let Some(v) = code.as_const() {
            if v < 0 || v >= len as i64 {
                return Err(self.err(
                    Some(r.id),
                    path,
                    format!(
                        "index {v} of `{}` is out of range: it has {len} elements",
                        r.parsed.name
                    ),
                ));
            }
        }
        Ok(code)
    }

    // Tensor and counter names are plain strings, not spanned nodes: their errors have no
    // position, only the instruction's path.
    pub(super) fn tensor(&self, name: &str, path: &str) -> Result<u16, Diagnostic> {
        let known = self.tensors.iter().map(|t| t.name.as_str());
        self.declared("tensor", name, known, path)
    }

    /// The counter element `r` names.
    pub(super) fn counter(&self, r: &Ref, path: &str) -> Result<CounterRef, Diagnostic> {
        let arrays = self.counters.iter().map(|c| (c.name.as_str(), c.count));
        let (array, index) = self.element(r, path, "counter", arrays)?;
        let first: u32 = self.counters[..array as usize]
            .iter()
            .map(|c| c.count)
            .sum();
        Ok(CounterRef {
            // At most MAX_COUNTERS elements are declared: the first fits 16 bits.
            first: first as u16,
            len: self.counters[array as usize].count,
            index,
        })
    }

    /// The position of `name` among the declared `known` names of a kind.
    fn declared<'n>(
        &self,
        kind: &str,
        name: &str,
        known: impl Iterator<Item = &'n str> + Clone,
        path: &str,
    ) -> Result<u16, Diagnostic> {
        match known.clone().position(|k| k == name) {
            Some(i) => Ok(i as u16),
            None => Err(Diagnostic::new(self.file, not_declared(kind, name, known)).in_path(path)),
        }
    }

    /// The index of accumulator label `name`, registering it on first use.
    pub(super) fn acc(&mut self, name: &str) -> u16 {
        match self.accs.iter().position(|a| a == name) {
            Some(i) => i as u16,
            None => {
                self.accs.push(name.to_string());
                (self.accs.len() - 1) as u16
            }
        }
    }

    /// Allocates a run-time slot for a new variable `var` visible in the current block.
    pub(super) fn bind(&mut self, var: &str, path: &str) -> Result<u16, Diagnostic> {
        if self.params.contains_key(var)
            || self.tables.contains_key(var)
            || var == NUM_SMS
            || slot::BUILTINS.iter().any(|(b, _)| *b == var)
            || self.scope.iter().any(|(v, _)| v == var)
        {
            return Err(Diagnostic::new(
                self.file,
                format!("variable `{var}` shadows a parameter, a table, a built-in, `{NUM_SMS}` or a variable in scope"),
            )
            .in_path(path));
        }
        if crate::expr::parse(var) != Ok(Ast::Name(var.to_string())) {
            return Err(Diagnostic::new(
                self.file,
                format!("`{var}` is not a valid variable name"),
            )
            .in_path(path));
        }
        let s = self.new_slot();
        self.scope.push((var.to_string(), s));
        Ok(s)
    }

    /// The slot of `var` for `Assign`: a variable a `Let` bound, in scope here.
    pub(super) fn assignable(&self, var: &str, path: &str) -> Result<u16, Diagnostic> {
        let bound = |s: u16| self.lets.iter().find(|(l, _)| *l == s).map(|&(_, ifs)| ifs);
        let message = match self.scope.iter().rev().find(|(v, _)| v == var) {
            Some(&(_, s)) if bound(s) == Some(self.lane_ifs) => return Ok(s),
            // A variable is the warp's: lanes on one path cannot give it their own value.
            Some(&(_, s)) if bound(s).is_some() => format!("`Assign` to `{var}` inside an `If` whose condition depends on `lane`: a variable holds one value for the whole warp"),
            Some(_) => format!("`{var}` is a loop variable or an `AtomicAdd` result; `Assign` changes only a `Let`'s variable"),
            None => format!(
                "no variable `{var}` in scope to assign; `Assign` changes a variable that a `Let` bound in an enclosing block{}",
                suggest(var, self.scope.iter().map(|(v, _)| v.as_str()))
            ),
        };
        Err(Diagnostic::new(self.file, message).in_path(path))
    }

    /// A run-time slot, free again when the enclosing block ends.
    pub(super) fn new_slot(&mut self) -> u16 {
        let s = self.next_slot;
        self.next_slot += 1;
        self.max_slot = self.max_slot.max(self.next_slot);
        s
    }
}

/// "no {kind} named `name` (did you mean `x`?); declared: ...".
fn not_declared<'n>(kind: &str, name: &str, known: impl Iterator<Item = &'n str>) -> String {
    let known: Vec<&str> = known.collect();
    format!(
        "no {kind} named `{name}`{}; declared: {}",
        suggest(name, known.iter().copied()),
        list_or_none(&known)
    )
}

fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "(none)".to_string()
    } else {
        names.join(", ")
    }
}

/// " (did you mean `x`?)" for the closest name within edit distance 2, else "".
fn suggest<'n>(name: &str, known: impl Iterator<Item = &'n str>) -> String {
    known
        .map(|k| (edit_distance(name, k), k))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, k)| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push(
                (prev[j] + (ca != *cb) as usize)
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_closed_forms() {
        assert_eq!(edit_distance("stages", "stages"), 0);
        assert_eq!(edit_distance("stagess", "stages"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
