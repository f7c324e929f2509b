#!/usr/bin/env python3
"""Generates bindings/abi.json from include/ikllm.h (plus the option listing of the built library),
then every binding's low-level layer from that manifest.

  generate.py [--lib PATH]            write bindings/abi.json and the generated binding files
  generate.py --check [--lib PATH]    exit 1 (printing a diff) if any checked-in file differs

A binding plugs in its generator as bindings/<lang>/generate_abi.py defining
generate(manifest) -> {path relative to the repository root: file text}.
The library defaults to $IKLLM_LIB, else build/libikllm.so.
"""
import argparse
import difflib
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import header_parser  # noqa: E402
import option_listing  # noqa: E402
import roles  # noqa: E402

MANIFEST_FORMAT = 1


def _eval_define(expr, known):
    e = expr
    for name in sorted(known, key=len, reverse=True):
        e = e.replace(name, str(known[name]))
    e = e.replace("u", "") if all(ch in "0123456789u()+*- " for ch in e) else e
    try:
        return int(eval(e, {"__builtins__": {}}, {}))  # only digits and + - * ( ) remain
    except Exception:
        raise SystemExit("cannot evaluate #define value '%s'" % expr)


def _group_constants(defines, overrides):
    """Adjacent #defines form a group named after their common prefix (overrides.json may rename)."""
    blocks, cur = [], []
    for d in defines:
        if cur and (d["section"] != cur[-1]["section"] or d["_line"] > cur[-1]["_end"] + 1):
            blocks.append(cur)
            cur = []
        cur.append(d)
    if cur:
        blocks.append(cur)
    names = overrides.get("constant_groups", {})
    for block in blocks:
        parts = [d["name"].split("_") for d in block]
        common = []
        for words in zip(*parts):
            if len(set(words)) != 1:
                break
            common.append(words[0])
        if len(block) == 1:
            common = parts[0][:-1]
        group = names.get(block[0]["name"], "_".join(common[1:]).lower())
        for d in block:
            d["group"] = group
    return blocks


def build_manifest(root, lib_path):
    with open(os.path.join(root, "include", "ikllm.h"), encoding="utf-8") as f:
        parsed = header_parser.parse(f.read())
    with open(os.path.join(HERE, "overrides.json"), encoding="utf-8") as f:
        overrides = json.load(f)

    typedefs = {t["name"]: t["c"] for t in parsed["typedefs"]}
    handles = [h["name"] for h in parsed["handles"]]
    callbacks = {c["name"] for c in parsed["callbacks"]}

    known = {}
    for d in parsed["defines"]:
        d["value"] = _eval_define(d["expr"], known)
        known[d["name"]] = d["value"]
    _group_constants(parsed["defines"], overrides)

    fn_over = overrides.get("functions", {})
    for fn in parsed["functions"]:
        over = fn_over.get(fn["name"], {})
        for pname, fields in over.get("params", {}).items():
            match = [p for p in fn["params"] if p["name"] == pname]
            if not match:
                raise SystemExit("overrides.json: %s has no parameter %s" % (fn["name"], pname))
            match[0].update(fields)
        roles.derive_params(fn, set(handles), callbacks, typedefs)
        fn["returns"] = roles.derive_return(fn, set(handles), typedefs)
        fn["returns"].update(over.get("returns", {}))
        for key in ("thread_safe",):
            if key in over:
                fn[key] = over[key]
    for cb in parsed["callbacks"]:
        for p in cb["params"]:
            p["role"] = "user_data" if p["name"] == "user_data" else "value"
            if p["type"]["base"] == "char" and p["type"]["ptr"] == 1:
                p["role"] = "string"
    frees = roles.free_functions(parsed["functions"], handles)
    unknown = set(fn_over) - {f["name"] for f in parsed["functions"]}
    if unknown:
        raise SystemExit("overrides.json names functions the header lacks: %s" % sorted(unknown))

    groups = {}
    for d in parsed["defines"]:
        g = groups.setdefault(d["group"], {"name": d["group"], "flags": False, "values": []})
        g["flags"] = g["flags"] or d["expr"].endswith("u")
        g["values"].append({"name": d["name"], "value": d["value"], "doc": d["doc"]})

    kinds = {v["name"][len("IKLLM_OPTIONS_"):].lower(): v["value"] for v in groups["options_kind"]["values"]}
    type_names = {v["value"]: v["name"][len("IKLLM_OPTION_"):].lower() for v in groups["option_type"]["values"]}
    options = option_listing.list_options(lib_path, kinds, type_names)

    _resolve_scalars(parsed, typedefs)
    return {
        "format": MANIFEST_FORMAT,
        "generated_by": "tools/abi-manifest/generate.py from include/ikllm.h; do not edit",
        "version": {"major": known["IKLLM_VERSION_MAJOR"], "minor": known["IKLLM_VERSION_MINOR"],
                    "patch": known["IKLLM_VERSION_PATCH"], "abi": known["IKLLM_ABI_VERSION"]},
        "overview": parsed.get("overview", ""),
        "typedefs": [{"name": t["name"], "c": t["c"], "doc": t["doc"]} for t in parsed["typedefs"]],
        "handles": [{"name": h["name"], "free": frees.get(h["name"]), "thread_safe":
                     h["name"] in overrides.get("shareable_handles", []), "doc": h["doc"]}
                    for h in parsed["handles"]],
        "callbacks": [{"name": c["name"], "returns": {"type": c["returns"], "role": "void" if c["returns"]["c"] == "void" else "value"},
                       "params": c["params"], "doc": c["doc"]}
                      for c in parsed["callbacks"]],
        "constants": list(groups.values()),
        "functions": [{k: fn[k] for k in ("name", "section", "returns", "params", "doc", "group_doc") if k in fn}
                      for fn in parsed["functions"]],
        "options": options,
    }


def _resolve_scalars(parsed, typedefs):
    """Adds "scalar" (the C scalar behind typedefs such as ikllm_status) to every type record."""
    def fix(t):
        s = roles.scalar_of(t["base"], typedefs)
        if s and s != t["base"]:
            t["scalar"] = s
    for f in parsed["functions"] + parsed["callbacks"]:
        fix(f["returns"]["type"] if "role" in f["returns"] else f["returns"])
        for p in f["params"]:
            fix(p["type"])


def dump(manifest):
    return json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"


def binding_generators(root):
    base = os.path.join(root, "bindings")
    for lang in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        path = os.path.join(base, lang, "generate_abi.py")
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("generate_abi_" + lang, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            yield lang, mod


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on difference")
    ap.add_argument("--lib", help="libikllm shared library (default $IKLLM_LIB or build/libikllm.so)")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(HERE)), help="repository root")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    lib = a.lib or os.environ.get("IKLLM_LIB") or os.path.join(root, "build", "libikllm.so")
    if not os.path.exists(lib):
        raise SystemExit("library '%s' not found (build the ikllm target or pass --lib)" % lib)

    manifest = build_manifest(root, lib)
    files = {"bindings/abi.json": dump(manifest)}
    for lang, mod in binding_generators(root):
        for rel, text in mod.generate(manifest).items():
            files[rel] = text

    bad = 0
    for rel, text in sorted(files.items()):
        path = os.path.join(root, rel)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old == text:
            continue
        if a.check:
            bad += 1
            diff = difflib.unified_diff((old or "").splitlines(True), text.splitlines(True),
                                        "checked-in/" + rel, "generated/" + rel)
            sys.stdout.writelines(list(diff)[:200])
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print("wrote", rel)
    if bad:
        print("\n%d generated file(s) differ from the header: run tools/abi-manifest/generate.py and "
              "commit the result" % bad)
        return 1
    if a.check:
        print("abi manifest and %d generated file(s) match include/ikllm.h" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
