#!/usr/bin/env python3
"""Mine a training corpus for a learned file-retrieval ranker (Python 3 stdlib only).

For every repository in repos.json ({repo, language, head, offset}) the snapshot S is the
first-parent commit OFFSET commits before the recorded HEAD (the oldest first-parent commit
if the history is shorter).  Two kinds of (query -> gold files) rows are mined:

  commit     first-parent commits after S, mined EXACTLY with the practice benchmark's
             build_queries.candidates() / make_query() (1-4 source files, all status M and
             present at S, no merges/sweeps/bots/trailers, descriptive message).  Up to
             --per-repo-commits (800) per repository, evenly spaced (sample_evenly).
  docstring  function/class docstrings or the comment block directly above a definition in
             the source files at S (srcfiles.is_source); 6-60 words, no license headers or
             tool boilerplate; gold = that one file.  Up to --per-repo-docstrings (300) per
             repository, spread evenly over files.

Rows are the practice JSONL format plus "kind" and "language":
  {"id","repo","snapshot","commit","query","gold","mentions_filename","kind","language"}
written to OUT/corpus.jsonl; per-repository statistics go to OUT/stats.json (and, with
--manifest, to a manifest file).  With --trees each snapshot is materialised as
OUT/trees/<owner>+<name>/ via `git archive S | tar -x` (no .git; blobs a mirror lacks are left
out, as eval-dev's prepare.sh does).

The query and source-file rules are imported from the practice set (eval-dev): set EVAL_DEV to
its folder, otherwise ../../shared/eval-dev relative to this script, then /work/shared/eval-dev.
Mirrors are found like prepare.sh does: MIRROR/<owner>+<name>/repo (or .../repo/.git), with a
fallback to MIRROR/<owner>+<name> itself when that is a bare git dir.

Deterministic for the recorded HEADs.  HONESTY RULES: the practice-set repositories are for
validation only and the reserved list is never mined; both are refused below.

Usage: python3 train/mine_corpus.py --mirror /work/.mirror --out /work/train-data
                                    [--repos train/repos.json] [--trees] [--only owner/name,...]
                                    [--manifest train/manifest.json] [--verify-cache N]
"""
import argparse, ast, hashlib, html, json, os, re, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))


def _find_eval_dev():
    cands = [os.environ.get("EVAL_DEV"), os.path.join(HERE, "..", "..", "shared", "eval-dev"),
             "/work/shared/eval-dev"]
    for c in cands:
        if c and os.path.isfile(os.path.join(c, "build_queries.py")):
            return os.path.abspath(c)
    sys.exit("cannot find eval-dev (build_queries.py); set EVAL_DEV")


EVAL_DEV = _find_eval_dev()
sys.path.insert(0, EVAL_DEV)
import build_queries as bq  # noqa: E402  (query rules: candidates, make_query, sample_evenly, ...)
from srcfiles import is_source, normalise  # noqa: E402
import layout  # noqa: E402  (absent_blobs, shared with prepare.sh)

# Never mined: practice sets (validation only) and the reserved list (held out entirely).
PRACTICE = {"vitejs/vite", "sqlalchemy/sqlalchemy", "grpc/grpc-go", "helix-editor/helix",
            "sqlfluff/sqlfluff", "marshmallow-code/marshmallow", "pvlib/pvlib-python",
            "pylint-dev/astroid", "pydicom/pydicom", "pyvista/pyvista"}
RESERVED = set("""abseil/abseil-cpp aio-libs/aiohttp Alamofire/Alamofire apache/commons-lang
astropy/astropy axios/axios Bash-it/bash-it bats-core/bats-core caddyserver/caddy circe/circe
colinhacks/zod curl/curl DapperLib/Dapper django/django echasnovski/mini.nvim elixir-ecto/ecto
elixir-plug/plug encode/httpx encode/starlette expressjs/express fastapi/fastapi
FasterXML/jackson-databind fmtlib/fmt folke/lazy.nvim gin-gonic/gin go-chi/chi google/gson
guzzle/guzzle haskell/aeson Hejsil/zig-clap honojs/hono http4s/http4s JamesNK/Newtonsoft.Json
JetBrains/Exposed jgm/pandoc Kotlin/kotlinx.coroutines ktorio/ktor kubernetes/kubernetes
laravel/framework libuv/libuv matplotlib/matplotlib MinishLab/model2vec mwaskom/seaborn
nestjs/nest neuecc/MessagePack-CSharp nginx/nginx nlohmann/json nvim-telescope/telescope.nvim
nvm-sh/nvm pallets/click pallets/flask phoenixframework/phoenix psf/requests pydantic/pydantic
pydata/xarray pylint-dev/pylint pytest-dev/pytest python-poetry/poetry rack/rack rails/rails
redis/redis reduxjs/redux rust-lang/cargo scikit-learn/scikit-learn Seldaek/monolog
serde-rs/serde sinatra/sinatra spf13/cobra sphinx-doc/sphinx sympy/sympy tokio-rs/axum
tokio-rs/tokio trpc/trpc typelevel/cats vapor/vapor vercel/next.js vitest-dev/vitest
xmonad/xmonad ziglang/zig zigtools/zls""".split())
FORBIDDEN = {r.lower() for r in PRACTICE | RESERVED}
FORBIDDEN_NAMES = {r.split("/")[1].lower() for r in FORBIDDEN}


def git_dir(mirror, repo):
    """prepare.sh's rule (MIRROR/<owner>+<name>/repo[/.git]), then MIRROR/<owner>+<name>."""
    base = os.path.join(mirror, repo.replace("/", "+"))
    for d in (os.path.join(base, "repo", ".git"), os.path.join(base, "repo"), base):
        if os.path.isfile(os.path.join(d, "HEAD")) and os.path.isdir(os.path.join(d, "objects")):
            return d
    return None


def run_git(gd, args, inp=None):
    r = subprocess.run(["git", "--git-dir", gd, *args], input=inp, capture_output=True)
    if r.returncode:
        raise RuntimeError(f"git {' '.join(args[:4])}: {r.stderr.decode(errors='replace').strip()}")
    return r.stdout


# ------------------------------------------------------------------ batched git for candidates()
def _text(b):
    """bytes -> str exactly as subprocess.run(text=True, errors="replace") gives it
    (UTF-8 decode, universal newlines)."""
    return b.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


class GitCache:
    """Answers the exact git calls build_queries.candidates() makes, from three batched git
    processes per repository instead of three processes per commit.  Every answer is the
    byte-identical string the single call would print (checked with --verify-cache); any
    other call falls through to build_queries' own git()."""

    def __init__(self, real_git):
        self.real = real_git
        self.parents, self.diffs, self.msgs = {}, {}, {}

    def load(self, gd, commits):
        if not commits:
            return
        inp = ("\n".join(commits) + "\n").encode()
        # parents + raw message per commit, in one pass
        out = run_git(gd, ["log", "--no-walk=unsorted", "--stdin", "--format=%x00%x01%H %P%x02%B"], inp)
        for rec in _text(out).split("\0\1")[1:]:
            head, _, body = rec.partition("\2")
            ids = head.split()
            self.parents[ids[0]] = ids[1:]
            self.msgs[ids[0]] = body  # includes tformat's terminating newline, as log -1 prints it
        single = [c for c in commits if len(self.parents.get(c, ())) == 1]
        if single:
            out = run_git(gd, ["diff-tree", "--stdin", "--always", "-r", "-M", "--name-status"],
                          ("\n".join(single) + "\n").encode())
            cur, lines = None, []
            want = set(single)
            for line in _text(out).split("\n"):
                if re.fullmatch(r"[0-9a-f]{40}", line) and line in want and line not in self.diffs:
                    if cur is not None:
                        self.diffs[cur] = "".join(l + "\n" for l in lines if l)
                    cur, lines = line, []
                else:
                    lines.append(line)
            if cur is not None:
                self.diffs[cur] = "".join(l + "\n" for l in lines if l)

    def __call__(self, gd, *args):
        a = list(args)
        if a[:3] == ["rev-list", "--parents", "-n"] and len(a) == 5 and a[3] == "1" and a[4] in self.parents:
            return " ".join([a[4]] + self.parents[a[4]]) + "\n"
        if (a[:5] == ["diff-tree", "-r", "-M", "--no-commit-id", "--name-status"] and len(a) == 7
                and a[6] in self.diffs and self.parents.get(a[6]) == [a[5]]):
            return self.diffs[a[6]]
        if a[:3] == ["log", "-1", "--format=%B"] and len(a) == 4 and a[3] in self.msgs:
            return self.msgs[a[3]]
        return self.real(gd, *args)


# ------------------------------------------------------------------ docstring / comment mining
MIN_W, MAX_W, MAX_Q = 6, 60, 500
LICENSE = re.compile(r"copyright|licen[cs]e|spdx|all rights reserved|permission is hereby|"
                     r"warranty|\(c\)\s*\d{4}", re.I)
BOILER = re.compile(r"\b(?:todo|fixme|xxx|hack|eslint|prettier|tslint|jshint|istanbul|c8|nolint|"
                    r"noqa|pylint|mypy|pyright|noinspection|resharper|rubocop|phpcs|swiftlint|"
                    r"clang-format|nosec|pragma|inheritdoc)\b|@ts-|type:\s*ignore|"
                    r"auto-?generated|generated by|do not (?:edit|modify)|"
                    r"^\s*(?:deprecated|internal|private|public api|see above|see below)\b", re.I)
CONTROL = re.compile(r"^(?:if|else|for|foreach|while|do|switch|case|default|return|try|catch|"
                     r"finally|throw|break|continue|goto|yield|await|assert|import|from|using|"
                     r"package|namespace|#include|#import|#define|#if|#else|#endif|use|require|"
                     r"include|extern\s+crate|mod\s+\w+\s*;)\b")
DEF_KW = re.compile(
    r"^(?:export\s+)?(?:default\s+)?(?:pub(?:\([\w:]+\))?\s+)?(?:@\w+\s+)*"
    r"(?:public|private|protected|internal|static|final|abstract|async|override|open|inline|"
    r"virtual|const|constexpr|unsafe|extern|sealed|partial|readonly|suspend|data|fileprivate|"
    r"mutating|class|struct|enum|interface|trait|impl|fn|func|function|def|type|typedef|object|"
    r"protocol|extension|template|let|var|val|fun|init|constructor|macro_rules!|union|record|"
    r"operator|convenience|required|lazy|weak|dynamic|declare|module|subscript|associatedtype|"
    r"actor|companion|annotation|value|lateinit|tailrec|noexcept|explicit|friend|"
    r"get|set|deinit|typealias|alias|attr_\w+|defmacro)\b")
CALL_DEF = re.compile(r"^[A-Za-z_~][\w\s\*&:<>,~\[\]\.]*\s*\(")   # C/C++/JS/PHP signatures, methods
ANNOT = re.compile(r"^(?:#\[|#!\[|@[A-Za-z_]|\[[A-Z][\w.]*(?:\(|\]))")  # attributes / annotations / decorators
TAG_LINE = re.compile(r"^\s*(?:[@\\](?:param|returns?|throws?|exception|see|since|deprecated|"
                      r"author|version|example|type|typedef|template|property|prop|brief|"
                      r"note|todo|link|var|internal|api|psalm|phpstan|method|callback|"
                      r"implements|extends|override|access|private|public|protected|"
                      r"default|memberof|name|function|class|module|abstract|inheritdoc|"
                      r"yield|yields|async|file|overload|tparam|pre|post|retval|ingroup|"
                      r"defgroup|code|endcode|sa|attention|warning|category)\b|"
                      r"(?:args|arguments|parameters|params|returns?|raises|yields|examples?|"
                      r"example usage|usage|attributes|notes?|see also|references|warnings?|"
                      r"keyword arguments|kwargs|throws|safety|panics|errors)\s*:?\s*$|"
                      r":(?:param|type|returns?|rtype|raises?)\b|>>>|\.\. |```|-{3,}|={3,}|"
                      r"#{1,6}\s|- parameters?:?|- returns?:|- throws:)", re.I)


def _clean_inline(t):
    m = re.search(r"<summary>(.*?)</summary>", t, re.S)               # C# XML doc: summary only
    if m:
        t = m.group(1)
    t = re.split(r"<(?:param|returns|typeparam|exception|example|remarks)\b", t)[0]
    t = re.sub(r"\{@(?:link|linkplain|code|literal|see)\s+([^}]*)\}", r"\1", t)
    t = re.sub(r"<(?:see|seealso|paramref|typeparamref)\s+\w+=\"([^\"]*)\"\s*/>", r"\1", t)
    t = re.sub(r"</?[A-Za-z][^>]*>", " ", t)                      # <p>, <code>, <c>, ...
    t = html.unescape(t)
    t = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", t)              # [text](url)
    t = re.sub(r"\[`([^\]`]+)`\](?!\()", r"\1", t)               # [`Foo`] intra-doc links
    t = t.replace("`", "")
    t = re.sub(r"https?://\S+", " ", t)
    return re.sub(r"\s+", " ", t).strip()


def _words(t):
    return [w for w in t.split() if re.search(r"[A-Za-z]", w)]


def _looks_like_code(lines):
    if not lines:
        return False
    codey = sum(1 for l in lines if re.search(r"[;{}]\s*$|^\s*(?:return|if|for|while|import|"
                                               r"var|let|const|def|func|fn)\b.*[=(]|==|=>|->\s*\w", l))
    return codey * 3 > len(lines)


def doc_text(lines):
    """Comment/doc lines (markers already stripped) -> query text or None."""
    desc = []
    for l in lines:
        if TAG_LINE.match(l):
            break
        desc.append(l.rstrip())
    while desc and not desc[0].strip():
        desc.pop(0)
    if not desc or _looks_like_code([l for l in desc if l.strip()]):
        return None
    raw = "\n".join(desc)
    if LICENSE.search(raw) or BOILER.search(raw):
        return None
    paras = [p for p in re.split(r"\n\s*\n", raw) if p.strip()]
    text = _clean_inline(" ".join(paras))
    if len(_words(text)) > MAX_W and paras:
        text = _clean_inline(paras[0])
    n = len(_words(text))
    if not MIN_W <= n <= MAX_W or len(text) > MAX_Q:
        return None
    if not re.search(r"[A-Za-z]{3}", text):
        return None
    return text


def _py_docs(src):
    out = []
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            d = ast.get_docstring(node, clean=True)
            if d:
                out.append((node.lineno, d.splitlines()))
    return out


def _hash_block_docs(lines, def_re, skip_re):
    """`#` comment blocks directly above a definition (decorators/annotations may sit between)."""
    out, i, n = [], 0, len(lines)
    while i < n:
        s = lines[i].strip()
        if s.startswith("#") and not s.startswith(("#!", "#[", "#!/")) and not re.match(r"#\s*-\*-", s):
            j, blk = i, []
            while j < n and lines[j].strip().startswith("#") and not lines[j].strip().startswith("#["):
                blk.append(re.sub(r"^#+ ?", "", lines[j].strip()))
                j += 1
            k = j
            while k < n and k - j < 3 and skip_re.match(lines[k].strip()):
                k += 1
            if k < n and def_re.match(lines[k].strip()):
                out.append((k + 1, blk))
            i = j
        else:
            i += 1
    return out


PY_DEF = re.compile(r"^(?:async\s+)?(?:def|class)\s+\w")
PY_SKIP = re.compile(r"^@")
RB_DEF = re.compile(r"^(?:def|class|module)\s+[\w:.]|^(?:attr_\w+|define_method|scope|delegate)\b")
RB_SKIP = re.compile(r"^(?:private|protected|public)\s*$")


def _clike_docs(lines):
    out, i, n = [], 0, len(lines)
    while i < n:
        s = lines[i].strip()
        blk, j = None, i
        if s.startswith("/**") and not s.startswith("/***"):
            body, j = [], i
            first = s[3:]
            while True:
                t = lines[j].strip() if j > i else first
                end = "*/" in t
                t = t.split("*/")[0]
                t = re.sub(r"^\*+ ?", "", t)
                body.append(t)
                j += 1
                if end or j >= n or j - i > 200:
                    break
            blk = body
        elif s.startswith("//") and not s.startswith(("//!", "////", "// ===", "//--", "//#", "//go:",
                                                       "// +build", "//nolint", "// eslint")):
            body, j = [], i
            while j < n:
                t = lines[j].strip()
                if not t.startswith("//") or t.startswith("//!"):
                    break
                body.append(re.sub(r"^//+ ?", "", t))
                j += 1
            blk = body
        if blk is None:
            i += 1
            continue
        k = j
        while k < n and k - j < 3 and ANNOT.match(lines[k].strip()):
            k += 1
        nxt = lines[k].strip() if k < n else ""
        if nxt and not nxt.startswith(("//", "/*", "*", "}", ")")) and not CONTROL.match(nxt) and \
                (DEF_KW.match(nxt) or (CALL_DEF.match(nxt) and not nxt.endswith(";")) or
                 re.match(r"^[\w$]+\s*[:=]\s*(?:async\s+)?(?:function|\(|[\w$]+\s*=>)", nxt)):
            out.append((k + 1, blk))
        i = max(j, i + 1)
    return out


PY_EXT = {".py", ".pyi"}
RB_EXT = {".rb"}
SKIP_EXT = {".lua", ".ex", ".exs"}   # other comment syntaxes: not mined


def file_docs(path, text):
    ext = os.path.splitext(path)[1].lower()
    if ext in SKIP_EXT:
        return []
    lines = text.splitlines()
    if ext in PY_EXT:
        raw = _py_docs(text) or []
        raw += _hash_block_docs(lines, PY_DEF, PY_SKIP)
    elif ext in RB_EXT:
        raw = _hash_block_docs(lines, RB_DEF, RB_SKIP)
    else:
        raw = _clike_docs(lines)
    seen, out = set(), []
    for line, blk in sorted(raw, key=lambda x: x[0]):
        t = doc_text(blk)
        if t and t.lower() not in seen:
            seen.add(t.lower())
            out.append((line, t))
    return out


def drop_ambiguous(per_file, st):
    """A text that appears in several files has no single gold file: drop it (in place; counted in st)."""
    owners = {}
    for p, docs in per_file.items():
        for _, t in docs:
            owners.setdefault(t.lower(), set()).add(p)
    for p in list(per_file):
        keep = [(l, t) for l, t in per_file[p] if len(owners[t.lower()]) == 1]
        st["dropped_ambiguous_text"] += len(per_file[p]) - len(keep)
        if keep:
            per_file[p] = keep
        else:
            del per_file[p]


def mine_docstrings(gd, snap, src_paths, k):
    """-> (picked [(path, line, text)], stats)"""
    ls = run_git(gd, ["ls-tree", "-r", "-z", snap]).split(b"\0")
    blobs = {}
    for e in ls:
        if not e:
            continue
        meta, p = e.split(b"\t", 1)
        m = meta.split()
        p = p.decode("utf-8", "surrogateescape")
        if m[1] == b"blob" and p in src_paths:
            blobs[p] = m[2].decode()
    paths = sorted(blobs)
    per_file, st = {}, {"files_read": 0, "files_skipped_large_or_binary": 0, "files_with_docs": 0,
                        "raw_docs": 0, "dropped_ambiguous_text": 0}
    if paths:
        out = run_git(gd, ["cat-file", "--batch"], ("\n".join(blobs[p] for p in paths) + "\n").encode())
        pos = 0
        for p in paths:
            nl = out.index(b"\n", pos)
            hdr = out[pos:nl].split()
            if len(hdr) < 3 or hdr[1] == b"missing":
                pos = nl + 1
                continue
            size = int(hdr[2])
            data = out[nl + 1: nl + 1 + size]
            pos = nl + 1 + size + 1
            if size > 400_000 or b"\0" in data[:8000]:
                st["files_skipped_large_or_binary"] += 1
                continue
            st["files_read"] += 1
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = data.decode("latin-1")
            if max((len(l) for l in text[:20000].splitlines()), default=0) > 2000:
                st["files_skipped_large_or_binary"] += 1   # minified / generated
                continue
            docs = file_docs(p, text)
            if docs:
                per_file[p] = docs
                st["raw_docs"] += len(docs)
    drop_ambiguous(per_file, st)
    st["files_with_docs"] = len(per_file)
    st["candidates"] = sum(len(v) for v in per_file.values())
    # spread evenly over files: round r takes the r-th item (in a fixed hashed order) of every
    # file that has one; the round that overflows k is thinned with sample_evenly
    order = {p: sorted(v, key=lambda lt: hashlib.sha1(f"{p}:{lt[0]}".encode()).hexdigest())
             for p, v in per_file.items()}
    picked, r = [], 0
    files = sorted(order)
    while len(picked) < k:
        rnd = [(p, *order[p][r]) for p in files if len(order[p]) > r]
        if not rnd:
            break
        if len(picked) + len(rnd) > k:
            rnd = bq.sample_evenly(rnd, k - len(picked))
        picked.extend(rnd)
        r += 1
    picked.sort(key=lambda x: (x[0], x[1]))
    return picked, st


# ------------------------------------------------------------------ trees
def materialise(gd, snap, dest):
    if os.path.isdir(dest) and os.path.isfile(dest + ".snapshot") and open(dest + ".snapshot").read().strip() == snap:
        return "already there"
    subprocess.run(["rm", "-rf", dest, dest + ".snapshot"], check=True)
    os.makedirs(dest)
    absent = layout.absent_blobs(gd, snap)
    excl = [f":(exclude,literal){p}" for p in absent]
    spec = ["--", ".", *excl] if excl else []
    ar = subprocess.Popen(["git", "--git-dir", gd, "archive", "--format=tar", snap, *spec],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    subprocess.run(["tar", "-x", "-C", dest], stdin=ar.stdout, check=True)
    ar.stdout.close()
    if ar.wait():
        raise RuntimeError(f"git archive {snap} failed")
    with open(dest + ".snapshot", "w") as f:
        f.write(snap + "\n")
    return f"extracted ({len(absent)} absent blobs left out)" if absent else "extracted"


# ------------------------------------------------------------------ main
def mine_repo(args, ent, verify=0):
    repo, lang, head, off = ent["repo"], ent["language"], ent["head"], int(ent["offset"])
    if repo.lower() in FORBIDDEN or repo.split("/")[1].lower() in FORBIDDEN_NAMES:
        raise SystemExit(f"REFUSED: {repo} is a practice-set or reserved repository (or shares its name)")
    gd = git_dir(args.mirror, repo)
    if gd is None:
        raise RuntimeError(f"no mirror for {repo} under {args.mirror} (fetch github:{repo})")
    t0 = time.time()
    fp = bq.git(gd, "rev-list", "--first-parent", head).split()
    off = min(off, len(fp) - 1)
    snap = fp[off]
    after = list(reversed(fp[:off]))
    cache = GitCache(bq.git)
    cache.load(gd, after)
    if verify:
        real = cache.real
        for c in bq.sample_evenly(after, verify):
            ps = real(gd, "rev-list", "--parents", "-n", "1", c)
            assert cache(gd, "rev-list", "--parents", "-n", "1", c) == ps, (repo, c, "parents")
            assert cache(gd, "log", "-1", "--format=%B", c) == real(gd, "log", "-1", "--format=%B", c), (repo, c, "msg")
            p = ps.split()[1:]
            if len(p) == 1:
                a = ("diff-tree", "-r", "-M", "--no-commit-id", "--name-status", p[0], c)
                assert cache(gd, *a) == real(gd, *a), (repo, c, "diff")
    orig = bq.git
    bq.git = cache
    try:
        cands, reasons = bq.candidates(gd, snap, after)
    finally:
        bq.git = orig
    picked = bq.sample_evenly(cands, args.per_repo_commits)
    at_snap = bq.git(gd, "ls-tree", "-r", "--name-only", snap).splitlines()
    src = [p for p in at_snap if is_source(p)]
    docs, dst = mine_docstrings(gd, snap, set(src), args.per_repo_docstrings)
    tag = repo.replace("/", "+")
    rows = []
    for i, c in enumerate(picked):
        rows.append({"id": f"train-{tag}-c{i:04d}", "repo": repo, "snapshot": snap, "commit": c["commit"],
                     "query": c["query"], "gold": c["gold"],
                     "mentions_filename": bq.mentions_filename(c["query"], c["gold"]),
                     "kind": "commit", "language": lang})
    for i, (p, line, t) in enumerate(docs):
        g = [normalise(p)]
        rows.append({"id": f"train-{tag}-d{i:04d}", "repo": repo, "snapshot": snap, "commit": None,
                     "query": t, "gold": g, "mentions_filename": bq.mentions_filename(t, g),
                     "kind": "docstring", "language": lang})
    mined_s = time.time() - t0
    tree = None
    if args.trees:
        tree = materialise(gd, snap, os.path.join(args.out, "trees", tag))
    st = {"repo": repo, "language": lang, "head": head, "offset": off,
          "snapshot": snap, "snapshot_date": bq.git(gd, "log", "-1", "--format=%cs", snap).strip(),
          "first_parent_commits": len(fp), "commits_after": len(after),
          "source_files_at_snapshot": len(src), "commit_candidates": len(cands),
          "commit_queries": len(picked), "docstring_candidates": dst["candidates"],
          "docstring_queries": len(docs),
          "mentions_filename": sum(r["mentions_filename"] for r in rows),
          "rejections": dict(sorted(reasons.items())), "docstring_stats": dst,
          "mine_seconds": round(mined_s, 1)}
    return rows, st, tree


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror", default=os.environ.get("MIRROR_ROOT", "/work/.mirror"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--repos", default=os.path.join(HERE, "repos.json"))
    ap.add_argument("--trees", action="store_true", help="materialise OUT/trees/<owner>+<name>/")
    ap.add_argument("--only", default=None, help="comma-separated owner/name subset")
    ap.add_argument("--manifest", default=None, help="also write the manifest here")
    ap.add_argument("--per-repo-commits", type=int, default=800)
    ap.add_argument("--per-repo-docstrings", type=int, default=300)
    ap.add_argument("--verify-cache", type=int, default=0, metavar="N",
                    help="check N commits per repo: batched git answers == single git calls")
    args = ap.parse_args()
    with open(args.repos) as f:
        ents = json.load(f)
    if args.only:
        keep = set(args.only.split(","))
        ents = [e for e in ents if e["repo"] in keep]
    for e in ents:  # refuse before doing any work
        if e["repo"].lower() in FORBIDDEN or e["repo"].split("/")[1].lower() in FORBIDDEN_NAMES:
            sys.exit(f"REFUSED: {e['repo']} is a practice-set or reserved repository (or shares its name)")
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    all_rows, stats, failed = [], [], []
    for e in ents:
        try:
            rows, st, tree = mine_repo(args, e, args.verify_cache)
        except (RuntimeError, AssertionError) as ex:
            print(f"FAILED {e['repo']}: {ex}", file=sys.stderr)
            failed.append({"repo": e["repo"], "error": str(ex)})
            continue
        all_rows += rows
        stats.append(st)
        print(f"{st['repo']:32s} {st['language']:10s} src={st['source_files_at_snapshot']:5d} "
              f"commit={st['commit_queries']:4d}/{st['commit_candidates']:4d} "
              f"doc={st['docstring_queries']:3d}/{st['docstring_candidates']:5d} "
              f"{st['mine_seconds']:6.1f}s {tree or ''}", file=sys.stderr, flush=True)
    tmp = os.path.join(args.out, "corpus.jsonl.tmp")
    with open(tmp, "w") as f:
        for r in all_rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(tmp, os.path.join(args.out, "corpus.jsonl"))
    langs = sorted({s["language"] for s in stats})
    totals = {"repositories": len(stats), "languages": len(langs), "language_list": langs,
              "commit_queries": sum(s["commit_queries"] for s in stats),
              "docstring_queries": sum(s["docstring_queries"] for s in stats),
              "source_files_at_snapshots": sum(s["source_files_at_snapshot"] for s in stats),
              "mentions_filename": sum(s["mentions_filename"] for s in stats),
              "per_language": {l: {"repositories": sum(1 for s in stats if s["language"] == l),
                                   "commit_queries": sum(s["commit_queries"] for s in stats if s["language"] == l),
                                   "docstring_queries": sum(s["docstring_queries"] for s in stats if s["language"] == l)}
                               for l in langs},
              "wall_seconds": round(time.time() - t0, 1)}
    totals["queries"] = totals["commit_queries"] + totals["docstring_queries"]
    man = {"corpus": os.path.join(os.path.abspath(args.out), "corpus.jsonl"),
           "eval_dev": EVAL_DEV, "rules": "build_queries.candidates/make_query/sample_evenly, srcfiles.is_source",
           "per_repo_commits": args.per_repo_commits, "per_repo_docstrings": args.per_repo_docstrings,
           "excluded": {"practice_sets_validation_only": sorted(PRACTICE), "reserved_never_used": sorted(RESERVED)},
           "totals": totals, "failed": failed, "repositories": stats}
    for p in [os.path.join(args.out, "stats.json")] + ([args.manifest] if args.manifest else []):
        with open(p, "w") as f:
            json.dump(man, f, indent=1)
            f.write("\n")
    print(json.dumps({k: v for k, v in totals.items() if k != "per_language"}), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
