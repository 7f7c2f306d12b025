//! Finding a SEARCH block in the current text: exactly; then ignoring trailing whitespace and
//! line endings; then with its indentation re-based (the model dropped or added a level);
//! then the closest window above a similarity threshold. No match, or two equally good ones,
//! is an error with a reason the model can act on — never a guess.

use std::fmt;

use similar::TextDiff;

use crate::text::TextRange;

#[derive(Debug, Clone, PartialEq)]
pub enum MatchKind {
    Exact,
    /// Equal but for trailing whitespace and `\r\n` versus `\n`.
    Whitespace,
    /// Equal once every line is shifted by `delta` columns of indentation (positive: the
    /// text is indented more than the SEARCH).
    Reindented {
        delta: isize,
        unit: char,
    },
    /// The closest window, `similarity` alike (0..1).
    Fuzzy {
        similarity: f32,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    /// Bytes of the text the SEARCH stands for (whole lines except for an exact match).
    pub range: TextRange,
    pub kind: MatchKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LocateError {
    Empty,
    NotFound { closest: Option<(usize, usize, f32, String)> },
    Ambiguous { lines: Vec<usize> },
}

impl fmt::Display for LocateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LocateError::Empty => {
                f.write_str("this SEARCH is empty, so it matches everywhere; quote the lines to change")
            }
            LocateError::NotFound { closest: None } => f.write_str("this SEARCH matched nothing in the file"),
            LocateError::NotFound { closest: Some((first, last, similarity, lines)) } => write!(
                f,
                "this SEARCH matched nothing; the closest lines are {first}-{last} ({:.0}% alike):\n{lines}",
                similarity * 100.0
            ),
            LocateError::Ambiguous { lines } => write!(
                f,
                "this SEARCH matches {} places (lines {}); include more of the surrounding lines so it matches one",
                lines.len(),
                lines.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

/// A line of the text: where it starts and ends (terminator included) and its content.
struct Line<'a> {
    start: usize,
    end: usize,
    content: &'a str,
}

fn lines_of(text: &str) -> Vec<Line<'_>> {
    let mut lines = Vec::new();
    let mut start = 0;
    for piece in text.split_inclusive('\n') {
        let end = start + piece.len();
        lines.push(Line { start, end, content: piece.trim_end_matches(['\n', '\r']) });
        start = end;
    }
    lines
}

/// Finds `search` in `text`; `threshold` is the least similarity a fuzzy match needs.
pub fn locate(text: &str, search: &str, threshold: f32) -> Result<Located, LocateError> {
    if search.trim().is_empty() {
        return Err(LocateError::Empty);
    }
    // 1. exactly (with and without the final newline, for a file that lacks one), searched
    // with SIMD and without splitting the text into lines first: the common case costs a
    // scan of the text, not a table of its lines
    for (trimmed, candidate) in [(false, search), (true, search.trim_end_matches('\n'))] {
        // without its newline a SEARCH must still end where a line does, or it would graft
        // the REPLACE onto the rest of a longer line
        let ends_a_line = |at: usize| {
            let rest = &text[at + candidate.len()..];
            !trimmed || rest.is_empty() || rest.starts_with('\n') || rest.starts_with("\r\n")
        };
        let found: Vec<usize> = memchr::memmem::find_iter(text.as_bytes(), candidate.as_bytes())
            .filter(|&at| ends_a_line(at))
            .collect();
        match found.len() {
            0 => continue,
            1 => {
                return Ok(Located {
                    range: TextRange::new(found[0], found[0] + candidate.len()),
                    kind: MatchKind::Exact,
                });
            }
            _ => {
                let line_of = |at: usize| memchr::memchr_iter(b'\n', &text.as_bytes()[..at]).count() + 1;
                return Err(LocateError::Ambiguous { lines: found.iter().map(|&at| line_of(at)).collect() });
            }
        }
    }

    let lines = lines_of(text);
    let wanted: Vec<&str> =
        search.trim_end_matches('\n').split('\n').map(|l| l.trim_end_matches('\r')).collect();
    let count = wanted.len();
    if count > lines.len() {
        return Err(LocateError::NotFound { closest: None });
    }
    let windows = 0..=lines.len() - count;
    let range_of = |at: usize| TextRange::new(lines[at].start, lines[at + count - 1].end);

    // 2. ignoring trailing whitespace and line endings
    let matches: Vec<usize> = windows
        .clone()
        .filter(|&at| (0..count).all(|i| lines[at + i].content.trim_end() == wanted[i].trim_end()))
        .collect();
    if let Some(result) = single(&matches, |at| Located { range: range_of(at), kind: MatchKind::Whitespace })
    {
        return result;
    }

    // 3. with the indentation re-based
    let reindented: Vec<(usize, isize, char)> = windows
        .clone()
        .filter_map(|at| indent_delta(&lines[at..at + count], &wanted).map(|(d, u)| (at, d, u)))
        .collect();
    let starts: Vec<usize> = reindented.iter().map(|r| r.0).collect();
    if let Some(result) = single(&starts, |at| {
        let (_, delta, unit) = reindented.iter().find(|r| r.0 == at).copied().unwrap_or((at, 0, ' '));
        Located { range: range_of(at), kind: MatchKind::Reindented { delta, unit } }
    }) {
        return result;
    }

    // 4. the closest window
    let wanted_text = wanted.join("\n");
    let mut scored: Vec<(f32, usize)> = windows
        .map(|at| {
            let window: Vec<&str> = lines[at..at + count].iter().map(|l| l.content).collect();
            (TextDiff::from_chars(window.join("\n").as_str(), wanted_text.as_str()).ratio(), at)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let Some(&(best, at)) = scored.first() else {
        return Err(LocateError::NotFound { closest: None });
    };
    if best < threshold {
        let shown: Vec<&str> = lines[at..at + count].iter().map(|l| l.content).collect();
        return Err(LocateError::NotFound { closest: Some((at + 1, at + count, best, shown.join("\n"))) });
    }
    // another window about as good that does not overlap this one is a tie
    let rival =
        scored.iter().skip(1).find(|(score, other)| best - score < 0.02 && other.abs_diff(at) >= count);
    if let Some(&(_, other)) = rival {
        return Err(LocateError::Ambiguous { lines: vec![at + 1, other + 1] });
    }
    Ok(Located { range: range_of(at), kind: MatchKind::Fuzzy { similarity: best } })
}

fn single(matches: &[usize], found: impl Fn(usize) -> Located) -> Option<Result<Located, LocateError>> {
    match matches {
        [] => None,
        [at] => Some(Ok(found(*at))),
        many => Some(Err(LocateError::Ambiguous { lines: many.iter().map(|at| at + 1).collect() })),
    }
}

/// The one indentation shift (in columns of one character) that makes `window` equal
/// `wanted`, if there is one.
fn indent_delta(window: &[Line<'_>], wanted: &[&str]) -> Option<(isize, char)> {
    let mut delta = None;
    let mut unit = ' ';
    for (line, want) in window.iter().zip(wanted) {
        let (have_body, want_body) = (line.content.trim(), want.trim());
        if have_body != want_body {
            return None;
        }
        if have_body.is_empty() {
            continue;
        }
        let indent = |l: &str| l.chars().take_while(|c| c.is_whitespace()).count();
        let (have_indent, want_indent) = (indent(line.content), indent(want));
        if let Some(c) = line.content.chars().next().filter(|c| c.is_whitespace()) {
            unit = c;
        }
        let this = have_indent as isize - want_indent as isize;
        match delta {
            None => delta = Some(this),
            Some(d) if d != this => return None,
            _ => {}
        }
    }
    delta.filter(|d| *d != 0).map(|d| (d, unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(text, search) => (matched text, kind)` or the error's message start.
    fn check(text: &str, search: &str, expected: Result<(&str, &str), &str>) {
        let got = locate(text, search, 0.8);
        match (got, expected) {
            (Ok(located), Ok((matched, kind))) => {
                assert_eq!(&text[located.range.start..located.range.end], matched, "{search:?}");
                let got_kind = match located.kind {
                    MatchKind::Exact => "exact",
                    MatchKind::Whitespace => "whitespace",
                    MatchKind::Reindented { .. } => "reindented",
                    MatchKind::Fuzzy { .. } => "fuzzy",
                };
                assert_eq!(got_kind, kind, "{search:?}");
            }
            (Err(err), Err(message)) => assert!(err.to_string().starts_with(message), "{search:?}: {err}"),
            (got, expected) => panic!("{search:?}: got {got:?}, expected {expected:?}"),
        }
    }

    const CODE: &str = "def f(x):\n    if x:\n        return 1\n    return 2\n\n\ndef g(y):\n    return y\n";

    #[test]
    fn a_table_of_realistic_searches() {
        check(CODE, "        return 1\n", Ok(("        return 1\n", "exact")));
        // trailing whitespace and CRLF in the reply
        check(
            CODE,
            "    if x:   \r\n        return 1\r\n",
            Ok(("    if x:\n        return 1\n", "whitespace")),
        );
        // the model dropped one level of indentation
        check(CODE, "if x:\n    return 1\n", Ok(("    if x:\n        return 1\n", "reindented")));
        // a small difference: the closest window above the threshold
        check(CODE, "def g(y) :\n    return y\n", Ok(("def g(y):\n    return y\n", "fuzzy")));
        // in the file twice
        check(CODE, "    return", Err("this SEARCH matches 3 places"));
        check("a = 1\nb = 2\na = 1\n", "a = 1\n", Err("this SEARCH matches 2 places (lines 1, 3)"));
        // nothing like it
        check(
            CODE,
            "class Unrelated:\n    pass\n",
            Err("this SEARCH matched nothing; the closest lines are"),
        );
        check(CODE, "   \n", Err("this SEARCH is empty"));
        // a SEARCH line is not matched as the start of a longer line
        check(
            "total = f(a)  # note\n",
            "total = f(a)\n",
            Err("this SEARCH matched nothing; the closest lines are"),
        );
    }

    #[test]
    fn crlf_files_match_lf_searches() {
        let text = "a = 1\r\nb = 2\r\nc = 3\r\n";
        check(text, "b = 2\nc = 3\n", Ok(("b = 2\r\nc = 3\r\n", "whitespace")));
    }

    #[test]
    fn the_reason_quotes_the_closest_lines() {
        let err = locate(CODE, "def g(z, w):\n    return z * w\n", 0.95).unwrap_err();
        assert!(
            err.to_string().contains("closest lines are 7-8") && err.to_string().contains("def g(y):"),
            "{err}"
        );
    }
}
