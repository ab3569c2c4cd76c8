//! The tiny tile ISA and its scenario format.
//!
//! - [`scenario`]: the RON document as written (serde types).
//! - [`expr`]: integer expressions and array references.
//! - [`program`]: the compiled form the simulator runs (flat ops, names resolved to indices,
//!   parameters folded), produced by [`compile`] together with static validation.
//! - [`divergence`]: which lanes of a warp are active under lane-dependent `If`s and `Loop`s.
//! - [`diag`]: errors with file:line:column and a snippet.
//!
//! No timing lives here.

pub mod compile;
pub mod diag;
pub mod divergence;
pub mod expr;
pub mod program;
pub mod scenario;

pub use compile::{compile, compile_sequence, Limits};
pub use diag::Diagnostic;
pub use scenario::Scenario;

/// Message of the deliberate error used to find a node's position (see [`locate`]).
pub(crate) const LOCATE_MARK: &str = "\u{0}locate";

/// How deeply RON may nest in a scenario. Every struct, list, map and enum variant opens a
/// level, a `Loop` or `If` in another about five; ron's default of 128 stopped at 24 nested
/// loops. Reading recurses per level, and this depth stays within a 2 MiB thread stack.
pub const MAX_RON_DEPTH: usize = 512;

/// RON options for scenarios: optional fields are written without `Some(...)`.
fn ron_options() -> ron::Options {
    ron::Options::default()
        .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
        .with_recursion_limit(MAX_RON_DEPTH)
}

/// A scenario file's bytes as text: UTF-8, with a leading byte-order mark (which some editors
/// write) dropped.
pub fn decode<'a>(file: &str, bytes: &'a [u8]) -> Result<&'a str, Diagnostic> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let valid = &bytes[..e.valid_up_to()];
        // The prefix is valid UTF-8 by construction.
        let before = std::str::from_utf8(valid).unwrap_or_default();
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = before[line_start..].chars().count() + 1;
        let byte = bytes[e.valid_up_to()];
        Diagnostic::new(
            file,
            format!("the file is not valid UTF-8 text (byte 0x{byte:02X})"),
        )
        .at(before, line, col)
    })?;
    Ok(text.strip_prefix('\u{feff}').unwrap_or(text))
}

/// Reads a scenario from RON text. `file` names the source in diagnostics.
pub fn parse(file: &str, source: &str) -> Result<Scenario, Diagnostic> {
    scenario::reset_ids(None);
    ron_options().from_str::<Scenario>(source).map_err(|e| {
        let message = match e.code {
            // ron's own advice names its API; say it in the document's terms.
            ron::Error::ExceededRecursionLimit => format!(
                "the scenario nests more than {MAX_RON_DEPTH} levels deep (each struct, list, \
                 map and instruction opens one; a Loop or If inside another takes about five)"
            ),
            code => code.to_string(),
        };
        Diagnostic::new(file, message).at(source, e.span.start.line, e.span.start.col)
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

    /// `MINI` with its loop nested in `n` more loops.
    fn nested(n: usize) -> String {
        let mut body = "Fma(1)".to_string();
        for i in 0..n {
            body = format!("Loop(var: \"v{i}\", count: 1, body: [{body}])");
        }
        MINI.replace("Fma(\"j % stagess\")", &body)
    }

    #[test]
    fn deep_programs_read_and_deeper_ones_are_explained() {
        // On the test thread's 2 MiB stack: ron's old limit stopped at 24 loops.
        assert!(parse("deep.ron", &nested(90)).is_ok());
        let err = parse("deep.ron", &nested(110)).unwrap_err();
        assert!(
            err.message
                .starts_with("the scenario nests more than 512 levels deep"),
            "{}",
            err.message
        );
        assert_eq!(err.pos.map(|p| p.0), Some(9));
    }

    #[test]
    fn a_byte_order_mark_is_dropped_and_invalid_utf8_is_located() {
        let with_bom = format!("\u{feff}{MINI}");
        let text = decode("bom.ron", with_bom.as_bytes()).unwrap();
        assert!(parse("bom.ron", text).is_ok());
        let mut bad = MINI.as_bytes().to_vec();
        let at = MINI.find("mini").unwrap() + 2;
        bad[at] = 0xff;
        let err = decode("bad.ron", &bad).unwrap_err();
        assert_eq!(err.message, "the file is not valid UTF-8 text (byte 0xFF)");
        assert_eq!(err.pos, Some((2, 14)));
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
