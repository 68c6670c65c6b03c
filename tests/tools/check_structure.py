#!/usr/bin/python3
"""Structure rules of the code base, checked on every test run (ctest "structure"):

  (a) long-function       no function body in server/ or dax/ longer than 120 lines (from the
                          line of its opening brace to the line of its closing brace)
  (b) global              no `::global()` in server/ or dax/ (process-wide singletons)
  (c) include-connection  no file in server/handlers/ includes "server/connection.h" (handlers
                          see the connection through RequestContext)

Violations that exist today are listed in tests/tools/structure-allow.txt, one per line:
  long-function <file> <function>
  global <file> <Class>::global()
  include-connection <file>
The check fails on a violation that is not listed, and on a listed entry that no longer occurs,
so the list only shrinks: remove the entry in the change that fixes it.

  tests/tools/check_structure.py [--root DIR] [--allow FILE]

The function scanner is a brace matcher over the source without comments, string literals and
preprocessor lines: a `{` at namespace or class scope whose declaration ends like a function
(parameter list, qualifiers, a constructor's initializer list or a trailing return type) opens a
function body; lambdas and braces inside bodies belong to the enclosing function.
"""

import argparse
import os
import re
import sys

MAX_FUNCTION_LINES = 120
SOURCE_SUFFIXES = (".cpp", ".h")


def strip_code(text):
    """The text with comments, string and character literals and preprocessor lines blanked
    (newlines kept, so line numbers stay right)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            # A preprocessor line, with its backslash continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                i += 1
            continue
        line_start = False
        if c == "\n":
            out.append(c)
            line_start = True
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif c == "R" and text.startswith('"', i + 1) and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^()\\\s]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            close = ")" + m.group(1) + '"'
            end = text.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "'":
            # A digit separator (300'000, 0xFF'FF) or a character literal.
            k = i - 1
            while k >= 0 and (text[k].isalnum() or text[k] in "'."):
                k -= 1
            if k + 1 < i and text[k + 1].isdigit():
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append("' '")
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


QUALIFIERS = re.compile(
    r"^(\s|const\b|volatile\b|noexcept\b(\s*\([^()]*\))?|override\b|final\b|mutable\b|&&|&|"
    r"throw\s*\(\s*\))*$"
)


def depth0_parens(head):
    """(start, end) of each parenthesised group at depth 0 of `head`."""
    groups, depth, start = [], 0, None
    for i, c in enumerate(head):
        if c == "(":
            if depth == 0:
                start = i
            depth += 1
        elif c == ")" and depth > 0:
            depth -= 1
            if depth == 0:
                groups.append((start, i))
    return groups


def function_name(head):
    """The name before the parameter list of a function declaration head, or None."""
    clean = re.sub(r"\boperator\s*(\(\)|[^\s(]+)\s*(?=\()", lambda m: "operator" + m.group(1).replace("(", "[").replace(")", "]") + " ", head)
    for start, _ in depth0_parens(clean):
        m = re.search(r"(~?[A-Za-z_][\w]*(?:\s*::\s*~?[A-Za-z_]\w*)*(?:\s*<[^;{}()]*>)?(?:operator\S*)?)\s*$", clean[:start])
        if not m:
            continue
        name = re.sub(r"\s+", "", m.group(1))
        last = name.split("::")[-1]
        if last in ("decltype", "alignas", "__attribute__", "sizeof", "noexcept", "requires", "if", "for", "while", "switch", "return"):
            continue
        return name.replace("[", "(").replace("]", ")")
    return None


def classify(head):
    """'namespace', 'class', ('function', name) or 'other' for a `{` after declaration `head`."""
    h = " ".join(head.split())
    if re.search(r"\bnamespace\b", h) or re.fullmatch(r'extern\s*""', h):
        return "namespace"
    groups = depth0_parens(h)
    if groups:
        name = function_name(h)
        if name:
            before_params = h[: groups[0][0]]
            # An initialiser (`x = ...`), not a definition; `operator=` is a name.
            assignment = re.search(r"(?<![=!<>])=(?!=)", re.sub(r"operator\s*\S+", "", before_params))
            tail = h[groups[-1][1] + 1 :]
            after_first = h[groups[0][1] + 1 :]
            looks_like_body = (
                QUALIFIERS.match(tail)
                or h.endswith("}")  # a constructor whose initializer list ends with a braced member
                or re.match(r"^\s*(const\s*|noexcept\s*|&\s*|&&\s*)*->", after_first)
                or re.match(r"^\s*(noexcept\s*)?:(?!:)", after_first)
            )
            if looks_like_body and not assignment and not re.search(r"\b(class|struct|union|enum)\b\s*\w*\s*$", before_params):
                return ("function", name)
    if re.search(r"\b(class|struct|union)\b", h) and "(" not in h and "=" not in h:
        return "class"
    return "other"


def functions(path):
    """(opening line, name, length in lines) of every function body in the file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        code = strip_code(f.read())
    found = []
    # Scope stack entries: kind ('namespace', 'class', 'function', 'other'), and for functions
    # the name and the line of the opening brace.
    stack = []
    head_start = 0
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
            continue
        in_body = any(kind in ("function", "other") for kind, *_ in stack)
        if c == "{":
            if in_body:
                stack.append(("other",))
                continue
            kind = classify(code[head_start:i])
            if isinstance(kind, tuple):
                stack.append(("function", kind[1], line))
            elif kind == "other":
                stack.append(("other-init",))
            else:
                stack.append((kind,))
            head_start = i + 1
        elif c == "}":
            if not stack:
                head_start = i + 1
                continue
            top = stack.pop()
            if top[0] == "function":
                found.append((top[2], top[1], line - top[2] + 1))
                head_start = i + 1
            elif top[0] == "other-init":
                # A braced initializer at declaration scope: the declaration goes on (a
                # constructor's initializer list, `int a[] = {...};`).
                pass
            elif top[0] != "other":
                head_start = i + 1
        elif c == ";" and not in_body:
            head_start = i + 1
        elif c == ":" and not in_body:
            # `public:` / `private:` / `protected:` end a declaration head.
            m = re.search(r"\b(public|private|protected)\s*$", code[head_start:i])
            if m and not code.startswith("::", i) and code[i - 1] != ":":
                head_start = i + 1
    return found


def source_files(root, top_dirs):
    for top in top_dirs:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if name.endswith(SOURCE_SUFFIXES):
                    full = os.path.join(dirpath, name)
                    yield os.path.relpath(full, root), full


def violations(root):
    """Every violation as (key, message): the key is what an allow-list line holds."""
    out = []
    for rel, full in source_files(root, ("server", "dax")):
        for start, name, length in functions(full):
            if length > MAX_FUNCTION_LINES:
                out.append((f"long-function {rel} {name}", f"{rel}:{start} {name} {length} lines (more than {MAX_FUNCTION_LINES})"))
        with open(full, encoding="utf-8", errors="replace") as f:
            code = strip_code(f.read())
        for n, text in enumerate(code.split("\n"), 1):
            for m in re.finditer(r"((?:\w+::)*\w+)::global\s*\(\s*\)", text):
                out.append((f"global {rel} {m.group(1)}::global()", f"{rel}:{n} {m.group(1)}::global()"))
        # Preprocessor lines are blanked in `code`: the includes are read from the raw text.
        if rel.startswith("server/handlers/"):
            with open(full, encoding="utf-8", errors="replace") as f:
                for n, text in enumerate(f, 1):
                    if re.match(r'\s*#\s*include\s*"server/connection\.h"', text):
                        out.append((f"include-connection {rel}", f'{rel}:{n} includes "server/connection.h"'))
    return out


def read_allow(path):
    entries = []
    if not os.path.exists(path):
        return entries
    with open(path, encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            text = text.split("#", 1)[0].strip()
            if text:
                entries.append((" ".join(text.split()), n))
    return entries


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")))
    parser.add_argument("--allow", default=os.path.join(here, "structure-allow.txt"))
    parser.add_argument("--list", action="store_true", help="print every violation as an allow-list line")
    parser.add_argument("--functions", metavar="FILE", help="print the functions found in FILE")
    args = parser.parse_args()

    if args.functions:
        for start, name, length in functions(args.functions):
            print(f"{args.functions}:{start} {name} {length}")
        return 0

    found = violations(args.root)
    if args.list:
        for key in sorted({k for k, _ in found}):
            print(key)
        return 0
    allow = read_allow(args.allow)
    allowed = {key for key, _ in allow}
    failed = False
    for key, message in found:
        if key not in allowed:
            print(f"structure: {message}")
            failed = True
    keys = {k for k, _ in found}
    allow_rel = os.path.relpath(args.allow, args.root)
    for key, n in allow:
        if key not in keys:
            print(f"structure: {allow_rel}:{n}: '{key}' no longer occurs: remove it from the list")
            failed = True
    known = len([1 for k, _ in found if k in allowed])
    print(f"structure: {'FAILED' if failed else 'ok'} ({len(found)} violations, {known} of them allowed by {allow_rel})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
