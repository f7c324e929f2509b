"""Parses include/ikllm.h into plain records: #define constants, opaque handle typedefs, scalar
typedefs, callback typedefs and IKLLM_API functions, each with its doc comment and header section.

The header is regular C99 written to a few conventions (one declaration per statement, comments
before or on the same line as what they describe, section banners "/* ---- name ---- */"), so a
small tokenizer is enough; anything it does not understand is an error, never silently skipped.
"""
import re

_SECTION = re.compile(r"^-{2,}\s*(.*?)\s*-{2,}$")


class HeaderError(Exception):
    pass


def _strip_conditionals(text):
    """Drops the __cplusplus and platform export-macro blocks (they hold no declarations)."""
    out, skip = [], 0
    for line in text.split("\n"):
        s = line.strip()
        if skip:
            if s.startswith("#if"):
                skip += 1
            elif s.startswith("#endif"):
                skip -= 1
            out.append("")
            continue
        if s in ("#ifdef __cplusplus", "#if defined(_WIN32)"):
            skip = 1
            out.append("")
            continue
        out.append(line)
    return "\n".join(out)


def _clean_comment(body):
    lines = [re.sub(r"^\s*\*?\s?", "", ln).rstrip() for ln in body.split("\n")]
    return "\n".join(lines).strip()


def _items(text):
    """Yields (kind, text, line, end_line) for comments, preprocessor lines and statements."""
    i, n = 0, len(text)
    line_of = lambda pos: text.count("\n", 0, pos) + 1
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("/*", i):
            j = text.index("*/", i) + 2
            yield "comment", text[i + 2:j - 2], line_of(i), line_of(j)
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            yield "comment", text[i + 2:j], line_of(i), line_of(j)
            i = j
        elif c == "#":
            j = i
            while True:
                j = text.find("\n", j)
                if j < 0:
                    j = n
                    break
                if text[j - 1] != "\\":
                    break
                j += 1
            yield "pp", text[i:j], line_of(i), line_of(j)
            i = j
        else:
            # A statement runs to ';' outside parentheses; comments inside are dropped.
            j, depth, buf = i, 0, []
            while j < n:
                if text.startswith("/*", j):
                    j = text.index("*/", j) + 2
                    buf.append(" ")
                    continue
                ch = text[j]
                if ch == "(":
                    depth += 1
                elif ch == ")":
                    depth -= 1
                elif ch == ";" and depth == 0:
                    break
                buf.append(ch)
                j += 1
            if j >= n:
                raise HeaderError("unterminated statement at line %d" % line_of(i))
            yield "stmt", " ".join("".join(buf).split()), line_of(i), line_of(j)
            i = j + 1


def parse_type(ctype):
    """'const volatile int32_t*' -> {c, base, ptr, const, volatile} (const of the pointee)."""
    t = ctype.replace("*", " * ")
    words = t.split()
    const = "const" in words[: max(1, words.index("*"))] if "*" in words else "const" in words
    volatile = "volatile" in words
    ptr = words.count("*")
    base_words = [w for w in words if w not in ("const", "volatile", "*", "struct")]
    if len(base_words) != 1:
        raise HeaderError("cannot parse type '%s'" % ctype)
    base = base_words[0]
    c = ("const " if const else "") + ("volatile " if volatile else "") + base + "*" * ptr
    return {"c": c, "base": base, "ptr": ptr, "const": const, "volatile": volatile}


def _parse_params(plist):
    plist = plist.strip()
    if plist in ("", "void"):
        return []
    params = []
    for p in plist.split(","):
        m = re.match(r"^(.*?)([A-Za-z_]\w*)$", p.strip())
        if not m:
            raise HeaderError("cannot parse parameter '%s'" % p)
        params.append({"name": m.group(2), "type": parse_type(m.group(1).strip())})
    return params


_DEFINE = re.compile(r"^#\s*define\s+(\w+)\s+(.*?)\s*(?:/\*(.*?)\*/)?\s*$", re.S)
_FUNC = re.compile(r"^IKLLM_API\s+(.*?)\b(ikllm_\w+)\s*\((.*)\)$")
_OPAQUE = re.compile(r"^typedef struct (\w+) (\w+)$")
_FNPTR = re.compile(r"^typedef (.*?)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\)$")
_SCALAR = re.compile(r"^typedef ([\w ]+?) (\w+)$")


def parse(text):
    """Returns {"defines", "handles", "typedefs", "callbacks", "functions"} in header order."""
    text = _strip_conditionals(text)
    res = {"defines": [], "handles": [], "typedefs": [], "callbacks": [], "functions": []}
    section, pending, last, last_end = "", [], None, -1
    first_comment = True
    for kind, body, line, end in _items(text):
        if kind == "comment":
            doc = _clean_comment(body)
            if first_comment:  # the file banner: the header's own overview
                res["overview"] = doc
                first_comment = False
                continue
            m = _SECTION.match(doc)
            if m:
                section, pending, last = m.group(1), [], None
            elif last is not None and line == last_end:
                last["doc"] = (last["doc"] + "\n" + doc).strip()  # trailing comment
            else:
                pending.append(doc)
            continue
        doc = "\n".join(pending).strip()
        pending = []
        # A comment that says it covers what follows ("Model-owned strings below ...") also
        # describes the adjacent declarations after the first: they get it as group_doc.
        group = ""
        if not doc and last is not None and line <= last_end + 1 and " below" in last.get("_lead", ""):
            group = last["_lead"]
        lead = doc or group
        if kind == "pp":
            m = _DEFINE.match(" ".join(body.replace("\\\n", " ").split()) if "\n" in body else body)
            if not m or m.group(1) in ("IKLLM_H", "IKLLM_API"):
                continue
            name, value, trailing = m.group(1), m.group(2).strip(), (m.group(3) or "").strip()
            item = {"name": name, "expr": value, "section": section, "_line": line, "_end": end,
                    "doc": (doc + "\n" + trailing).strip() if doc and trailing else (trailing or doc)}
            res["defines"].append(item)
            item["_lead"] = doc or group
            last, last_end = item, end
            continue
        # statements
        m = _FUNC.match(body)
        if m:
            item = {"name": m.group(2), "returns": parse_type(m.group(1).strip()),
                    "params": _parse_params(m.group(3)), "section": section, "doc": doc, "line": line}
            if group:
                item["group_doc"] = group
            res["functions"].append(item)
        elif _OPAQUE.match(body):
            m = _OPAQUE.match(body)
            if m.group(1) != m.group(2):
                raise HeaderError("opaque typedef with another name: " + body)
            item = {"name": m.group(2), "section": section, "doc": doc}
            res["handles"].append(item)
        elif _FNPTR.match(body):
            m = _FNPTR.match(body)
            item = {"name": m.group(2), "returns": parse_type(m.group(1).strip()),
                    "params": _parse_params(m.group(3)), "section": section, "doc": doc}
            res["callbacks"].append(item)
        elif _SCALAR.match(body):
            m = _SCALAR.match(body)
            item = {"name": m.group(2), "c": m.group(1), "section": section, "doc": doc}
            res["typedefs"].append(item)
        elif re.match(r"^struct \w+$", body):
            item = {"name": "", "doc": ""}  # forward declaration; its comment is not a doc
        elif body.startswith('extern "C"') or body in ("}",):
            continue
        else:
            raise HeaderError("line %d: unrecognised declaration '%s'" % (line, body))
        item["_lead"] = lead
        last, last_end = item, end
    return res
