//! The corpus cache of `bench` and `bench corpus`: generated deterministically once into
//! `$XDG_CACHE_HOME/deskbroker/corpus/<version>/{public,private}` (else `~/.cache/…`), one
//! directory per corpus version. With the flags that name a corpus and a split, shared by
//! `bench run`, `bench score`, `bench corpus` and `bench validity`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use desk_cad::{CorpusVersion, load_task_list, write_corpus_version};

/// Which tasks to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SplitArg {
    /// The development split (about one task in seven).
    Dev,
    /// The evaluation split.
    Eval,
    /// Every task.
    All,
}

#[derive(Debug, Args)]
pub(crate) struct CorpusLocation {
    /// Public corpus directory (tasks.json, references/). [default: the cache, generated if absent]
    #[arg(long)]
    pub(crate) corpus: Option<PathBuf>,
    /// Scorer-private gold directory. [default: the cache's private/]
    #[arg(long)]
    pub(crate) gold: Option<PathBuf>,
    /// The corpus version the cache holds: v1 (28 2D tasks), v2 (50 tasks, 21 2D + 29 3D) or
    /// v3 (v2 with hatches, leaders, angular dimensions, linetypes and notes in its 2D tasks).
    #[arg(long, value_parser = parse_corpus_version, default_value = "v3")]
    pub(crate) corpus_version: CorpusVersion,
}

pub(super) fn parse_corpus_version(name: &str) -> Result<CorpusVersion, String> {
    CorpusVersion::parse(name).map_err(|error| error.to_string())
}

#[derive(Debug, Args)]
pub(crate) struct CorpusArgs {
    /// Where to write the public corpus.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Where to write the gold files, DXF and FCStd (keep this private).
    #[arg(long)]
    pub(crate) gold_out: Option<PathBuf>,
    /// The corpus version to write: v1, v2 or v3.
    #[arg(long, value_parser = parse_corpus_version, default_value = "v3")]
    pub(crate) corpus_version: CorpusVersion,
}

fn cache_root(version: CorpusVersion) -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(std::env::temp_dir)
                .join(".cache")
        });
    base.join("deskbroker")
        .join("corpus")
        .join(version.as_str())
}

/// The public and gold directories, generating the cached corpus when it is absent.
pub(crate) fn corpus_dirs(location: &CorpusLocation) -> Result<(PathBuf, PathBuf)> {
    // A given public corpus names its version; its gold, when not given, is that version's.
    let version = match (&location.corpus, &location.gold) {
        (Some(public), None) => {
            let list = load_task_list(public).context("failed to read the corpus's tasks.json")?;
            CorpusVersion::parse(&list.corpus_version)?
        }
        _ => location.corpus_version,
    };
    let root = cache_root(version);
    let public = location
        .corpus
        .clone()
        .unwrap_or_else(|| root.join("public"));
    let gold = location
        .gold
        .clone()
        .unwrap_or_else(|| root.join("private"));
    let uses_cache = location.corpus.is_none() || location.gold.is_none();
    if uses_cache && !root.join("public/tasks.json").exists() {
        let staging = root.with_extension(format!("tmp-{}", std::process::id()));
        let (public, private) = (staging.join("public"), staging.join("private"));
        write_corpus_version(version, &public, &private)
            .with_context(|| format!("failed to generate the corpus in {}", staging.display()))?;
        if let Err(error) = std::fs::rename(&staging, &root) {
            // Another process may have finished first; its corpus is identical.
            let _ = std::fs::remove_dir_all(&staging);
            if !root.join("public/tasks.json").exists() {
                return Err(error)
                    .context(format!("failed to move the corpus to {}", root.display()));
            }
        }
    }
    Ok((public, gold))
}

pub(crate) fn corpus(args: &CorpusArgs) -> Result<()> {
    let scratch;
    let gold_dir = match &args.gold_out {
        Some(dir) => dir.clone(),
        None => {
            scratch = std::env::temp_dir().join(format!("deskbroker-gold-{}", std::process::id()));
            scratch.clone()
        }
    };
    let written = write_corpus_version(args.corpus_version, &args.out, &gold_dir);
    if args.gold_out.is_none() {
        let _ = std::fs::remove_dir_all(&gold_dir);
    }
    let tasks = written?;
    outln!(
        "wrote {} tasks ({}) to {}{}",
        tasks.len(),
        args.corpus_version,
        args.out.display(),
        args.gold_out
            .as_ref()
            .map(|dir| format!(", gold to {}", dir.display()))
            .unwrap_or_default()
    );
    Ok(())
}
