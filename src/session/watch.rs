//! Files changed on disk by other programs, seen while a session lasts: a watcher over the
//! workspace's folders (those the walk does not ignore) marks each changed file in the live
//! index and has the Observer check again the open documents it may affect. An open
//! document's own text wins over its file's, as with the editor's `didChangeWatchedFiles`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak, mpsc};
use std::time::Duration;

use ignore::gitignore::Gitignore;
use notify::event::ModifyKind;
use notify::{EventKind, RecursiveMode, Watcher};

use crate::context::LiveIndex;
use crate::observer::Observer;
use crate::sync::lock;

/// Folders watched at most (each is one inotify watch on Linux, where a user has a limit).
const MOST_FOLDERS: usize = 20_000;
/// Events that come within this of one another are taken together.
const SETTLE: Duration = Duration::from_millis(100);

/// Watches a workspace until dropped.
pub struct DiskWatcher {
    _watcher: Arc<Mutex<notify::RecommendedWatcher>>,
}

/// Starts watching `root` for the session: the folders are walked and watched on a thread of
/// the watcher's own (the session does not wait for it), and what changes is told to `index`
/// and `observer` from there. `None`, said in the log, when the platform gives no watcher or
/// no runtime runs the Observer's checks.
pub fn watch(root: &Path, index: Arc<LiveIndex>, observer: Arc<Observer>) -> Option<DiskWatcher> {
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    let (sender, events) = mpsc::channel();
    let watcher = match notify::recommended_watcher(move |event| {
        let _ = sender.send(event);
    }) {
        Ok(watcher) => Arc::new(Mutex::new(watcher)),
        Err(err) => {
            tracing::warn!("files changed on disk by other programs will not be seen: {err}");
            return None;
        }
    };
    let weak = Arc::downgrade(&watcher);
    // the paths events name are the real ones (`/private/tmp/x` on macOS for `/tmp/x`); open
    // documents go by the root as the front end named it
    let named = root.to_path_buf();
    let root = root.canonicalize().unwrap_or_else(|_| named.clone());
    let started = std::thread::Builder::new().name("tokamak-watch".to_string()).spawn(move || {
        let _runtime = runtime.enter();
        let (ignore, _) = Gitignore::new(root.join(".gitignore"));
        let mut folders = 0;
        add_folders(&weak, &root, &root, &ignore, &mut folders, None);
        tracing::debug!("watching {folders} folders of {} for changes on disk", root.display());
        // the loop ends when the watcher is dropped with the session (its sender with it)
        while let Ok(first) = events.recv() {
            let mut batch = vec![first];
            while let Ok(more) = events.recv_timeout(SETTLE) {
                batch.push(more);
            }
            let mut changed = BTreeSet::new();
            for event in batch.into_iter().filter_map(Result::ok) {
                if matches!(event.kind, EventKind::Access(_)) {
                    continue;
                }
                for path in event.paths {
                    if ignored(&root, &ignore, &path) {
                        continue;
                    }
                    if path.is_dir() {
                        // a folder made or moved in (not one whose times or rights changed,
                        // which would walk its whole tree again)
                        if matches!(event.kind, EventKind::Create(_) | EventKind::Modify(ModifyKind::Name(_)))
                        {
                            // a new folder's files may have come before its watch did
                            add_folders(&weak, &root, &path, &ignore, &mut folders, Some(&mut changed));
                        }
                    } else {
                        changed.insert(path);
                    }
                }
            }
            changed.retain(|path| !is_open(&observer, &root, &named, path));
            if changed.is_empty() {
                continue;
            }
            tracing::debug!("{} file(s) changed on disk", changed.len());
            for path in &changed {
                index.disk_changed(path);
            }
            observer.disk_changed(&changed.into_iter().collect::<Vec<_>>());
        }
    });
    if let Err(err) = started {
        tracing::warn!("files changed on disk by other programs will not be seen: {err}");
        return None;
    }
    Some(DiskWatcher { _watcher: watcher })
}

/// Watches `folder` and the folders below it that are not ignored, up to [`MOST_FOLDERS`] in
/// all (said once when reached); the files found on the way go in `files` when it is given.
fn add_folders(
    watcher: &Weak<Mutex<notify::RecommendedWatcher>>,
    root: &Path,
    folder: &Path,
    ignore: &Gitignore,
    folders: &mut usize,
    mut files: Option<&mut BTreeSet<PathBuf>>,
) {
    for entry in crate::walk::project(folder).entries() {
        if ignored(root, ignore, entry.path()) {
            continue;
        }
        if !entry.file_type().is_some_and(|t| t.is_dir()) {
            if let Some(files) = files.as_deref_mut() {
                files.insert(entry.path().to_path_buf());
            }
            continue;
        }
        if *folders == MOST_FOLDERS {
            tracing::warn!(
                "{} has more than {MOST_FOLDERS} folders: changes on disk below the others are not seen",
                root.display()
            );
            *folders += 1;
        }
        if *folders > MOST_FOLDERS {
            return;
        }
        let Some(watcher) = watcher.upgrade() else { return };
        match lock(&watcher).watch(entry.path(), RecursiveMode::NonRecursive) {
            Ok(()) => *folders += 1,
            Err(err) => tracing::debug!("cannot watch {}: {err}", entry.path().display()),
        }
    }
}

/// Whether a path is out of the watch: outside the root, hidden (`.git` above all) or ignored
/// by the root's `.gitignore`.
fn ignored(root: &Path, ignore: &Gitignore, path: &Path) -> bool {
    let Ok(relative) = path.strip_prefix(root) else { return true };
    relative.components().any(|c| c.as_os_str().to_string_lossy().starts_with('.'))
        || ignore.matched_path_or_any_parents(relative, path.is_dir()).is_ignore()
}

/// Whether `path` (under `root`) is an open document's file, by either name of the root.
fn is_open(observer: &Observer, root: &Path, named: &Path, path: &Path) -> bool {
    let by_name = path.strip_prefix(root).ok().map(|relative| named.join(relative));
    [Some(path.to_path_buf()), by_name]
        .into_iter()
        .flatten()
        .any(|p| url::Url::from_file_path(&p).is_ok_and(|uri| observer.snapshot(&uri).is_some()))
}
