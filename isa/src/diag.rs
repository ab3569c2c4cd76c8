//! Diagnostics with file:line:column and a snippet of the offending line.

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
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pos {
            Some((l, c)) => write!(f, "{}:{l}:{c}: {}", self.file, self.message)?,
            None => write!(f, "{}: {}", self.file, self.message)?,
        }
        if let (Some((line, col)), Some(text)) = (self.pos, &self.line_text) {
            let gutter = line.to_string().len();
            write!(f, "\n{:gutter$} |\n{line} | {text}\n{:gutter$} | ", "", "")?;
            // Keep tabs so the caret lines up under the character it points at.
            let pad: String = text
                .chars()
                .take(col.saturating_sub(1))
                .map(|ch| if ch == '\t' { '\t' } else { ' ' })
                .collect();
            write!(f, "{pad}^")?;
        }
        if let Some(path) = &self.path {
            write!(f, "\n  = in {path}")?;
        }
        Ok(())
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
            "x.ron:2:8: unknown GPU\n  |\n2 |   gpu: \"h100\",\n  |        ^\n  = in gpu"
        );
    }
}
