//! Diagnostics with file:line:column and a snippet of the offending line.

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
use std::borrow::Cow;
use std::fmt;

/// The longest message shown whole. Messages quote the scenario (names, expressions, RON's
/// view of a bad token), which may be megabytes long; the source line itself is trimmed to the
/// terminal width by the renderer.
const MAX_MESSAGE: usize = 8192;

/// `text`, or its first and last parts around a note of how much was left out: for messages
/// that quote what a user wrote, here and in the simulator's run-time errors.
pub fn clip(text: &str, max: usize) -> Cow<'_, str> {
    let n = text.chars().count();
    if n <= max {
        return Cow::Borrowed(text);
    }
    let keep = max / 2;
    let head: String = text.chars().take(keep).collect();
    let tail: String = text.chars().skip(n - keep).collect();
    Cow::Owned(format!(
        "{head} … ({} characters left out) … {tail}",
        n - 2 * keep
    ))
}

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
        let message = clip(&self.message, MAX_MESSAGE);
        let title = match located {
            Some(_) => message.into_owned(),
            None => format!("{}: {message}", self.file),
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
            // The path names the role, which may be as long as the file.
            let path = clip(path, MAX_MESSAGE);
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
    fn a_huge_message_is_clipped_in_the_middle() {
        let name = "x".repeat(5_000_000);
        let d = Diagnostic::new("z.ron", format!("Unexpected field named `{name}`"));
        let shown = d.to_string();
        assert!(shown.len() < MAX_MESSAGE + 200, "{}", shown.len());
        assert!(
            shown.starts_with("z.ron: Unexpected field named `xxx"),
            "{shown:.80}"
        );
        let left_out = 5_000_025 - MAX_MESSAGE;
        assert!(shown.contains(&format!(" … ({left_out} characters left out) … ")));
        assert!(shown.ends_with("xxx`"));
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
