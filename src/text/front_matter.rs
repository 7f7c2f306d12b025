//! A Markdown file's YAML front matter between `---` lines and its body (role files, Claude
//! Code's agents, skills): one reading for every file that has it.

/// How a file begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontMatter<'t> {
    /// No front matter: the whole text (trimmed) is the body.
    Absent(&'t str),
    /// The YAML (its first line is the file's second) and the body, trimmed.
    Present { yaml: &'t str, body: &'t str },
    /// A `---` line opens it and none closes it.
    Unclosed,
}

/// Splits `text` (a byte-order mark ignored) into its front matter and body.
pub fn front_matter(text: &str) -> FrontMatter<'_> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return FrontMatter::Absent(text.trim());
    };
    match rest.find("\n---") {
        Some(end) => FrontMatter::Present {
            yaml: &rest[..end + 1],
            body: rest[end + 4..].trim_start_matches(['-', '\r']).trim(),
        },
        None => FrontMatter::Unclosed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_is_split_from_the_body() {
        assert_eq!(
            front_matter("\u{feff}---\nname: a\n---\n\nBody.\n"),
            FrontMatter::Present { yaml: "name: a\n", body: "Body." }
        );
        assert_eq!(
            front_matter("---\r\nname: a\r\n---\r\nBody"),
            FrontMatter::Present { yaml: "name: a\r\n", body: "Body" }
        );
        assert_eq!(front_matter("# Title\nText\n"), FrontMatter::Absent("# Title\nText"));
        assert_eq!(front_matter("---\nname: a\n"), FrontMatter::Unclosed);
    }
}
