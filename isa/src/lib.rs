//! The tiny tile ISA and its scenario format.
//!
//! - [`scenario`]: the RON document as written (serde types).
//! - [`expr`]: integer expressions and array references.
//! - [`program`]: the compiled form the simulator runs (flat ops, names resolved to indices,
//!   parameters folded), produced by [`compile`] together with static validation.
//! - [`diag`]: errors with file:line:column and a snippet.
//!
//! No timing lives here.

pub mod compile;
pub mod diag;
pub mod expr;
pub mod program;
pub mod scenario;

pub use compile::{compile, Limits};
pub use diag::Diagnostic;
pub use scenario::Scenario;

/// Message of the deliberate error used to find a node's position (see [`locate`]).
pub(crate) const LOCATE_MARK: &str = "\u{0}locate";

/// RON options for scenarios: optional fields are written without `Some(...)`.
fn ron_options() -> ron::Options {
    ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
}

/// Reads a scenario from RON text. `file` names the source in diagnostics.
pub fn parse(file: &str, source: &str) -> Result<Scenario, Diagnostic> {
    scenario::reset_ids(None);
    ron_options().from_str::<Scenario>(source).map_err(|e| {
        Diagnostic::new(file, e.code.to_string()).at(source, e.span.start.line, e.span.start.col)
    })
}

/// The line and column of the spanned node (expression or reference) with document-order `id`,
/// found by reading the document again and stopping at that node.
pub fn locate(source: &str, id: u32) -> Option<(usize, usize)> {
    scenario::reset_ids(Some(id));
    let result = ron_options().from_str::<Scenario>(source);
    scenario::reset_ids(None);
    match result {
        Err(e) if e.code.to_string().contains(LOCATE_MARK) => {
            Some((e.span.start.line, e.span.start.col))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINI: &str = r#"Scenario(
    name: "mini",
    gpu: "h100-sxm",
    params: { "k": 64 },
    kernel: Kernel(
        regs_per_thread: 128,
        roles: [
            Role(name: "w", regs: 128, program: [
                Loop(var: "j", count: "k / 16", body: [Fma("j % stagess")]),
            ]),
        ],
    ),
)"#;

    #[test]
    fn malformed_ron_reports_line_and_column() {
        let bad = MINI.replace("regs: 128,", "regs: 128");
        let err = parse("mini.ron", &bad).unwrap_err();
        assert_eq!(err.file, "mini.ron");
        assert_eq!(err.pos.map(|p| p.0), Some(8));
        assert!(err.message.contains("Expected"), "{}", err.message);
    }

    #[test]
    fn bad_expression_syntax_is_a_ron_error_with_position() {
        let bad = MINI.replace("\"k / 16\"", "\"k / \"");
        let err = parse("mini.ron", &bad).unwrap_err();
        assert_eq!(err.pos.map(|p| p.0), Some(9));
        assert!(err.message.contains("cannot parse expression `k / `"));
    }

    #[test]
    fn locate_finds_a_node_by_document_order() {
        let s = parse("mini.ron", MINI).unwrap();
        let role = &s.kernel.roles[0];
        let scenario::Instr::Loop { body, .. } = &role.program[0] else {
            panic!("expected a loop")
        };
        let scenario::Instr::Fma(e) = &body[0] else {
            panic!("expected fma")
        };
        let (line, col) = locate(MINI, e.id).unwrap();
        assert_eq!(line, 9);
        let text = MINI.lines().nth(line - 1).unwrap();
        // The column lands on or just after the expression's string literal.
        assert!(col >= text.find("\"j % stagess\"").unwrap(), "col {col}");
    }
}
