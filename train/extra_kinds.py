#!/usr/bin/env python3
"""Two more (query -> gold files) pair kinds for the v2 training corpus (stdlib only).

  symbol  the name of a definition (function, method, class, struct, trait, interface, enum, type,
          module, macro...) found by per-language regexes in the source files at S
          (srcfiles.is_source), split into lower-case words: `parseHttpHeader` -> "parse http
          header".  Only names of 2+ words (6+ letters) that are defined in exactly one source file
          (and whose word form maps to that one file) are kept; gold = that file.  Up to --cap per
          repository, spread round-robin over files like the docstrings.
  test    a test file at S (by name convention, outside the source-file set) -> the source file it
          tests: test_foo.py / foo_test.py -> foo.py, foo_test.go -> foo.go (same directory),
          FooTest.java / FooTests.cs / FooSpec.scala / FooTests.swift -> Foo.*, foo.test.ts /
          foo.spec.js / __tests__/foo.js -> foo.ts|js, foo_spec.rb -> foo.rb, foo_test.exs -> foo.ex,
          foo_test.dart -> foo.dart, test_foo.c / foo_test.cc / foo_unittest.cc -> foo.c|cc (+ its
          header in the same folder).  When several source files share the name, the one whose
          folder path shares the most components with the test's wins; a tie drops the test.
          Query = the test file's first test names / descriptions as text (test_/Test prefixes
          dropped, identifiers split into words), "; "-joined, 3-60 words, at most 500 characters;
          a text that occurs for two different gold sets is dropped.  Up to --cap per repository
          (sample_evenly over the test files in path order).

Both read blobs at S through one streamed `git cat-file --batch` (bounded memory) and skip
files over 400 kB, binary or minified, as the docstring miner does.
"""
import hashlib, os, re, subprocess, sys, threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mine_corpus as m  # noqa: E402

bq, is_source, normalise = m.bq, m.is_source, m.normalise

MAX_BLOB = 400_000


# ------------------------------------------------------------------ blobs
def ls_tree(gd, snap):
    """-> {path: (mode, type, sha)} at snap"""
    out = {}
    for e in m.run_git(gd, ["ls-tree", "-r", "-z", snap]).split(b"\0"):
        if not e:
            continue
        meta, p = e.split(b"\t", 1)
        mode, typ, sha = meta.decode().split()
        out[p.decode("utf-8", "surrogateescape")] = (mode, typ, sha)
    return out


def iter_blobs(gd, items):
    """items: [(path, sha)] -> yields (path, text or None); streamed, bounded memory."""
    if not items:
        return
    p = subprocess.Popen(["git", "--git-dir", gd, "cat-file", "--batch"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def feed():
        try:
            for _, sha in items:
                p.stdin.write((sha + "\n").encode())
            p.stdin.close()
        except BrokenPipeError:
            pass
    t = threading.Thread(target=feed, daemon=True)
    t.start()
    try:
        for path, _ in items:
            hdr = p.stdout.readline().split()
            if len(hdr) < 3 or hdr[1] == b"missing":
                yield path, None
                continue
            size = int(hdr[2])
            data = p.stdout.read(size)
            p.stdout.read(1)
            if size > MAX_BLOB or b"\0" in data[:8000]:
                yield path, None
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = data.decode("latin-1")
            if max((len(l) for l in text[:20000].splitlines()), default=0) > 2000:
                yield path, None   # minified / generated
                continue
            yield path, text
    finally:
        p.stdout.close()
        t.join()
        p.wait()


# ------------------------------------------------------------------ identifiers -> words
def split_ident(name):
    name = re.sub(r"^[_$@]+|[_$?!]+$", "", name)
    parts = []
    for chunk in re.split(r"[_$\-\s.:]+", name):
        parts += re.findall(r"[A-Z]+\d*(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+", chunk)
    return [w.lower() for w in parts if w]


EXT_LANG = {}
for _l, _exts in {"py": ".py .pyi", "js": ".js .jsx .mjs .cjs .ts .tsx .mts .cts", "go": ".go",
                  "rs": ".rs", "jvm": ".java .kt .kts .groovy .scala .cs .dart",
                  "c": ".c .h .cc .cpp .cxx .hpp .hh .hxx .m .mm", "swift": ".swift",
                  "rb": ".rb", "php": ".php", "lua": ".lua", "ex": ".ex .exs", "zig": ".zig"}.items():
    for _e in _exts.split():
        EXT_LANG[_e] = _l

_KW = set("""if else elif for foreach while do switch case default return try catch finally throw
throws break continue goto new delete sizeof typeof instanceof await yield async import from using
package namespace defined define include static const let var val fun func function def class struct
enum interface trait impl type typedef union operator template public private protected internal
override virtual abstract final sealed extern inline unsafe pub mod use self super this true false
null nil none void int char bool float double long short unsigned signed auto module end begin
rescue ensure unless until when then match with lambda not and or in is as of get set init
main""".split())

SYM_RE = {
    "py": [r"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)", r"^[ \t]*class[ \t]+(\w+)"],
    "js": [r"^[ \t]*(?:export[ \t]+)?(?:default[ \t]+)?(?:async[ \t]+)?function\*?[ \t]+([\w$]+)",
           r"^[ \t]*(?:export[ \t]+)?(?:default[ \t]+)?(?:abstract[ \t]+)?class[ \t]+([\w$]+)",
           r"^[ \t]*(?:export[ \t]+)?(?:declare[ \t]+)?(?:interface|enum|type)[ \t]+([\w$]+)",
           r"^[ \t]*(?:export[ \t]+)?(?:const|let|var)[ \t]+([\w$]+)[ \t]*(?::[^=]+)?=[ \t]*(?:async[ \t]*)?"
           r"(?:function\b|\([^)]*\)[ \t]*(?::[^=]+)?=>|[\w$]+[ \t]*=>)",
           r"^[ \t]+(?:(?:public|private|protected|static|async|readonly|override|get|set)[ \t]+)+"
           r"([\w$]+)[ \t]*(?:<[^>]*>)?\("],
    "go": [r"^func[ \t]+(?:\([^)]*\)[ \t]*)?(\w+)", r"^type[ \t]+(\w+)", r"^\t(\w+)[ \t]+(?:struct|interface)\b"],
    "rs": [r"^[ \t]*(?:pub(?:\([^)]*\))?[ \t]+)?(?:(?:const|async|unsafe|extern[ \t]+\"[^\"]*\")[ \t]+)*fn[ \t]+(\w+)",
           r"^[ \t]*(?:pub(?:\([^)]*\))?[ \t]+)?(?:struct|enum|trait|type|union)[ \t]+(\w+)",
           r"^[ \t]*macro_rules![ \t]*(\w+)"],
    "jvm": [r"^[ \t]*(?:(?:public|private|protected|internal|static|final|abstract|sealed|open|data|"
            r"inner|enum|annotation|value|case|partial|export|inline|fun)[ \t]+)*"
            r"(?:class|interface|enum|record|object|trait|struct|mixin|extension)[ \t]+(\w+)",
            r"^[ \t]*(?:(?:public|private|protected|internal|static|final|abstract|synchronized|native|"
            r"override|virtual|async|sealed|open|suspend|inline|operator|infix|tailrec|external|"
            r"unsafe|extern|new|default)[ \t]+)*fun[ \t]+(?:<[^>]*>[ \t]*)?(?:[\w.<>?]+\.)?(\w+)[ \t]*\(",
            r"^[ \t]*(?:(?:override|private|protected|final|implicit|inline|transparent)[ \t]+)*def[ \t]+(\w+)",
            r"^[ \t]*(?:(?:public|private|protected|internal|static|final|abstract|synchronized|native|"
            r"override|virtual|async|sealed|unsafe|extern|new|default)[ \t]+)+"
            r"(?:<[^>]*>[ \t]*)?[\w.<>\[\],? ]*?[\w>\]?][ \t]+(\w+)[ \t]*(?:<[^>]*>)?\("],
    "c": [r"^(?:[A-Za-z_][\w*&<>,:~ ]*[ \t*&]+)?\**((?:\w+::)*~?\w+)[ \t]*\([^;]*$",
          r"^[ \t]*(?:typedef[ \t]+)?(?:struct|class|union|enum(?:[ \t]+class)?)[ \t]+(?:\w+[ \t]+)?(\w+)[ \t]*(?::[^;{]*)?\{",
          r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(",
          r"^[ \t]*[-+][ \t]*\([^)]*\)[ \t]*(\w+)",       # Objective-C methods
          r"^@(?:interface|implementation|protocol)[ \t]+(\w+)"],
    "swift": [r"^[ \t]*(?:(?:public|private|fileprivate|internal|open|static|final|override|class|"
              r"mutating|nonmutating|@\w+(?:\([^)]*\))?|convenience|required|indirect)[ \t]+)*"
              r"(?:func|class|struct|enum|protocol|actor|typealias)[ \t]+(\w+)"],
    "rb": [r"^[ \t]*def[ \t]+(?:self\.)?(\w+[?!]?)", r"^[ \t]*(?:class|module)[ \t]+((?:\w+::)*\w+)"],
    "php": [r"^[ \t]*(?:(?:public|private|protected|static|final|abstract)[ \t]+)*function[ \t]+&?(\w+)",
            r"^[ \t]*(?:(?:final|abstract|readonly)[ \t]+)*(?:class|interface|trait|enum)[ \t]+(\w+)"],
    "lua": [r"^[ \t]*(?:local[ \t]+)?function[ \t]+([\w.:]+)", r"^[ \t]*(?:local[ \t]+)?([\w.]+)[ \t]*=[ \t]*function\b"],
    "ex": [r"^[ \t]*(?:def|defp|defmacro|defmacrop|defguard|defdelegate)[ \t]+(\w+[?!]?)",
           r"^[ \t]*defmodule[ \t]+([\w.]+)"],
    "zig": [r"^[ \t]*(?:pub[ \t]+)?(?:inline[ \t]+|export[ \t]+|extern[ \t]+)?fn[ \t]+(\w+)",
            r"^[ \t]*(?:pub[ \t]+)?const[ \t]+(\w+)[ \t]*=[ \t]*(?:extern[ \t]+|packed[ \t]+)?(?:struct|enum|union|opaque)\b"],
}
SYM_RE = {k: [re.compile(r, re.M) for r in v] for k, v in SYM_RE.items()}
C_BAD_LINE = re.compile(r"^\s*(?:return|else|if|for|while|switch|case|do|goto|typedef|using|namespace|"
                        r"#|//|/\*|\*)")


def file_symbols(path, text):
    lang = EXT_LANG.get(os.path.splitext(path)[1].lower())
    if not lang:
        return set()
    out = set()
    for rx in SYM_RE[lang]:
        for mt in rx.finditer(text):
            if lang == "c" and rx is SYM_RE["c"][0]:
                line = text[mt.start():text.find("\n", mt.start()) if "\n" in text[mt.start():] else None]
                if C_BAD_LINE.match(line) or line.startswith((" ", "\t")) and "::" not in mt.group(1):
                    continue
            name = mt.group(1)
            name = re.split(r"::|[.:]", name)[-1]         # Foo::bar, M.f, obj:method -> last part
            out.add(name)
    return out


def symbol_query(name):
    """name -> query words or None"""
    if name.lower() in _KW or re.search(r"^(?:test|Test|TEST|spec|Spec)(?:[A-Z_]|$)|"
                                        r"(?:Test|Tests|Spec|Specs|_test|_tests|_spec|TEST)$", name):
        return None
    ws = split_ident(name)
    if re.match(r"^I[A-Z][a-z]", name) and ws[:1] == ["i"]:
        ws = ws[1:]                                   # C#/TS interface prefix: IFileSystem
    if len(ws) < 2 or len(ws) > 8:
        return None
    if sum(len(w) for w in ws if w.isalpha()) < 6 or sum(1 for w in ws if len(w) >= 3 and w.isalpha()) < 2:
        return None
    return " ".join(ws)


def mine_symbols(gd, snap, tree, src, k):
    """-> (picked [(path, name, query)], stats)"""
    items = [(p, tree[p][2]) for p in sorted(src) if p in tree and tree[p][1] == "blob"]
    defs = {}            # name -> set(paths)
    st = {"files_read": 0, "files_skipped": 0, "names": 0}
    for p, text in iter_blobs(gd, items):
        if text is None:
            st["files_skipped"] += 1
            continue
        st["files_read"] += 1
        for n in file_symbols(p, text):
            defs.setdefault(n, set()).add(p)
    st["names"] = len(defs)
    by_query = {}
    for n, ps in defs.items():
        q = symbol_query(n)
        if q is None:
            continue
        by_query.setdefault(q, []).append((n, ps))
    per_file = {}
    amb = 0
    for q, lst in by_query.items():
        files = set().union(*(ps for _, ps in lst))
        if len(files) != 1:
            amb += 1
            continue
        p = next(iter(files))
        per_file.setdefault(p, []).append((min(n for n, _ in lst), q))
    st["dropped_ambiguous"] = amb
    st["candidates"] = sum(len(v) for v in per_file.values())
    picked = round_robin(per_file, k)
    return picked, st


def round_robin(per_file, k):
    """per_file: {path: [(key, text)]} -> [(path, key, text)], spread over files like the docstrings."""
    order = {p: sorted(v, key=lambda kt: hashlib.sha1(f"{p}:{kt[0]}".encode()).hexdigest())
             for p, v in per_file.items()}
    picked, r, files = [], 0, sorted(order)
    while len(picked) < k:
        rnd = [(p, *order[p][r]) for p in files if len(order[p]) > r]
        if not rnd:
            break
        if len(picked) + len(rnd) > k:
            rnd = bq.sample_evenly(rnd, k - len(picked))
        picked.extend(rnd)
        r += 1
    picked.sort(key=lambda x: (x[0], str(x[1])))
    return picked


# ------------------------------------------------------------------ tests
CODE_EXT = set(EXT_LANG)
HDR_EXT = {".h", ".hh", ".hpp", ".hxx"}
C_FAMILY = {".c", ".cc", ".cpp", ".cxx", ".m", ".mm"}
TEST_DIR = re.compile(r"^(?:(?:__)?tests?(?:__)?|spec|specs|unittests?|unit|testing|.*[-_.]tests?|"
                      r".*Tests?|src|main|lib|java|kotlin|scala|groovy)$", re.I)


def test_subject(path):
    """test file path -> (stem, ext-family set, same_dir_only) or None."""
    d, name = os.path.split(path)
    stem, ext = os.path.splitext(name)
    ext = ext.lower()
    if ext not in CODE_EXT:
        return None
    parts = d.split("/") if d else []
    in_test_dir = any(re.match(r"^(?:(?:__)?tests?(?:__)?|specs?|unittests?|.*[-_]tests?|.*Tests)$", x)
                      for x in parts)
    fam = {".py": {".py"}, ".go": {".go"}, ".rs": {".rs"}, ".rb": {".rb"}, ".php": {".php"},
           ".swift": {".swift"}, ".lua": {".lua"}, ".dart": {".dart"}, ".zig": {".zig"},
           ".ex": {".ex"}, ".exs": {".ex"}, ".cs": {".cs"},
           ".java": {".java", ".kt"}, ".kt": {".kt", ".java"}, ".kts": {".kt"},
           ".scala": {".scala"}, ".groovy": {".groovy", ".java"}}.get(ext)
    if ext in (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"):
        fam = {".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"}
    if ext in C_FAMILY or ext in HDR_EXT:
        fam = C_FAMILY | HDR_EXT
    s = None
    if ext == ".go":
        mt = re.match(r"^(.+)_test$", stem)
        return (mt.group(1), fam, True) if mt else None
    for rx in (r"^test_(.+)$", r"^(.+)_tests?$", r"^(.+)_spec$", r"^(.+)_unittests?$",
               r"^(.+)[._-](?:test|spec)$", r"^(.+?)(?:Tests?|Spec|Specs|IT)$", r"^Test(?=[A-Z])(.+)$",
               r"^test(?=[A-Z])(.+)$"):
        mt = re.match(rx, stem)
        if mt and len(mt.group(1)) >= 2:
            s = mt.group(1)
            break
    if s is None and in_test_dir and ext not in (".py",) and stem.lower() not in (
            "index", "main", "mod", "lib", "init", "__init__", "helper", "helpers", "utils", "util",
            "common", "setup", "fixtures", "conftest", "runner", "all", "suite", "test", "tests"):
        s = stem                       # tests/foo.rs, __tests__/foo.js, test/foo.js
    if s is None:
        return None
    return s, fam, False


def _shared_dirs(a, b):
    sa = [x for x in a.split("/")[:-1] if not TEST_DIR.match(x)]
    sb = set(x for x in b.split("/")[:-1] if not TEST_DIR.match(x))
    return sum(1 for x in sa if x in sb)


def map_test(path, by_stem):
    ts = test_subject(path)
    if ts is None:
        return None
    stem, fam, same_dir = ts
    cands = [p for p in by_stem.get(stem.lower(), ()) if os.path.splitext(p)[1].lower() in fam]
    if same_dir:
        cands = [p for p in cands if os.path.dirname(p) == os.path.dirname(path)]
    if not cands:
        return None
    # exact-case stem match first
    exact = [p for p in cands if os.path.splitext(os.path.basename(p))[0] == stem]
    if exact:
        cands = exact
    # group by folder (a C/C++/ObjC module = foo.c + foo.h in one folder)
    groups = {}
    for p in cands:
        groups.setdefault(os.path.dirname(p), []).append(p)
    scored = sorted(((_shared_dirs(path, d + "/x"), d) for d in groups), reverse=True)
    if len(scored) > 1 and scored[0][0] == scored[1][0]:
        # tie: for C-family prefer a folder that has a non-header file
        if not (fam & C_FAMILY):
            return None
        return None
    gold = sorted(groups[scored[0][1]])
    if not (fam & C_FAMILY) and len(gold) > 1:
        return None
    return gold


TEST_NAME_RE = [
    # string descriptions: it('..'), test("..."), describe, context, should, scenario, Elixir test "..." do
    re.compile(r"""(?:^|[\s(;{])(?:it|test|describe|context|specify|scenario|should|feature|
                   TEST_CASE|SCENARIO|SECTION|DYNAMIC_SECTION|t\.Run|suite|group)\s*\(?\s*
                   (?:"((?:[^"\\\n]|\\.){3,200})"|'((?:[^'\\\n]|\\.){3,200})'|`([^`\n]{3,200})`)""", re.X | re.M),
    # Kotlin / Scala backtick names, Spock "def 'name'()"
    re.compile(r"""fun\s+`([^`\n]{3,200})`|def\s+"([^"\n]{3,200})"\s*\(|def\s+'([^'\n]{3,200})'\s*\(""", re.M),
    # GoogleTest TEST(Suite, Name)
    re.compile(r"^\s*(?:TEST|TEST_F|TEST_P|TYPED_TEST)\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)", re.M),
    # function names: test_x, testX, TestX (Go), Rust #[test] fn x, Swift func testX
    re.compile(r"(?:def|func|fn|function|void|fun|async\s+Task|public\s+void|Task)\s+((?:test|Test)[A-Za-z0-9_]*[?!]?)(?=\s*[\(<\[]|[ \t]*$)", re.M),
    re.compile(r"#\[(?:\w+::)*test\]\s*(?:#\[[^\]]*\]\s*)*(?:pub\s+)?(?:async\s+)?fn\s+(\w+)", re.M),
    re.compile(r"@(?:Test|ParameterizedTest|RepeatedTest|TestFactory|Fact|Theory)\b[^\n]*\n(?:\s*@[^\n]*\n)*\s*"
               r"(?:(?:public|private|protected|internal|static|final|override|suspend|async)\s+)*"
               r"(?:fun|void|def|[\w<>]+)\s+`?(\w[\w ]*)`?\s*\(", re.M),
    re.compile(r"\[(?:Fact|Theory|Test|TestMethod|TestCase)[^\]]*\]\s*(?:\[[^\]]*\]\s*)*"
               r"(?:public\s+|private\s+|internal\s+)?(?:async\s+)?(?:void|Task|[\w<>]+)\s+(\w+)\s*\(", re.M),
]


def test_names(text):
    found = []
    for rx in TEST_NAME_RE:
        for mt in rx.finditer(text):
            groups = [g for g in mt.groups() if g]
            if not groups:
                continue
            if rx is TEST_NAME_RE[2]:
                name = groups[-1]
            else:
                name = groups[0]
            found.append((mt.start(), name))
    found.sort()
    out, seen = [], set()
    for _, name in found:
        t = name.strip()
        if re.fullmatch(r"[\w$]+", t):
            t = re.sub(r"^(?:test_?|Test_?)", "", t)
            t = " ".join(split_ident(t))
        else:
            t = re.sub(r"\\[nt\"']", " ", t)
            t = re.sub(r"\$\{[^}]*\}|%[sdvq]|#\{[^}]*\}|\(?(?:[\w.-]+/[\w.-]+)?#\d+\)?,?", " ", t)
            t = re.sub(r"\s+", " ", t).strip(" .:-")
        if len(re.findall(r"[A-Za-z]{2,}", t)) < 1:
            continue
        if t.lower() in seen:
            continue
        seen.add(t.lower())
        out.append(t)
    return out


def test_query(names):
    parts, words = [], 0
    for t in names:
        w = len(t.split())
        if words + w > 60 or len("; ".join(parts + [t])) > 500:
            break
        parts.append(t)
        words += w
        if len(parts) >= 6:
            break
    q = "; ".join(parts)
    if len(_alpha_words(q)) < 3:
        return None
    return q


def _alpha_words(t):
    return [w for w in t.split() if re.search(r"[A-Za-z]", w)]


def mine_tests(gd, snap, tree, src, k):
    """-> (picked [(test_path, gold, query)], stats)"""
    by_stem = {}
    for p in src:
        by_stem.setdefault(os.path.splitext(os.path.basename(p))[0].lower(), []).append(p)
    st = {"test_files": 0, "mapped": 0, "no_names": 0, "dropped_ambiguous_text": 0}
    mapped = []
    for p in sorted(tree):
        if tree[p][1] != "blob" or p in src or os.path.splitext(p)[1].lower() not in CODE_EXT:
            continue
        ts = test_subject(p)
        if ts is None:
            continue
        st["test_files"] += 1
        g = map_test(p, by_stem)
        if g:
            mapped.append((p, g))
    st["mapped"] = len(mapped)
    rows = []
    gold_of = dict(mapped)
    for p, text in iter_blobs(gd, [(p, tree[p][2]) for p, _ in mapped]):
        if text is None:
            continue
        q = test_query(test_names(text))
        if q is None:
            st["no_names"] += 1
            continue
        rows.append((p, gold_of[p], q))
    owners = {}
    for p, g, q in rows:
        owners.setdefault(q.lower(), set()).add(tuple(g))
    keep = [r for r in rows if len(owners[r[2].lower()]) == 1]
    st["dropped_ambiguous_text"] = len(rows) - len(keep)
    st["candidates"] = len(keep)
    return bq.sample_evenly(keep, k), st


# ------------------------------------------------------------------ Lua / Elixir docstrings
# mine_corpus leaves .lua/.ex/.exs out of the docstring kind (other comment syntax).  Same text
# rules here (mine_corpus.doc_text: tag/section lines cut, 6-60 words, no license/boilerplate,
# text in several files dropped, round-robin over files), for:
#   Elixir  @moduledoc / @doc heredocs ("""...""" or ~S"""...""") and one-line @doc "..."
#   Lua     a `--`/`---` comment block directly above `function`, `local function` or `x = function`
#           (LuaCATS `---@param` lines and anything after an @-line are cut)
EX_DOC = re.compile(r'^[ \t]*@(?:moduledoc|doc)[ \t]+(?:~[sS])?"""[ \t]*\n(.*?)\n[ \t]*"""'
                    r'|^[ \t]*@(?:moduledoc|doc)[ \t]+"((?:[^"\\\n]|\\.)+)"', re.M | re.S)
LUA_DEF = re.compile(r"^(?:local[ \t]+)?function[ \t]+[\w.:]+|^(?:local[ \t]+)?[\w.]+[ \t]*=[ \t]*function\b")


def lua_ex_docs(path, text):
    ext = os.path.splitext(path)[1].lower()
    raw = []
    if ext in (".ex", ".exs"):
        for mt in EX_DOC.finditer(text):
            body = mt.group(1) if mt.group(1) is not None else mt.group(2)
            line = text.count("\n", 0, mt.start()) + 1
            raw.append((line, [l.strip() for l in body.splitlines()]))
    elif ext == ".lua":
        lines = text.splitlines()
        i, n = 0, len(lines)
        while i < n:
            s = lines[i].strip()
            if s.startswith("--") and not s.startswith(("--[[", "--]]", "---@", "--@")):
                j, blk = i, []
                while j < n and lines[j].strip().startswith("--") and not lines[j].strip().startswith("--[["):
                    blk.append(re.sub(r"^-+ ?", "", lines[j].strip()))
                    j += 1
                cut = [k for k, l in enumerate(blk) if l.startswith("@")]
                blk = blk[:cut[0]] if cut else blk
                if j < n and LUA_DEF.match(lines[j].strip()):
                    raw.append((j + 1, blk))
                i = max(j, i + 1)
            else:
                i += 1
    seen, out = set(), []
    for line, blk in raw:
        t = m.doc_text(blk)
        if t and t.lower() not in seen:
            seen.add(t.lower())
            out.append((line, t))
    return out


def mine_lua_ex_docs(gd, tree, src, k):
    items = [(p, tree[p][2]) for p in sorted(src)
             if os.path.splitext(p)[1].lower() in (".lua", ".ex", ".exs")]
    st = {"files": len(items), "raw_docs": 0, "dropped_ambiguous_text": 0}
    if not items or k <= 0:
        return [], st
    per_file = {}
    for p, text in iter_blobs(gd, items):
        if text is None:
            continue
        docs = lua_ex_docs(p, text)
        if docs:
            per_file[p] = docs
            st["raw_docs"] += len(docs)
    m.drop_ambiguous(per_file, st)
    st["candidates"] = sum(len(v) for v in per_file.values())
    return round_robin(per_file, k), st


# ------------------------------------------------------------------ rows
def extra_rows(gd, repo, lang, snap, cap_symbols=300, cap_tests=300, cap_docs=0, doc_start=0):
    """symbol and test rows, plus Lua/Elixir docstring rows (at most cap_docs, ids from doc_start)."""
    tree = ls_tree(gd, snap)
    src = {p for p in tree if tree[p][1] == "blob" and is_source(p)}
    tag = repo.replace("/", "+")
    syms, sst = mine_symbols(gd, snap, tree, src, cap_symbols)
    tests, tst = mine_tests(gd, snap, tree, src, cap_tests)
    docs, dst = mine_lua_ex_docs(gd, tree, src, cap_docs)
    rows = []
    for i, (p, line, t) in enumerate(docs):
        g = [normalise(p)]
        rows.append({"id": f"train-{tag}-d{doc_start + i:04d}", "repo": repo, "snapshot": snap, "commit": None,
                     "query": t, "gold": g, "mentions_filename": bq.mentions_filename(t, g),
                     "kind": "docstring", "language": lang})
    for i, (p, name, q) in enumerate(syms):
        g = [normalise(p)]
        rows.append({"id": f"train-{tag}-s{i:04d}", "repo": repo, "snapshot": snap, "commit": None,
                     "query": q, "gold": g, "mentions_filename": bq.mentions_filename(q, g),
                     "kind": "symbol", "language": lang})
    for i, (p, gold, q) in enumerate(tests):
        g = [normalise(x) for x in gold]
        rows.append({"id": f"train-{tag}-t{i:04d}", "repo": repo, "snapshot": snap, "commit": None,
                     "query": q, "gold": g, "mentions_filename": bq.mentions_filename(q, g),
                     "kind": "test", "language": lang})
    return rows, {"symbol_stats": sst, "test_stats": tst, "lua_ex_docstring_stats": dst,
                  "symbol_queries": len(syms), "test_queries": len(tests),
                  "lua_ex_docstring_queries": len(docs)}


if __name__ == "__main__":
    # quick look: extra_kinds.py owner/name [snapshot]
    import json
    repo = sys.argv[1]
    gd = m.git_dir(os.environ.get("MIRROR_ROOT", "/work/.mirror"), repo)
    snap = sys.argv[2] if len(sys.argv) > 2 else m.bq.git(gd, "rev-parse", "HEAD").strip()
    rows, st = extra_rows(gd, repo, "?", snap, cap_docs=300)
    n = int(os.environ.get("SHOW", "12"))
    for kind in ("docstring", "symbol", "test"):
        rs = [r for r in rows if r["kind"] == kind]
        for r in rs[:: max(1, len(rs) // n)]:
            print(kind, "|", r["query"][:150], "->", r["gold"])
    print(json.dumps(st))
