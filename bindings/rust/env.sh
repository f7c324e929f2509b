# Sourced by run-tests.sh / run-example.sh: finds cargo and the library, and keeps every build
# output under the project's build directory (a clean clone stays clean).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export IKLLM_LIB="${IKLLM_LIB:-$root/build/libikllm.so}"
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
build_dir="${IKLLM_BUILD_DIR:-$(dirname "$IKLLM_LIB")}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$build_dir/bindings-rust}"
export CARGO_NET_OFFLINE=true  # zero dependencies: nothing to fetch
