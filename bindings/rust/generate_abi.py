"""Plug-in for tools/abi-manifest/generate.py: the Rust raw layer (src/sys.rs) from the manifest."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "ikllm_rust_gen_sys", os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen", "gen_sys.py"))
_gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gen)


def generate(manifest):
    return _gen.generate_files(manifest)
