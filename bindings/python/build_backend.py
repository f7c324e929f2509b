"""A minimal in-tree PEP 517 build backend (standard library only), so that
`pip install bindings/python` works offline: build isolation then has nothing to download.
It builds a pure-Python wheel of the ikllm/ package."""
import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME, VERSION = "ikllm", "0.1.0"
SUMMARY = "Python binding of ikllm, an embeddable LLM inference engine for GGUF models (ctypes)"
HERE = os.path.dirname(os.path.abspath(__file__))
DIST_INFO = "%s-%s.dist-info" % (NAME, VERSION)


def _metadata():
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: >=3.8\n"
            "Description-Content-Type: text/markdown\n\n%s" % (NAME, VERSION, SUMMARY, readme))


def _files():
    for dirpath, _dirs, names in os.walk(os.path.join(HERE, NAME)):
        for n in sorted(names):
            if n.endswith((".py", ".typed")):
                full = os.path.join(dirpath, n)
                with open(full, "rb") as f:
                    yield os.path.relpath(full, HERE).replace(os.sep, "/"), f.read()


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def _write_wheel(directory, extra=(), package=True):
    wheel = "%s-%s-py3-none-any.whl" % (NAME, VERSION)
    entries = (list(_files()) if package else []) + list(extra) + [
        (DIST_INFO + "/METADATA", _metadata().encode()),
        (DIST_INFO + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: ikllm-build-backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = [_record_line(p, d) for p, d in entries] + [DIST_INFO + "/RECORD,,"]
    with zipfile.ZipFile(os.path.join(directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for p, d in entries:
            z.writestr(p, d)
        z.writestr(DIST_INFO + "/RECORD", "\n".join(record) + "\n")
    return wheel


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory)


def get_requires_for_build_editable(config_settings=None):
    return []


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # Only a .pth file pointing at this folder: the checkout itself is imported.
    return _write_wheel(wheel_directory, [("ikllm_editable.pth", (HERE + "\n").encode())], package=False)


def build_sdist(sdist_directory, config_settings=None):
    name = "%s-%s" % (NAME, VERSION)
    path = os.path.join(sdist_directory, name + ".tar.gz")
    with tarfile.open(path, "w:gz") as t:
        for rel in ["pyproject.toml", "build_backend.py", "README.md"] + [p for p, _ in _files()]:
            t.add(os.path.join(HERE, rel), arcname=name + "/" + rel)
        info = tarfile.TarInfo(name + "/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return name + ".tar.gz"
