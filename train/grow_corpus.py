#!/usr/bin/env python3
"""Resumable driver for the v2 training corpus (stdlib only).

For every entry of repos-v2.json ({repo, language, head, offset, first_parent_commits}) whose
mirror exists (mine_corpus.git_dir) and that is not mined yet, in list order:
  1. fills `head` (the mirror's HEAD) and `offset` (pick_offsets_v2.pick: pick_offsets.py's rule)
     when they are missing, and writes them back into repos-v2.json;
  2. mines it with mine_corpus.mine_repo (kinds "commit" and "docstring", exactly v1's rules) and
     extra_kinds.extra_rows (kinds "symbol" and "test");
  3. writes OUT/repos/<owner>+<name>.jsonl (+ .stats.json) through a temp file and a rename, so a
     kill at any moment loses at most the repository being mined;
  4. with --trees (the default) materialises S as OUT/trees/<owner>+<name>/ (`git archive S | tar -x`,
     mine_corpus.materialise) while the disk holding OUT has more than --min-free-gb free; trees
     skipped for lack of room are made by a later run once there is room.
OUT/progress.json records each repository's state (done / failed, with the error); failed ones are
not retried unless --retry-failed.  At the end OUT/corpus.jsonl is the concatenation of the
per-repository files in repos-v2.json order and OUT/stats.json holds the counts per language and
kind, per repository, the failures and the entries that have no mirror yet.

The practice-set and reserved repositories (mine_corpus.PRACTICE / RESERVED, or any repository with
the same name) are refused, never mined.

Usage: nice -n 19 python3 train/grow_corpus.py [--repos train/repos-v2.json] [--out /work/train-data/v2]
           [--mirror /work/.mirror] [--no-trees] [--min-free-gb 30] [--only owner/name,...]
           [--retry-failed] [--max-repos N] [--finalize-only]
"""
import argparse, json, os, re, shutil, subprocess, sys, time, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mine_corpus as m  # noqa: E402
import extra_kinds as xk  # noqa: E402
import pick_offsets_v2 as po  # noqa: E402

KINDS = ["commit", "docstring", "symbol", "test"]


# ------------------------------------------------------------------ mirrors that lack blobs
# A snapshot lacks files of 4 MiB and more, and `diff-tree -M` must read blobs for rename
# detection, so one such commit made the whole batched diff-tree (and v1's per-commit call) fail
# ("fatal: unable to read <sha>"): v1 dropped google/guice, coil and koin for it.  Here the batch is
# bisected down to the commits whose diff cannot be read; only those are left out of candidates()
# (counted as a rejection reason).  Every other commit gets the same exact answer as before, and a
# mirror that lacks nothing is mined exactly as mine_corpus.mine_repo does.
class RobustCache(m.GitCache):
    def __init__(self, real_git):
        super().__init__(real_git)
        self.bad = set()

    def load(self, gd, commits):
        try:
            super().load(gd, commits)
        except RuntimeError as ex:
            if "unable to read" not in str(ex) or not commits:
                raise
            if len(commits) == 1:
                self.bad.add(commits[0])
                return
            mid = len(commits) // 2
            self.load(gd, commits[:mid])
            self.load(gd, commits[mid:])


_candidates = m.bq.candidates


def candidates_readable(gd, snap, commits):
    bad = getattr(m.bq.git, "bad", ())
    keep = [c for c in commits if c not in bad]
    out, reasons = _candidates(gd, snap, keep)
    if len(keep) != len(commits):
        reasons["diff unreadable (a blob the mirror lacks)"] = len(commits) - len(keep)
    return out, reasons


m.GitCache = RobustCache              # used by mine_corpus.mine_repo and pick_offsets_v2.pick
m.bq.candidates = candidates_readable


# Vendored third-party code is not the repository's own, and a copy can be code of a reserved
# project (pip's _vendor/requests is psf/requests, CMake's Utilities/cmlibuv is libuv, cmcurl is
# curl).  Rows whose gold has a file in such a folder are dropped, every kind (counted in
# stats "dropped_vendored").  srcfiles.is_source already leaves out vendor/, third_party/, deps/,
# external/; these are the spellings it lets through.
VENDORED_DIR = re.compile(r"^(?:_vendor|_vendored|vendored|bundled|third[-_]?party(?:[-_]?libs)?|"
                          r"3rd[-_]?party|extern|externals)$", re.I)
VENDORED_PREFIX = {"Kitware/CMake": re.compile(r"^Utilities/cm[^/]*/")}


def vendored(repo, path):
    if any(VENDORED_DIR.match(p) for p in path.split("/")[:-1]):
        return True
    rx = VENDORED_PREFIX.get(repo)
    return bool(rx and rx.match(path))


# `git archive` (how the trees are made, as eval-dev's prepare.sh makes the benchmark's) leaves out
# paths that the snapshot's .gitattributes mark `export-ignore` (PHP packages often mark tests,
# demos and dev files so).  A row whose gold file is not in the tree cannot be answered there, so it
# is dropped (stats "dropped_export_ignore").  The archive is listed only when some .gitattributes
# at S mentions export-ignore.
def export_ignored(gd, snap):
    """-> set of blob paths at snap that `git archive snap` leaves out (export-ignore)."""
    import tarfile
    ls = m.run_git(gd, ["ls-tree", "-r", "-z", snap]).split(b"\0")
    blobs, attrs = set(), []
    for e in ls:
        if not e:
            continue
        meta, p = e.split(b"\t", 1)
        mode, typ, sha = meta.decode().split()
        p = p.decode("utf-8", "surrogateescape")
        if typ == "blob":
            blobs.add(p)
            if p == ".gitattributes" or p.endswith("/.gitattributes"):
                attrs.append(sha)
    if not attrs:
        return set()
    data = m.run_git(gd, ["cat-file", "--batch"], ("\n".join(attrs) + "\n").encode())
    if b"export-ignore" not in data:
        return set()
    absent = m.layout.absent_blobs(gd, snap)
    spec = ["--", ".", *[f":(exclude,literal){p}" for p in absent]] if absent else []
    ar = subprocess.Popen(["git", "--git-dir", gd, "archive", "--format=tar", snap, *spec],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    kept = set()
    with tarfile.open(fileobj=ar.stdout, mode="r|") as tf:
        for ti in tf:
            if not ti.isdir():
                kept.add(ti.name)
    ar.wait()
    return blobs - kept - set(absent)


def forbidden(repo):
    return repo.lower() in m.FORBIDDEN or repo.split("/")[1].lower() in m.FORBIDDEN_NAMES


def dump_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


def free_gb(path):
    return shutil.disk_usage(path).free / 2**30


def update_entry(repos_path, repo, fields):
    """re-read repos-v2.json and set fields on one entry (the list may have grown meanwhile)."""
    ents = json.load(open(repos_path))
    for e in ents:
        if e["repo"] == repo:
            e.update(fields)
    dump_json(repos_path, ents)


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


def mine_one(args, e, gd, tag):
    t0 = time.time()
    fields = {}
    if not e.get("head"):
        fields["head"] = m.bq.git(gd, "rev-parse", "HEAD").strip()
        e["head"] = fields["head"]
    if e.get("offset") is None:
        off, res, n = po.pick(gd, e["head"])
        fields.update(offset=off, first_parent_commits=n, offset_candidates={str(k): v for k, v in res.items()})
        e.update(fields)
        log(f"  offset {e['repo']}: {res} -> {off}")
    if fields:
        update_entry(args.repos, e["repo"], fields)
    rows, st, _ = m.mine_repo(args, e)
    ndoc = sum(1 for r in rows if r["kind"] == "docstring")
    xrows, xst = xk.extra_rows(gd, e["repo"], e["language"], st["snapshot"],
                               args.per_repo_symbols, args.per_repo_tests,
                               cap_docs=args.per_repo_docstrings - ndoc, doc_start=ndoc)
    rows += xrows
    st.update(xst)
    n0 = len(rows)
    rows = [r for r in rows if not any(vendored(e["repo"], g) for g in r["gold"])]
    st["dropped_vendored"] = n0 - len(rows)
    ign = export_ignored(gd, st["snapshot"])
    n0 = len(rows)
    if ign:
        rows = [r for r in rows if not any(g in ign for g in r["gold"])]
    st["export_ignored_paths"] = len(ign)
    st["dropped_export_ignore"] = n0 - len(rows)
    st["kinds"] = {k: sum(1 for r in rows if r["kind"] == k) for k in KINDS}
    st["rows"] = len(rows)
    st["mine_seconds"] = round(time.time() - t0, 1)
    d = os.path.join(args.out, "repos")
    dump_json(os.path.join(d, tag + ".stats.json"), st)
    tmp = os.path.join(d, tag + ".jsonl.tmp")
    with open(tmp, "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(tmp, os.path.join(d, tag + ".jsonl"))    # the "done" marker
    return st


def tree_state(out, tag, snap):
    dest = os.path.join(out, "trees", tag)
    return os.path.isdir(dest) and os.path.isfile(dest + ".snapshot") and \
        open(dest + ".snapshot").read().strip() == snap


def make_tree(args, gd, tag, snap):
    if not args.trees or tree_state(args.out, tag, snap):
        return None
    if free_gb(args.out) < args.min_free_gb:
        return f"skipped (free disk {free_gb(args.out):.1f} GB < {args.min_free_gb})"
    os.makedirs(os.path.join(args.out, "trees"), exist_ok=True)
    return m.materialise(gd, snap, os.path.join(args.out, "trees", tag))


def finalize(args, ents, progress):
    d = os.path.join(args.out, "repos")
    tmp = os.path.join(args.out, "corpus.jsonl.tmp")
    stats, per_lang, kinds, no_mirror = [], {}, {k: 0 for k in KINDS}, []
    mentions = 0
    with open(tmp, "w") as f:
        for e in ents:
            tag = e["repo"].replace("/", "+")
            p = os.path.join(d, tag + ".jsonl")
            if not os.path.exists(p):
                if m.git_dir(args.mirror, e["repo"]) is None and e["repo"] not in progress.get("failed", {}):
                    no_mirror.append(e["repo"])
                continue
            st = json.load(open(os.path.join(d, tag + ".stats.json")))
            st["tree"] = tree_state(args.out, tag, st["snapshot"])
            stats.append(st)
            with open(p) as g:
                for line in g:
                    f.write(line)
            L = per_lang.setdefault(e["language"], {"repositories": 0, **{k: 0 for k in KINDS}, "rows": 0})
            L["repositories"] += 1
            for k in KINDS:
                L[k] += st["kinds"].get(k, 0)
                kinds[k] += st["kinds"].get(k, 0)
            L["rows"] += st["rows"]
            mentions += st.get("mentions_filename", 0)
    os.replace(tmp, os.path.join(args.out, "corpus.jsonl"))
    totals = {"repositories_listed": len(ents), "repositories_mined": len(stats),
              "languages": len(per_lang), "rows": sum(kinds.values()), "kinds": kinds,
              "trees": sum(1 for s in stats if s["tree"]),
              "free_disk_gb": round(free_gb(args.out), 1)}
    out = {"corpus": os.path.join(os.path.abspath(args.out), "corpus.jsonl"),
           "eval_dev": m.EVAL_DEV,
           "caps": {"commit": args.per_repo_commits, "docstring": args.per_repo_docstrings,
                    "symbol": args.per_repo_symbols, "test": args.per_repo_tests},
           "totals": totals, "per_language": dict(sorted(per_lang.items())),
           "failed": progress.get("failed", {}), "no_mirror_yet": no_mirror,
           "excluded": {"practice_sets_validation_only": sorted(m.PRACTICE),
                        "reserved_never_used": sorted(m.RESERVED)},
           "repositories": stats}
    dump_json(os.path.join(args.out, "stats.json"), out)
    return totals


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repos", default=os.path.join(HERE, "repos-v2.json"))
    ap.add_argument("--out", default="/work/train-data/v2")
    ap.add_argument("--mirror", default=os.environ.get("MIRROR_ROOT", "/work/.mirror"))
    ap.add_argument("--no-trees", dest="trees", action="store_false")
    ap.add_argument("--min-free-gb", type=float, default=30.0)
    ap.add_argument("--only", default=None)
    ap.add_argument("--retry-failed", action="store_true")
    ap.add_argument("--max-repos", type=int, default=0, help="stop after mining N repositories")
    ap.add_argument("--finalize-only", action="store_true")
    ap.add_argument("--per-repo-commits", type=int, default=800)
    ap.add_argument("--per-repo-docstrings", type=int, default=300)
    ap.add_argument("--per-repo-symbols", type=int, default=300)
    ap.add_argument("--per-repo-tests", type=int, default=300)
    args = ap.parse_args()
    os.makedirs(os.path.join(args.out, "repos"), exist_ok=True)
    prog_path = os.path.join(args.out, "progress.json")
    progress = json.load(open(prog_path)) if os.path.exists(prog_path) else {"done": {}, "failed": {}}
    ents = json.load(open(args.repos))
    seen = set()
    for e in ents:
        if e["repo"].lower() in seen:
            sys.exit(f"duplicate entry {e['repo']}")
        seen.add(e["repo"].lower())
    only = set(args.only.split(",")) if args.only else None
    mined = changed = 0
    if not args.finalize_only:
        # mine-time args for mine_corpus.mine_repo (trees are made here, with the disk check)
        margs = argparse.Namespace(mirror=args.mirror, out=args.out, trees=False,
                                   per_repo_commits=args.per_repo_commits,
                                   per_repo_docstrings=args.per_repo_docstrings,
                                   repos=args.repos, per_repo_symbols=args.per_repo_symbols,
                                   per_repo_tests=args.per_repo_tests)
        for e in ents:
            repo = e["repo"]
            if only and repo not in only:
                continue
            tag = repo.replace("/", "+")
            if forbidden(repo):
                if repo not in progress["failed"]:
                    log(f"REFUSED {repo}: practice-set or reserved repository (or shares its name)")
                    progress["failed"][repo] = {"error": "refused: practice/reserved name", "time": time.time()}
                    dump_json(prog_path, progress)
                continue
            done = os.path.exists(os.path.join(args.out, "repos", tag + ".jsonl"))
            gd = m.git_dir(args.mirror, repo)
            if gd is None:
                continue
            if done:
                st = json.load(open(os.path.join(args.out, "repos", tag + ".stats.json")))
                tr = make_tree(args, gd, tag, st["snapshot"])
                if tr:
                    log(f"tree {repo}: {tr}")
                    changed += tr.startswith("extracted")
                continue
            if repo in progress["failed"] and not args.retry_failed:
                continue
            if args.max_repos and mined >= args.max_repos:
                break
            try:
                st = mine_one(margs, e, gd, tag)
            except KeyboardInterrupt:
                raise
            except BaseException as ex:   # RuntimeError from git, AssertionError, SystemExit (refusal) ...
                msg = f"{type(ex).__name__}: {str(ex)[:500]}"
                log(f"FAILED {repo}: {msg}")
                if not isinstance(ex, (RuntimeError, SystemExit)):
                    traceback.print_exc()
                progress["failed"][repo] = {"error": msg, "time": time.time()}
                dump_json(prog_path, progress)
                changed += 1
                continue
            mined += 1
            tr = make_tree(args, gd, tag, st["snapshot"])
            progress["failed"].pop(repo, None)
            progress["done"][repo] = {"snapshot": st["snapshot"], "rows": st["rows"], "kinds": st["kinds"],
                                      "seconds": st["mine_seconds"], "time": time.time()}
            dump_json(prog_path, progress)
            log(f"{repo:36s} {e['language']:11s} src={st['source_files_at_snapshot']:5d} "
                + " ".join(f"{k}={st['kinds'][k]}" for k in KINDS)
                + f" {st['mine_seconds']}s tree={tr or 'ok'}")
    if mined or args.finalize_only or changed or not os.path.exists(os.path.join(args.out, "stats.json")):
        totals = finalize(args, ents, progress)
        log(json.dumps(totals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
