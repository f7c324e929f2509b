// Shared test helpers: where the reference models and the C CLI are.
#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::process::Command;

use ikllm::{Library, Model};

/// The value of an Option, or return from the test (skipped) when it is None.
/// (Not let-else: Debian's rustc 1.63 predates it.)
#[macro_export]
macro_rules! skip_without {
    ($e:expr) => {
        match $e {
            Some(v) => v,
            None => return,
        }
    };
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..")
}

/// A refdata model by name (e.g. "llama-tiny-f16"), or None (the test then skips) when
/// ../shared/refdata is absent.
pub fn model_path(name: &str) -> Option<String> {
    let dir = std::env::var_os("IKLLM_REFDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("..").join("shared").join("refdata"));
    let p = dir.join("models").join(format!("{}.gguf", name));
    if p.exists() {
        Some(p.to_string_lossy().into_owned())
    } else {
        eprintln!("skipped: {} not found", p.display());
        None
    }
}

pub fn template_path(name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(model_path("llama-tiny-f16")?).parent()?.parent()?.join("templates").join(name);
    if p.exists() {
        Some(p)
    } else {
        None
    }
}

/// The `ikllm` CLI next to the library under test ($IKLLM_CLI, else beside $IKLLM_LIB, else build/).
pub fn cli() -> PathBuf {
    if let Some(c) = std::env::var_os("IKLLM_CLI") {
        return PathBuf::from(c);
    }
    match std::env::var_os("IKLLM_LIB") {
        Some(l) if !l.is_empty() => PathBuf::from(l).parent().unwrap().join("ikllm"),
        _ => repo_root().join("build").join("ikllm"),
    }
}

/// Runs the CLI and returns its stdout (panics on failure).
pub fn run_cli(args: &[&str]) -> Vec<u8> {
    let out = Command::new(cli()).args(args).output().expect("cannot start the ikllm CLI");
    assert!(out.status.success(), "ikllm {:?} failed: {}", args, String::from_utf8_lossy(&out.stderr));
    out.stdout
}

pub fn load(name: &str) -> Option<Model> {
    let path = model_path(name)?;
    let lib = Library::new().expect("library");
    Some(Model::load(&lib, &path).expect("load"))
}

/// A fresh scratch directory under the cargo target dir.
pub fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}
