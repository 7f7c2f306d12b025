//! Property: any sequence of incremental edits leaves the rope equal to the same edits made
//! on a `String`, and the incrementally reparsed tree equal to a fresh parse — also when the
//! document is reparsed in the background, after several edits, as large documents are:
//! then the syntax problems and symbols derived from it equal a fresh derivation. (A tree
//! with errors holds because it is parsed again from scratch, in the background and for
//! documents up to `FRESH_REPARSE_BYTES`, which these are; tree-sitter's incremental error
//! recovery alone can differ, as the kept seed shows. FIXME: a larger document reparsed on
//! the keystroke keeps that tree until it is parsed again.)

use proptest::prelude::*;
use tokamak::config::SyntaxSettings;
use tokamak::syntax::{SyntaxTree, document_symbols, syntax_problems};
use tokamak::text::{Language, LineCol, PositionEncoding, TextChange};
use tokamak::workspace::Workspace;

/// Pieces documents are made of: code, indentation, every kind of line break, and
/// characters of one to four UTF-8 bytes and one or two UTF-16 units.
const PIECES: &[&str] = &[
    "def ", "class ", "return ", "f", "x", "(", ")", ":", "[", "]", "{", "}", "=", "1", "'", "\"", ",",
    "    ", "\n", "\r\n", "\r", "한", "국어", "😀", "é", " ", "#", "if ", "pass",
];

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..60).prop_map(|pieces| pieces.concat())
}

/// An edit as fractions of the current text (so it always fits), the text to insert, and
/// the encoding its positions are sent in.
#[derive(Debug, Clone)]
struct Edit {
    start: f64,
    length: f64,
    insert: String,
    encoding: PositionEncoding,
}

fn edit() -> impl Strategy<Value = Edit> {
    let encoding =
        prop::sample::select(vec![PositionEncoding::Utf8, PositionEncoding::Utf16, PositionEncoding::Utf32]);
    (0.0..=1.0f64, 0.0..=0.3f64, text(), encoding).prop_map(|(start, length, insert, encoding)| Edit {
        start,
        length,
        insert,
        encoding,
    })
}

/// A char index that is a position: never between the `\r` and `\n` of a CRLF.
fn position_index(chars: &[char], index: usize) -> usize {
    if index > 0 && index < chars.len() && chars[index - 1] == '\r' && chars[index] == '\n' {
        index + 1
    } else {
        index
    }
}

/// `(line, col)` of a char index, computed independently of the crate: lines end at `\n`,
/// `\r\n` or a lone `\r`; columns count in `encoding`.
fn reference_position(chars: &[char], index: usize, encoding: PositionEncoding) -> LineCol {
    let (mut line, mut col) = (0u32, 0u32);
    let mut i = 0;
    while i < index {
        let c = chars[i];
        if c == '\n' || (c == '\r' && chars.get(i + 1) != Some(&'\n')) {
            line += 1;
            col = 0;
        } else if c != '\r' {
            col += match encoding {
                PositionEncoding::Utf8 => c.len_utf8() as u32,
                PositionEncoding::Utf16 => c.len_utf16() as u32,
                PositionEncoding::Utf32 => 1,
            };
        }
        i += 1;
    }
    LineCol::new(line, col)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn incremental_edits_match_a_string_and_a_fresh_parse(initial in text(), edits in prop::collection::vec(edit(), 1..20)) {
        edits_match_a_fresh_parse(&initial, &edits, Workspace::default(), |_| true)?;
    }

    /// Every document is "large": edits only tell the tree, and a background parse now and
    /// then (after a random number of edits) brings it up to date.
    #[test]
    fn background_parses_match_a_fresh_parse(
        initial in text(),
        edits in prop::collection::vec(edit(), 1..20),
        parse_after in prop::collection::vec(any::<bool>(), 20),
    ) {
        let settings = SyntaxSettings { background_parse_bytes: 0, ..SyntaxSettings::default() };
        edits_match_a_fresh_parse(&initial, &edits, Workspace::new(settings), |n| parse_after[n])?;
    }
}

/// Makes `edits` in a workspace and, after each edit `n` for which `parse_now(n)` (and always
/// after the last), checks the tree, problems and symbols against a fresh parse.
fn edits_match_a_fresh_parse(
    initial: &str,
    edits: &[Edit],
    mut workspace: Workspace,
    parse_now: impl Fn(usize) -> bool,
) -> Result<(), TestCaseError> {
    {
        let uri = url::Url::parse("file:///prop/test.py").unwrap();
        workspace.open(uri.clone(), "python", 0, initial);
        let mut expected = initial.to_string();
        for (version, edit) in edits.iter().enumerate() {
            let chars: Vec<char> = expected.chars().collect();
            let start = position_index(&chars, (edit.start * chars.len() as f64) as usize);
            let end = position_index(
                &chars,
                (start + (edit.length * chars.len() as f64) as usize).min(chars.len()),
            );
            let change = TextChange {
                range: Some((
                    reference_position(&chars, start, edit.encoding),
                    reference_position(&chars, end, edit.encoding),
                )),
                text: edit.insert.clone(),
            };
            let (snapshot, report) =
                workspace.change(&uri, version as i32 + 1, &[change], edit.encoding).expect("change applies");
            prop_assert_eq!(report.clamped_edits, 0);

            let mut next: String = chars[..start].iter().collect();
            next.push_str(&edit.insert);
            next.extend(&chars[end..]);
            expected = next;
            prop_assert_eq!(snapshot.rope.to_string(), expected.clone());

            let last = version + 1 == edits.len();
            let snapshot = if snapshot.syntax_pending {
                if !parse_now(version) && !last {
                    prop_assert!(snapshot.tree.is_none(), "a pending tree is not shown");
                    continue;
                }
                let job = workspace.parse_job(&uri).expect("a pending parse");
                let tree = job.parse().expect("parses");
                workspace.finish_parse(&job, tree).expect("installed")
            } else {
                snapshot
            };
            let tree = snapshot.tree.clone().expect("a tree");
            let fresh = SyntaxTree::parse(Language::Python, &snapshot.rope).unwrap().unwrap();
            prop_assert_eq!(tree.root_node().to_sexp(), fresh.tree().root_node().to_sexp());
            prop_assert_eq!(
                syntax_problems(&tree, &snapshot.rope, Language::Python),
                syntax_problems(fresh.tree(), &snapshot.rope, Language::Python)
            );
            prop_assert_eq!(
                document_symbols(&tree, &snapshot.rope, Language::Python),
                document_symbols(fresh.tree(), &snapshot.rope, Language::Python)
            );
        }
    }
    Ok(())
}

/// Pieces model replies are made of: markers, fences, file names, diff lines and code.
const REPLY_PIECES: &[&str] = &[
    "<<<<<<< SEARCH\n",
    "=======\n",
    ">>>>>>> REPLACE\n",
    "```python\n",
    "```\n",
    "a.py\n",
    "@@ -1,2 +1,2 @@\n",
    "--- a/a.py\n",
    "+++ b/a.py\n",
    "-",
    "+",
    " ",
    "...\n",
    "def f(x):\n",
    "    return x\n",
    "x = 1\n",
    "\r\n",
    "\n",
    "    ",
    "한",
    "😀",
    "Here is the fix:\n",
];

fn reply_text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(REPLY_PIECES), 0..30).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// The fuzz targets' bodies (fuzz/, cargo-fuzz) on structured input: a document, a NUL,
    /// then a reply made of real reply pieces, so the apply path is reached, not only the
    /// parser's early exits.
    #[test]
    fn fuzz_bodies_hold_on_structured_input(text in text(), reply in reply_text()) {
        let mut data = text.into_bytes();
        data.push(0);
        data.extend(reply.as_bytes());
        tokamak::edit::fuzzing::reply(reply.as_bytes());
        tokamak::edit::fuzzing::locate_search(&data);
        tokamak::edit::fuzzing::apply(&data);
    }

    #[test]
    fn fuzz_bodies_hold_on_any_bytes(data in prop::collection::vec(any::<u8>(), 0..400)) {
        tokamak::edit::fuzzing::reply(&data);
        tokamak::edit::fuzzing::locate_search(&data);
        tokamak::edit::fuzzing::apply(&data);
    }
}
