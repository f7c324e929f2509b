# Sourced by run-tests.sh / run-example.sh: finds the library and keeps the Go caches under the
# project's build directory (no module downloads: the binding has no dependencies).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export IKLLM_LIB="${IKLLM_LIB:-$root/build/libikllm.so}"
libdir="$(cd "$(dirname "$IKLLM_LIB")" 2>/dev/null && pwd || dirname "$IKLLM_LIB")"
build_dir="${IKLLM_BUILD_DIR:-$libdir}"
export GOPATH="$build_dir/bindings-go/gopath" GOCACHE="$build_dir/bindings-go/cache"
export GOFLAGS=-mod=mod GOPROXY=off GO111MODULE=on CGO_ENABLED=1
export CGO_LDFLAGS="-L$libdir -Wl,-rpath,$libdir ${CGO_LDFLAGS:-}"
go_out="$build_dir/bindings-go"
