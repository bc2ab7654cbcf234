//! Autotuning's memory: the measured winner per (device, problem, dtype, layout), kept in
//! memory and in a JSON file so that the next process does not time the candidates again.
//!
//! The file lives at `$CONVRS_TUNE_CACHE` if set, else `$XDG_CACHE_HOME/convrs/tune.json`, else
//! `~/.cache/convrs/tune.json`. Every entry records the convrs version that measured it. A file
//! that does not parse, or an entry from another version, is ignored with a warning, never
//! trusted: the caller also re-checks that the named kernel still takes the problem.
//!
//! ```
//! use convrs::tune::{TuneCache, TuneEntry};
//! let dir = std::env::temp_dir().join(format!("convrs-doc-{}", std::process::id()));
//! let path = dir.join("tune.json");
//! let mut cache = TuneCache::load(Some(path.clone()));
//! cache.insert(TuneEntry::new("H100|9.0|132 / 8,64,56,56->64,3x3 p1 / fp16 / NHWC", "wmma_nhwc", vec![("wmma_nhwc".into(), 41.0)]));
//! cache.save()?;
//! let again = TuneCache::load(Some(path));
//! assert_eq!(again.get("H100|9.0|132 / 8,64,56,56->64,3x3 p1 / fp16 / NHWC").unwrap().kernel, "wmma_nhwc");
//! # std::fs::remove_dir_all(dir).ok();
//! # Ok::<(), convrs::Error>(())
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The version every entry is stamped with; entries of other versions are stale.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// One tuning result.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TuneEntry {
    /// `device / problem / dtype / layout`, as [`key`] builds it.
    pub key: String,
    /// The fastest kernel's name.
    pub kernel: String,
    /// Every candidate's median time, microseconds.
    pub times_us: Vec<(String, f64)>,
    pub convrs_version: String,
}

impl TuneEntry {
    pub fn new(key: &str, kernel: &str, times_us: Vec<(String, f64)>) -> Self {
        TuneEntry { key: key.into(), kernel: kernel.into(), times_us, convrs_version: VERSION.into() }
    }
}

/// The cache key of one tuning question.
pub fn key(device: &str, problem: &str, dtype: &str, layout: &str) -> String {
    format!("{device} / {problem} / {dtype} / {layout}")
}

#[derive(serde::Serialize, serde::Deserialize)]
struct File {
    entries: Vec<TuneEntry>,
}

/// The entries loaded from (and saved to) one file, plus what was wrong with it.
#[derive(Debug, Default)]
pub struct TuneCache {
    path: Option<PathBuf>,
    entries: BTreeMap<String, TuneEntry>,
    /// What loading ignored and why (printed by the CLI, returned to library callers).
    pub warnings: Vec<String>,
}

impl TuneCache {
    /// `$CONVRS_TUNE_CACHE`, else the user's cache directory; `None` if neither is known.
    pub fn default_path() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("CONVRS_TUNE_CACHE").filter(|p| !p.is_empty()) {
            return Some(PathBuf::from(p));
        }
        let base = std::env::var_os("XDG_CACHE_HOME").filter(|p| !p.is_empty()).map(PathBuf::from).or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))?;
        Some(base.join("convrs").join("tune.json"))
    }

    /// Loads `path` (nothing there: an empty cache; `None`: memory only). Never fails: a corrupt
    /// file or a stale entry becomes a warning and is left out.
    pub fn load(path: Option<PathBuf>) -> TuneCache {
        let mut cache = TuneCache { path, ..TuneCache::default() };
        let Some(path) = cache.path.clone() else { return cache };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return cache,
            Err(e) => {
                cache.warnings.push(format!("tuning cache {} unreadable ({e}): ignored", path.display()));
                return cache;
            }
        };
        match serde_json::from_str::<File>(&text) {
            Err(e) => cache.warnings.push(format!("tuning cache {} is corrupt ({e}): ignored, and replaced at the next save", path.display())),
            Ok(file) => {
                for e in file.entries {
                    if e.convrs_version != VERSION {
                        cache.warnings.push(format!("tuning cache entry `{}` is from convrs {} (this is {VERSION}): ignored", e.key, e.convrs_version));
                    } else {
                        cache.entries.insert(e.key.clone(), e);
                    }
                }
            }
        }
        cache
    }

    pub fn get(&self, key: &str) -> Option<&TuneEntry> {
        self.entries.get(key)
    }

    /// Drops an entry that proved unusable (its kernel no longer takes the problem).
    pub fn forget(&mut self, key: &str) {
        self.entries.remove(key);
    }

    pub fn insert(&mut self, entry: TuneEntry) {
        self.entries.insert(entry.key.clone(), entry);
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Writes every entry (to a temporary file renamed into place, so a crash never leaves half
    /// a file); memory-only caches do nothing.
    pub fn save(&self) -> Result<()> {
        let Some(path) = &self.path else { return Ok(()) };
        let err = |what: &str, e: std::io::Error| Error::InvalidArgument(format!("tuning cache {}: {what}: {e}", path.display()));
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| err("creating its directory", e))?;
        }
        let file = File { entries: self.entries.values().cloned().collect() };
        let text = serde_json::to_string_pretty(&file).map_err(|e| Error::InvalidArgument(format!("tuning cache: {e}")))?;
        let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
        std::fs::write(&tmp, text).map_err(|e| err("writing", e))?;
        std::fs::rename(&tmp, path).map_err(|e| err("renaming into place", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("convrs-tune-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("tune.json")
    }

    #[test]
    fn round_trips_through_the_file() {
        let path = temp("round");
        let mut c = TuneCache::load(Some(path.clone()));
        assert!(c.warnings.is_empty() && c.get("k").is_none());
        c.insert(TuneEntry::new("k", "tiled_nchw", vec![("tiled_nchw".into(), 10.0), ("direct_smem".into(), 12.5)]));
        c.save().unwrap();
        let d = TuneCache::load(Some(path.clone()));
        assert_eq!(d.get("k").unwrap().times_us[1], ("direct_smem".to_string(), 12.5));
        std::fs::remove_dir_all(path.parent().unwrap()).ok();
    }

    #[test]
    fn corrupt_files_and_stale_entries_are_ignored_with_a_warning() {
        let path = temp("corrupt");
        std::fs::write(&path, "{ not json").unwrap();
        let c = TuneCache::load(Some(path.clone()));
        assert!(c.get("k").is_none());
        assert!(c.warnings[0].contains("corrupt"), "{:?}", c.warnings);
        let stale = File { entries: vec![TuneEntry { convrs_version: "0.0.0-old".into(), ..TuneEntry::new("k", "tiled_nchw", vec![]) }, TuneEntry::new("j", "direct_smem", vec![])] };
        std::fs::write(&path, serde_json::to_string(&stale).unwrap()).unwrap();
        let c = TuneCache::load(Some(path.clone()));
        assert!(c.get("k").is_none() && c.get("j").is_some());
        assert!(c.warnings[0].contains("0.0.0-old"), "{:?}", c.warnings);
        std::fs::remove_dir_all(path.parent().unwrap()).ok();
    }

    #[test]
    fn missing_file_is_an_empty_cache_and_memory_only_saves_nothing() {
        let c = TuneCache::load(Some(std::env::temp_dir().join("convrs-no-such-dir/tune.json")));
        assert!(c.warnings.is_empty());
        let mut m = TuneCache::load(None);
        m.insert(TuneEntry::new("k", "x", vec![]));
        assert!(m.save().is_ok() && m.get("k").is_some());
    }
}
