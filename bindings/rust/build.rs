// Links libikllm: the directory of $IKLLM_LIB (path of libikllm.so) when set, else the project's
// build directory (../../build). An rpath is added so tests and examples run without
// LD_LIBRARY_PATH.
use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=IKLLM_LIB");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let dir = match env::var_os("IKLLM_LIB") {
        Some(lib) if !lib.is_empty() => {
            let p = PathBuf::from(lib);
            if p.is_dir() {
                p
            } else {
                p.parent().map(PathBuf::from).unwrap_or_default()
            }
        }
        _ => manifest.join("..").join("..").join("build"),
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=ikllm");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
}
