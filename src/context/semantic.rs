//! What a model can add to the ranking (SPEC C1), both optional — everything works without:
//! query expansion (the model names the English identifier words code answering the question
//! would contain) and semantic similarity (an embeddings endpoint's vectors of the question
//! and of each candidate file, the file's vectors cached on disk by content hash).

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use super::rank::Ranked;
use crate::model::{CallOptions, Message, Model, ModelError, Request, Usage};

/// What an expansion is asked for.
const EXPAND: &str = "You help a code search engine. Given a question about a codebase (in any language), reply with \
up to 10 English words or identifiers that the code answering it would contain (function, class and variable names, \
split into words), separated by spaces. Reply with the words only.";

/// Words taken from an expansion at most.
const MAX_WORDS: usize = 12;
/// Bytes of a file that stand for it in its embedding (its path and outline come first).
const MAX_EMBEDDED_BYTES: usize = 4 * 1024;
/// Files embedded in one request at most.
const BATCH: usize = 16;

/// The English words a model adds to `question` (lowercase identifier words), and the cost.
pub async fn expand_query(
    model: &dyn Model,
    question: &str,
    cancel: &CancellationToken,
) -> Result<(Vec<String>, Usage), ModelError> {
    let messages = vec![Message::system(EXPAND.to_string()), Message::user(question.to_string())];
    let mut request = Request::chat(messages);
    request.max_tokens = Some(64);
    let options = CallOptions { deltas: None, cancel: cancel.child_token() };
    let reply = model.send(&request, &options).await?;
    let mut words: Vec<String> = Vec::new();
    for token in reply.text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        for word in super::entry::split_words(token) {
            if (2..=30).contains(&word.len()) && !words.contains(&word) && words.len() < MAX_WORDS {
                words.push(word);
            }
        }
    }
    Ok((words, reply.usage))
}

/// Vectors of files from one embeddings model, cached in a folder.
#[derive(Debug, Clone)]
pub struct Embeddings {
    dir: PathBuf,
    model: String,
}

impl Embeddings {
    pub fn new(dir: PathBuf, model: &str) -> Embeddings {
        Embeddings { dir, model: model.to_string() }
    }

    /// A project's vectors for `model`, under its cache folder.
    pub fn for_project(root: &Path, model: &str) -> Embeddings {
        Embeddings::new(crate::places::project_cache(root).join("embeddings"), model)
    }

    fn file(&self, text: &str) -> PathBuf {
        let key = crate::places::sha256_hex(format!("{}\0{text}", self.model).as_bytes());
        self.dir.join(format!("{key}.json"))
    }

    fn cached(&self, text: &str) -> Option<Vec<f32>> {
        serde_json::from_slice(&std::fs::read(self.file(text)).ok()?).ok()
    }

    fn keep(&self, text: &str, vector: &[f32]) {
        let written = std::fs::create_dir_all(&self.dir)
            .and_then(|_| std::fs::write(self.file(text), serde_json::to_vec(vector).unwrap_or_default()));
        if let Err(err) = written {
            tracing::debug!("could not keep an embedding in {}: {err}", self.dir.display());
        }
    }

    /// `ranked` ordered again with each file's similarity in meaning to `question` added:
    /// up to the best score, so the closest file can reach the top, with the similarity
    /// among its reasons. `source` gives what stands for a file (its text).
    pub async fn rerank(
        &self,
        model: &dyn Model,
        root: &Path,
        question: &str,
        mut ranked: Vec<Ranked>,
        source: &(dyn Fn(&Path) -> Option<String> + Sync),
        cancel: &CancellationToken,
    ) -> Result<Vec<Ranked>, ModelError> {
        if ranked.is_empty() {
            return Ok(ranked);
        }
        let question_vector =
            model.embed(&self.model, &[question.to_string()], cancel).await?.pop().unwrap_or_default();
        let texts: Vec<String> = ranked
            .iter()
            .map(|r| {
                let body = source(&r.path).unwrap_or_default();
                let path = r.path.strip_prefix(root).unwrap_or(&r.path);
                format!("{}\n{}", path.display(), crate::text::cut(&body, MAX_EMBEDDED_BYTES))
            })
            .collect();
        let mut vectors: Vec<Option<Vec<f32>>> = texts.iter().map(|t| self.cached(t)).collect();
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| vectors[i].is_none()).collect();
        for chunk in missing.chunks(BATCH) {
            let batch: Vec<String> = chunk.iter().map(|&i| texts[i].clone()).collect();
            let made = model.embed(&self.model, &batch, cancel).await?;
            for (&i, vector) in chunk.iter().zip(made) {
                self.keep(&texts[i], &vector);
                vectors[i] = Some(vector);
            }
        }
        let best = ranked.iter().map(|r| r.score).fold(0.0f32, f32::max).max(1.0);
        for (r, vector) in ranked.iter_mut().zip(vectors) {
            let similarity = vector.map_or(0.0, |v| cosine(&question_vector, &v)).max(0.0);
            r.score += similarity * best;
            r.reasons.push(format!("is close in meaning (cosine {similarity:.2})"));
        }
        ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.path.cmp(&b.path)));
        Ok(ranked)
    }
}

/// The cosine of two vectors (0 when either is empty or they differ in length).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let denominator = norm(a) * norm(b);
    if denominator == 0.0 { 0.0 } else { dot / denominator }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_of_vectors() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-6);
        assert_eq!(cosine(&[1.0], &[1.0, 2.0]), 0.0);
        assert_eq!(cosine(&[], &[]), 0.0);
    }
}
