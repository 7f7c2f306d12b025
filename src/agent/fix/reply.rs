//! What a fix run reads from a model's reply and tells the model back: the document's new
//! text from its SEARCH/REPLACE blocks (a block for another file refused), or why there is
//! none; the lines an edit touched and the problems it left.

use std::path::{Path, PathBuf};

use crate::agent::targets::Comparison;
use crate::edit::{Block, apply_blocks, parse_reply};
use crate::executor::{Access, Confinement, Refused};
use crate::text::{PositionEncoding, TextRange};
use crate::workspace::DocumentSnapshot;

/// What a reply whose blocks change nothing is told (not a failed apply).
pub(super) const UNCHANGED: &str =
    "your blocks changed nothing: what they REPLACE with is already in the file.";

/// The document's new text from a model reply, or why there is none (what the next prompt
/// is told): no blocks, a block for another file, a SEARCH not found, or no change.
pub(super) fn read_reply(
    reply: &str,
    snapshot: &DocumentSnapshot,
    root: Option<&Path>,
    path: &str,
    similarity: f32,
) -> Result<String, String> {
    let base = snapshot.rope.to_string();
    let blocks = blocks_for(reply, snapshot, root, path)?;
    match apply_blocks(&base, &blocks, similarity) {
        Err(err) => Err(format!("{err}. Nothing from that reply was applied.")),
        Ok(applied) if applied.text == base => Err(UNCHANGED.to_string()),
        Ok(applied) => Ok(applied.text),
    }
}

/// The reply's blocks for this document. A block naming another file is refused: a fix run
/// changes only its own document. The path a block names is resolved as the executor
/// resolves every path (against the workspace root, or the document's folder, and confined
/// to the root): `../../other/app.py` or `myapp.py` is not `app.py`.
fn blocks_for(
    reply: &str,
    snapshot: &DocumentSnapshot,
    root: Option<&Path>,
    path: &str,
) -> Result<Vec<Block>, String> {
    let current = &snapshot.rope;
    let blocks = parse_reply(reply);
    if blocks.is_empty() {
        return Err("your reply had no SEARCH/REPLACE block, so nothing was changed. Reply with blocks in the format asked for.".to_string());
    }
    for (index, block) in blocks.iter().enumerate() {
        let file = match block {
            Block::SearchReplace { file, .. } | Block::WholeFile { file, .. } => file.as_deref(),
        };
        // the model saw only part of the file: a short code block is a snippet, and taking it
        // for the whole file would delete the rest
        if let Block::WholeFile { content, .. } = block
            && content.lines().count() * 5 < current.len_lines().saturating_sub(1) * 4
        {
            return Err(format!(
                "block {} is a code block of {} lines, not the whole file ({} lines) and not a SEARCH/REPLACE block, so nothing was changed. Use SEARCH/REPLACE blocks.",
                index + 1,
                content.lines().count(),
                current.len_lines().saturating_sub(1)
            ));
        }
        if let Some(file) = file
            && let Err(why) = names_document(file, snapshot, root)
        {
            return Err(format!(
                "block {} is for {file}, but this run may change only {path} ({why}). Nothing from that reply was applied.",
                index + 1
            ));
        }
    }
    Ok(blocks)
}

/// Whether `file` (as a block names it) is the snapshot's document: resolved against the
/// root, else against the document's own folder, confined to the root either way.
fn names_document(file: &str, snapshot: &DocumentSnapshot, root: Option<&Path>) -> Result<(), String> {
    let Some(target) = snapshot.path() else {
        // a document that is not a file: only its own name will do
        let name = snapshot.uri.path_segments().and_then(|mut s| s.next_back()).unwrap_or_default();
        return if file.trim_start_matches("./") == name { Ok(()) } else { Err("another file".to_string()) };
    };
    let target = std::fs::canonicalize(&target).unwrap_or(target);
    let folder = target.parent().unwrap_or(Path::new("/")).to_path_buf();
    let root = root.map(Path::to_path_buf).unwrap_or_else(|| folder.clone());
    let Ok(confinement) = Confinement::new(&root) else {
        // a workspace that is not on disk (an editor's unsaved buffer): only the same path,
        // as written, names the document
        let named = if Path::new(file).is_absolute() { PathBuf::from(file) } else { folder.join(file) };
        return if named == target { Ok(()) } else { Err("another file".to_string()) };
    };
    let mut why = "it resolves to another file".to_string();
    let relative_folder =
        folder.strip_prefix(confinement.root()).ok().map(|p| p.to_string_lossy().to_string());
    let candidates = std::iter::once(file.to_string()).chain(
        relative_folder
            .filter(|f| !f.is_empty() && !Path::new(file).is_absolute())
            .map(|f| format!("{f}/{file}")),
    );
    for candidate in candidates {
        match confinement.resolve(&candidate, Access::Write) {
            Ok(confined) if confined.path == target => return Ok(()),
            Ok(_) => {}
            Err(Refused(reason)) => why = reason,
        }
    }
    Err(why)
}

/// The 1-based lines of `base` that `edits` touch, as "12" or "12–14".
pub(super) fn edits_lines(base: &str, edits: &[(TextRange, String)]) -> String {
    let line = |offset: usize| base[..offset.min(base.len())].matches('\n').count() + 1;
    let (Some(first), Some(last)) = (edits.first(), edits.last()) else {
        return "no lines".to_string();
    };
    // an edit ending just after a line break ends on that line, not the next
    let end = if last.0.end > last.0.start && base[..last.0.end.min(base.len())].ends_with('\n') {
        last.0.end - 1
    } else {
        last.0.end
    };
    let (from, to) = (line(first.0.start), line(end));
    if from == to { format!("line {from}") } else { format!("lines {from}–{to}") }
}

pub(super) fn describe_outcome(after: &DocumentSnapshot, lines: &str, comparison: &Comparison) -> String {
    let mut out = format!("your edit was applied ({lines} changed), but problems remain:");
    for (label, list) in
        [("still there", &comparison.remaining), ("new, made by that edit", &comparison.introduced)]
    {
        for diagnostic in list.iter().take(5) {
            let at =
                crate::text::offset_to_line_col(&after.rope, diagnostic.range.start, PositionEncoding::Utf32);
            out.push_str(&format!(" [{label}] line {}: {};", at.line + 1, diagnostic.message));
        }
    }
    out.push_str(" The code shown above is the file as it is now.");
    out
}
