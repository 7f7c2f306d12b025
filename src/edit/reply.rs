//! Reading a model's reply: SEARCH/REPLACE blocks (with or without a file name line, inside
//! or outside code fences, several per reply), unified-diff hunks, and whole-file blocks,
//! with prose around them ignored.

/// One change the model asked for, in the order it appears in the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// Replace `search` by `replace` (a diff hunk is read as one of these too: its context
    /// and `-` lines are the search, its context and `+` lines the replacement).
    SearchReplace { file: Option<String>, search: String, replace: String },
    /// The whole new content of a file.
    WholeFile { file: Option<String>, content: String },
}

const SEARCH: &str = "SEARCH";
const REPLACE: &str = "REPLACE";

fn is_marker(line: &str, ch: char, word: Option<&str>) -> bool {
    let trimmed = line.trim();
    let run = trimmed.chars().take_while(|&c| c == ch).count();
    if !(5..=9).contains(&run) {
        return false;
    }
    let rest = trimmed[run * ch.len_utf8()..].trim();
    match word {
        Some(word) => rest.eq_ignore_ascii_case(word),
        None => rest.is_empty(),
    }
}

fn is_fence(line: &str) -> bool {
    line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~")
}

/// A line that names a file: `src/app.py`, `**src/app.py**`, `` `app.py`: ``, `# app.py`.
fn file_name(line: &str) -> Option<String> {
    let name =
        line.trim().trim_matches(|c: char| c == '*' || c == '`' || c == ':' || c == '#' || c.is_whitespace());
    let looks_like_path = !name.is_empty()
        && !name.contains(' ')
        && (name.contains('.') || name.contains('/'))
        && !name.starts_with("<<<")
        && !name.ends_with('.');
    looks_like_path.then(|| name.to_string())
}

/// The file named on the nearest line above `index` that is not a fence or blank.
fn file_above(lines: &[&str], index: usize) -> Option<String> {
    lines[..index].iter().rev().find(|l| !l.trim().is_empty() && !is_fence(l)).and_then(|l| file_name(l))
}

/// Every block in `reply`, in order. CRLF is read as LF.
pub fn parse_reply(reply: &str) -> Vec<Block> {
    let reply = reply.replace("\r\n", "\n");
    let lines: Vec<&str> = reply.split('\n').collect();
    let blocks = search_replace_blocks(&lines);
    if !blocks.is_empty() {
        return blocks;
    }
    let blocks = diff_blocks(&lines);
    if !blocks.is_empty() {
        return blocks;
    }
    whole_file_blocks(&lines)
}

fn search_replace_blocks(lines: &[&str]) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        if !is_marker(lines[index], '<', Some(SEARCH)) {
            index += 1;
            continue;
        }
        // a block right after another in the same fence is for the same file
        let previous_is_block = lines[..index]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| is_marker(l, '>', Some(REPLACE)));
        let file = match (previous_is_block, blocks.last()) {
            (true, Some(Block::SearchReplace { file, .. })) => file.clone(),
            _ => file_above(lines, index),
        };
        let Some(divider) = (index + 1..lines.len()).find(|&i| is_marker(lines[i], '=', None)) else {
            break;
        };
        let Some(end) = (divider + 1..lines.len()).find(|&i| is_marker(lines[i], '>', Some(REPLACE))) else {
            break;
        };
        blocks.push(Block::SearchReplace {
            file,
            search: join(&lines[index + 1..divider]),
            replace: join(&lines[divider + 1..end]),
        });
        index = end + 1;
    }
    blocks
}

fn diff_blocks(lines: &[&str]) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut file = None;
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        if let Some(path) = line.strip_prefix("+++ ") {
            let path = path.split('\t').next().unwrap_or(path).trim();
            file = Some(path.strip_prefix("b/").unwrap_or(path).to_string()).filter(|p| p != "/dev/null");
            index += 1;
            continue;
        }
        if !line.starts_with("@@") {
            index += 1;
            continue;
        }
        let (mut search, mut replace) = (Vec::new(), Vec::new());
        index += 1;
        while index < lines.len() {
            let line = lines[index];
            if line.starts_with("@@")
                || line.starts_with("--- ")
                || line.starts_with("+++ ")
                || is_fence(line)
            {
                break;
            }
            match line.chars().next() {
                Some('-') => search.push(&line[1..]),
                Some('+') => replace.push(&line[1..]),
                Some(' ') => {
                    search.push(&line[1..]);
                    replace.push(&line[1..]);
                }
                None => {
                    // an empty context line whose space was stripped
                    search.push("");
                    replace.push("");
                }
                Some('\\') => {} // "\ No newline at end of file"
                Some(_) => break,
            }
            index += 1;
        }
        while search.last() == Some(&"") && replace.last() == Some(&"") {
            search.pop();
            replace.pop();
        }
        if !search.is_empty() || !replace.is_empty() {
            blocks.push(Block::SearchReplace {
                file: file.clone(),
                search: join(&search),
                replace: join(&replace),
            });
        }
    }
    blocks
}

/// Fenced blocks that stand for a whole file: each needs a file name on the line above,
/// unless the reply has exactly one fenced block.
fn whole_file_blocks(lines: &[&str]) -> Vec<Block> {
    let mut fences = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        if !is_fence(lines[index]) {
            index += 1;
            continue;
        }
        let Some(end) = (index + 1..lines.len()).find(|&i| is_fence(lines[i]) && lines[i].trim().len() <= 4)
        else {
            break;
        };
        fences.push((file_above(lines, index), join(&lines[index + 1..end])));
        index = end + 1;
    }
    let only_one = fences.len() == 1;
    fences
        .into_iter()
        .filter(|(file, _)| file.is_some() || only_one)
        .map(|(file, content)| Block::WholeFile { file, content })
        .collect()
}

/// Lines joined with `\n`, ending with one when there are any.
fn join(lines: &[&str]) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sr(file: Option<&str>, search: &str, replace: &str) -> Block {
        Block::SearchReplace {
            file: file.map(str::to_string),
            search: search.to_string(),
            replace: replace.to_string(),
        }
    }

    #[test]
    fn search_replace_blocks_with_prose_fences_and_file_names() {
        let reply = "The call is missing a paren. Here is the fix:\n\nsrc/app.py\n```python\n<<<<<<< SEARCH\nprint(greet(\"x\")\n=======\nprint(greet(\"x\"))\n>>>>>>> REPLACE\n```\n\nAnd another:\n\n<<<<<<< SEARCH\n    return a\n=======\n    return b\n>>>>>>> REPLACE\nThat's all.";
        assert_eq!(
            parse_reply(reply),
            vec![
                sr(Some("src/app.py"), "print(greet(\"x\")\n", "print(greet(\"x\"))\n"),
                sr(None, "    return a\n", "    return b\n"),
            ]
        );
    }

    #[test]
    fn several_blocks_in_one_fence_and_crlf() {
        let reply = "**app.py**\r\n```\r\n<<<<<<< SEARCH\r\na = 1\r\n=======\r\na = 2\r\n>>>>>>> REPLACE\r\n<<<<<<< SEARCH\r\nb = 1\r\n=======\r\n>>>>>>> REPLACE\r\n```\r\n";
        assert_eq!(
            parse_reply(reply),
            vec![sr(Some("app.py"), "a = 1\n", "a = 2\n"), sr(Some("app.py"), "b = 1\n", "")]
        );
    }

    #[test]
    fn unified_diff_hunks() {
        let reply = "Here:\n```diff\n--- a/src/m.ts\n+++ b/src/m.ts\n@@ -1,3 +1,3 @@\n import { x } from \"./x\";\n-const y = x(;\n+const y = x();\n export { y };\n@@ -10,2 +10,2 @@\n-let z = 1\n+let z = 1;\n```\n";
        assert_eq!(
            parse_reply(reply),
            vec![
                sr(
                    Some("src/m.ts"),
                    "import { x } from \"./x\";\nconst y = x(;\nexport { y };\n",
                    "import { x } from \"./x\";\nconst y = x();\nexport { y };\n"
                ),
                sr(Some("src/m.ts"), "let z = 1\n", "let z = 1;\n"),
            ]
        );
    }

    #[test]
    fn whole_file_blocks() {
        assert_eq!(
            parse_reply("Fixed file:\n\n```python\nx = 1\ny = 2\n```\n"),
            vec![Block::WholeFile { file: None, content: "x = 1\ny = 2\n".to_string() }]
        );
        // two fences: only the one with a file name is a file
        assert_eq!(
            parse_reply("Try `a`:\n```\nexample\n```\nsrc/b.py\n```\nz = 3\n```\n"),
            vec![Block::WholeFile { file: Some("src/b.py".to_string()), content: "z = 3\n".to_string() }]
        );
        assert_eq!(parse_reply("No code here, sorry."), vec![]);
    }

    #[test]
    fn an_unfinished_block_is_not_read() {
        assert_eq!(parse_reply("<<<<<<< SEARCH\nx\n=======\ny\n"), vec![]);
    }
}
