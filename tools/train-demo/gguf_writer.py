"""A minimal GGUF (version 3, little-endian) writer: metadata key/values and F32 tensors.

Layout: header, key/value records, tensor-info records, zero padding to the alignment, then each tensor's
data padded to the alignment. Shapes are written in GGUF order (ne0 = contiguous = PyTorch's last dim).
"""
import struct

import numpy as np

ALIGNMENT = 32

# GGUF value type codes.
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
_SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?",
           U64: "<Q", I64: "<q", F64: "<d"}
TYPE_F32 = 0  # tensor element type code for float32


def _string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _value(vtype, value):
    if vtype == STRING:
        return _string(value)
    return struct.pack(_SCALAR[vtype], value)


class GGUFWriter:
    def __init__(self):
        self.kv = []       # (key, type, value, element type for arrays)
        self.tensors = []  # (name, float32 array)

    def add(self, key, vtype, value):
        self.kv.append((key, vtype, value, None))

    def add_array(self, key, elem_type, values):
        self.kv.append((key, ARRAY, list(values), elem_type))

    def add_tensor(self, name, array):
        self.tensors.append((name, np.ascontiguousarray(array, dtype=np.float32)))

    def write(self, path):
        out = bytearray(b"GGUF")
        out += struct.pack("<IQQ", 3, len(self.tensors), len(self.kv))
        for key, vtype, value, elem in self.kv:
            out += _string(key) + struct.pack("<I", vtype)
            if vtype == ARRAY:
                out += struct.pack("<IQ", elem, len(value))
                if elem == STRING:
                    out += b"".join(_string(v) for v in value)
                else:
                    out += np.asarray(value, dtype=np.dtype(_SCALAR[elem])).tobytes()
            else:
                out += _value(vtype, value)
        offset = 0
        for name, arr in self.tensors:
            ne = list(reversed(arr.shape))
            out += _string(name) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne)
            out += struct.pack("<IQ", TYPE_F32, offset)
            offset += _align(arr.nbytes)
        out += b"\0" * (_align(len(out)) - len(out))
        with open(path, "wb") as f:
            f.write(out)
            for _, arr in self.tensors:
                f.write(arr.tobytes())
                f.write(b"\0" * (_align(arr.nbytes) - arr.nbytes))


def _align(n):
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
