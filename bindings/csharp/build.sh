#!/usr/bin/env bash
# Builds Ikllm.dll, Generate.exe and Tests.exe with Mono's mcs into $IKLLM_BUILD_DIR/bindings/csharp
# (default build/bindings/csharp) and maps the "ikllm" DllImport to $IKLLM_LIB (Ikllm.dll.config).
# Prints the output folder. Exit 77 when mcs is not installed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
command -v mcs >/dev/null || { echo "mcs (mono-mcs) not installed" >&2; exit 77; }
out="${IKLLM_BUILD_DIR:-$root/build}/bindings/csharp"
lib="$(readlink -f "${IKLLM_LIB:-$root/build/libikllm.so}")"
mkdir -p "$out"
mcs -nologo -target:library -out:"$out/Ikllm.dll" "$here"/src/*.cs >&2
mcs -nologo -out:"$out/Generate.exe" -r:"$out/Ikllm.dll" "$here/examples/Generate.cs" >&2
mcs -nologo -out:"$out/Tests.exe" -r:"$out/Ikllm.dll" "$here"/tests/*.cs >&2
printf '<configuration>\n  <dllmap dll="ikllm" target="%s"/>\n</configuration>\n' "$lib" > "$out/Ikllm.dll.config"
echo "$out"
