//! What a run's ending says of the files it left changed in the editor but not saved: an
//! edit to an open document lands in its buffer, a new file on disk, and quitting without
//! saving would leave the one without the other (a test on disk for a method that is not).

use std::path::Path;

use url::Url;

use crate::editor::Editor;
use crate::observer::Observer;

/// The sentence for `changed` (paths relative to `root`): which are open with a text that is
/// not the disk's, and which are on disk already; `None` when every one is saved.
pub fn note(editor: &dyn Editor, observer: &Observer, root: &Path, changed: &[String]) -> Option<String> {
    // the command line writes to disk (or, dry, nothing): no buffer to save
    if !editor.keeps_unsaved_text() {
        return None;
    }
    let (mut unsaved, mut saved) = (Vec::new(), Vec::new());
    for relative in changed {
        let path = root.join(relative);
        let Ok(uri) = Url::from_file_path(&path) else { continue };
        // a file the run deleted stays deleted, open or not: saving its buffer would bring it back
        let Ok(disk) = std::fs::read(&path) else { continue };
        match observer.snapshot(&uri) {
            Some(open) if disk != open.rope.to_string().as_bytes() => unsaved.push(relative.as_str()),
            _ => saved.push(relative.as_str()),
        }
    }
    if unsaved.is_empty() {
        return None;
    }
    let mut sentence =
        format!("Not saved yet: {} (changed in the editor; save to keep it)", unsaved.join(", "));
    if !saved.is_empty() {
        sentence.push_str(&format!("; on disk already: {}", saved.join(", ")));
    }
    sentence.push('.');
    Some(sentence)
}
