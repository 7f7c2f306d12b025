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
    // a link is granted as what it is: Landlock follows it to its target's hierarchy
    let is_dir = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    if !inside || !is_dir {
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
        assert_eq!(
            hidden,
            [home.join(".ssh"), home.join(".config/gh"), home.join(".netrc"), cache.clone()],
            "what exists, each once"
        );
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
        assert_eq!(readable_cover(&[]), [PathBuf::from("/")]);
    }
}
