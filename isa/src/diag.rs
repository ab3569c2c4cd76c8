//! Diagnostics with file:line:column and a snippet of the offending line.

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
use std::fmt;

/// Where a problem is in the scenario, as precisely as known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: String,
    /// 1-based line and column, when the position is known.
    pub pos: Option<(usize, usize)>,
    /// The instruction's path (`role consumer: program[3].body[1] wgmma`), when the problem
    /// belongs to one.
    pub path: Option<String>,
    pub message: String,
    /// The source line at `pos`.
    pub line_text: Option<String>,
}

impl Diagnostic {
    pub fn new(file: &str, message: impl Into<String>) -> Self {
        Diagnostic {
            file: file.to_string(),
            pos: None,
            path: None,
            message: message.into(),
            line_text: None,
        }
    }

    /// Attaches a position and the source line it points into.
    pub fn at(mut self, source: &str, line: usize, col: usize) -> Self {
        self.pos = Some((line, col));
        self.line_text = source
            .lines()
            .nth(line.saturating_sub(1))
            .map(str::to_string);
        self
    }

    pub fn in_path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    /// Rendered by annotate-snippets in the rustc layout (`--> file:line:col`, the source line,
    /// a caret), without the `error:` level name, which the caller prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let located = self.pos.zip(self.line_text.as_deref());
        let title = match located {
            Some(_) => self.message.clone(),
            None => format!("{}: {}", self.file, self.message),
        };
        let mut group = Group::with_title(Level::ERROR.no_name().primary_title(title));
        if let Some(((line, col), text)) = located {
            // The column counts characters; the span is in bytes of the line.
            let at = text
                .char_indices()
                .nth(col.saturating_sub(1))
                .map_or(text.len(), |(i, _)| i);
            let end = text[at..].chars().next().map_or(at, |c| at + c.len_utf8());
            group = group.element(
                Snippet::source(text)
                    .line_start(line)
                    .path(self.file.as_str())
                    .annotation(AnnotationKind::Primary.span(at..end)),
            );
        }
        if let Some(path) = &self.path {
            group = group.element(Level::NOTE.no_name().message(format!("in {path}")));
        }
        write!(f, "{}", Renderer::plain().render(&[group]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_position_snippet_and_path() {
        let src = "Scenario(\n  gpu: \"h100\",\n)";
        let d = Diagnostic::new("x.ron", "unknown GPU")
            .at(src, 2, 8)
            .in_path("gpu");
        assert_eq!(
            d.to_string(),
            "unknown GPU\n --> x.ron:2:8\n  |\n2 |   gpu: \"h100\",\n  |        ^\n  |\n  = in gpu"
        );
    }

    #[test]
    fn without_a_position_the_file_leads_the_message() {
        let d = Diagnostic::new("x.ron", "no role").in_path("kernel.roles");
        assert_eq!(d.to_string(), "x.ron: no role\n |\n = in kernel.roles");
    }

    #[test]
    fn the_caret_counts_characters_not_bytes() {
        // `é` is two bytes; column 4 is the `x` after it.
        let d = Diagnostic::new("y.ron", "bad").at("aé x\n", 1, 4);
        assert_eq!(
            d.to_string(),
            "bad\n --> y.ron:1:4\n  |\n1 | aé x\n  |    ^"
        );
    }
}
