//! What a confined command may not read: the user's secrets (keys, cloud and registry
//! credentials, keychains), what the user adds in `[sandbox] hide`, and Tokamak's own state
//! — and, for Landlock, which grants read access by folder, the folders that cover
//! everything else (`readable_cover`).

use std::path::{Path, PathBuf};

/// Paths under the home folder that hold credentials, hidden from every command.
pub const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".docker",
    ".kube",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".password-store",
    ".local/share/keyrings",
    "Library/Keychains",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
];

/// Sockets of the machine's services that reach beyond any sandbox (a container engine runs
/// anything as root; the user's session bus starts programs unconfined), hidden too.
pub const SYSTEM_SOCKETS: &[&str] = &[
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/podman/podman.sock",
    "/run/containerd/containerd.sock",
];

/// The paths to hide for `home`, with `extra` (`[sandbox] hide`: absolute, or `~/…`) and
/// Tokamak's `cache`: those that exist, resolved (a secret reached through a link is hidden
/// where it lives too), each once.
pub fn hidden(home: Option<&Path>, extra: &[String], cache: &Path) -> Vec<PathBuf> {
    let mut wanted: Vec<PathBuf> = Vec::new();
    if let Some(home) = home {
        wanted.extend(HOME_SECRETS.iter().map(|name| home.join(name)));
    }
    for path in extra {
        match (path.strip_prefix("~/"), home) {
            (Some(rest), Some(home)) => wanted.push(home.join(rest)),
            (Some(_), None) => {}
            (None, _) => wanted.push(PathBuf::from(path)),
        }
    }
    wanted.push(cache.to_path_buf());
    wanted.extend(SYSTEM_SOCKETS.iter().map(PathBuf::from));
    // the user's runtime folder: their session bus, agents' sockets, Wayland's and X's
    // SAFETY: getuid cannot fail and touches no memory.
    wanted.push(Path::new("/run/user").join(unsafe { libc::getuid() }.to_string()));
    wanted.push(PathBuf::from("/tmp/.X11-unix"));
    let mut hidden: Vec<PathBuf> = Vec::new();
    for path in wanted {
        if std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        let resolved = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        for found in [path, resolved] {
            if !hidden.contains(&found) {
                hidden.push(found);
            }
        }
    }
    hidden
}

/// The files and folders that together hold everything under `/` but what `hidden` names:
/// `/` itself when nothing is hidden; else, walking down towards each hidden path, every
/// entry beside it. Granted read access one by one (Landlock allows by hierarchy and has no
/// exceptions), they let a command read all but the hidden.
pub fn readable_cover(hidden: &[PathBuf]) -> Vec<PathBuf> {
    let mut cover = Vec::new();
    cover_under(Path::new("/"), hidden, &mut cover);
    cover
}

fn cover_under(path: &Path, hidden: &[PathBuf], cover: &mut Vec<PathBuf>) {
    if hidden.iter().any(|h| h == path) {
        return;
    }
    let inside = hidden.iter().any(|h| h.starts_with(path) && h != path);
    let Ok(metadata) = std::fs::symlink_metadata(path) else { return };
    if metadata.file_type().is_symlink() {
        // Landlock grants what a link points to: a link to a folder that holds a hidden path
        // (or is one) is walked where it points instead (`/home` → `var/home`)
        let Ok(target) = std::fs::canonicalize(path) else { return };
        let holds = hidden.iter().any(|h| h.starts_with(&target) || target.starts_with(h));
        if holds {
            if !cover.iter().any(|c| target.starts_with(c)) {
                cover_under(&target, hidden, cover);
            }
        } else {
            cover.push(path.to_path_buf());
        }
        return;
    }
    if !inside || !metadata.is_dir() {
        cover.push(path.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else { return };
    let mut names: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
    names.sort();
    for entry in names {
        cover_under(&entry, hidden, cover);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cover_holds_everything_but_the_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        for folder in [".ssh", ".config/gh", ".config/nvim", "project/src", ".cache/tokamak/x"] {
            std::fs::create_dir_all(home.join(folder)).unwrap();
        }
        std::fs::write(home.join(".netrc"), "machine x password y").unwrap();
        std::fs::write(home.join(".bashrc"), "").unwrap();
        let cache = home.join(".cache/tokamak");
        let hidden =
            hidden(Some(&home), &["~/project/secret.txt".to_string(), "~/missing".to_string()], &cache);
        let in_home: Vec<&PathBuf> = hidden.iter().filter(|p| p.starts_with(&home)).collect();
        assert_eq!(
            in_home,
            [&home.join(".ssh"), &home.join(".config/gh"), &home.join(".netrc"), &cache],
            "what exists, each once"
        );
        // a link to a folder holding a secret is not a way around it
        std::os::unix::fs::symlink(home.join(".config"), home.join("dotfiles")).unwrap();
        let cover = readable_cover(&hidden);
        for readable in
            [home.join(".bashrc"), home.join(".config/nvim"), home.join("project"), PathBuf::from("/usr")]
        {
            assert!(
                cover.iter().any(|c| readable.starts_with(c)),
                "{} is covered: {cover:?}",
                readable.display()
            );
        }
        for secret in &hidden {
            assert!(
                !cover.iter().any(|c| secret.starts_with(c) || c.starts_with(secret)),
                "{} is not covered: {cover:?}",
                secret.display()
            );
        }
        assert!(!cover.contains(&home.join("dotfiles")), "the link to .config is walked, not granted");
        assert!(cover.contains(&home.join(".config/nvim")));
        assert_eq!(readable_cover(&[]), [PathBuf::from("/")]);
    }
}
