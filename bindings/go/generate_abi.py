"""Plug-in for tools/abi-manifest/generate.py: the Go raw layer (ikllm_gen.h, consts_gen.go)."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "ikllm_go_gen", os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen", "gen_go.py"))
_gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gen)


def generate(manifest):
    return _gen.generate_files(manifest)
