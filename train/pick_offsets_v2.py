#!/usr/bin/env python3
"""Snapshot offsets for repos-v2.json with pick_offsets.py's rule, one repository at a time
(stdlib only).

The rule is pick_offsets.py's: count build_queries.candidates() at offsets 400, 700, 1000, 1500,
2000, 2500, 3000 first-parent commits before the recorded head (capped at the oldest commit) and
keep the offset with the most candidates, capped at 800 (ties -> the smaller offset).  It looks only
at commit history and the source-file rules, never at an evaluation result.

The only difference is speed: the batched git answers (mine_corpus.GitCache) are loaded once, for
the deepest offset, and reused for the smaller ones (the same exact strings, so the counts are the
ones pick_offsets.py prints).  Two extra rules for short histories: if the oldest first-parent
commit is a grid point and its tree has no source file, it is not considered (an empty S); and a
history shorter than 400 first-parent commits gets S at 60% of it (v1's hand rule for leveldb).

Usage: python3 train/pick_offsets_v2.py [--repos train/repos-v2.json] [--only owner/name,...]
                                        [--mirror /work/.mirror] [--write]
(the grow_corpus.py driver calls pick() itself for entries that have no offset yet)
"""
import argparse, json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mine_corpus as m  # noqa: E402

GRID = [400, 700, 1000, 1500, 2000, 2500, 3000]
CAP = 800


def pick(gd, head):
    """-> (offset, {offset: candidates}, first_parent_commits)"""
    fp = m.bq.git(gd, "rev-list", "--first-parent", head).split()
    offs = sorted({min(o, len(fp) - 1) for o in GRID if len(fp) > 1})
    if not offs:
        return 0, {}, len(fp)
    if len(fp) - 1 < min(GRID):
        # history shorter than the smallest grid offset: every grid point is the oldest commit
        # (often an empty tree).  v1 set google/leveldb by hand to 60% of its first-parent
        # commits; the same rule here.
        offs = [int(0.6 * len(fp))]
    cache = m.GitCache(m.bq.git)
    cache.load(gd, list(reversed(fp[:max(offs)])))
    best, res = None, {}
    for off in offs:
        if off == len(fp) - 1 and off != min(offs):
            names = m.bq.git(gd, "ls-tree", "-r", "--name-only", fp[off]).splitlines()
            if not any(m.is_source(p) for p in names):
                continue
        after = list(reversed(fp[:off]))
        orig, m.bq.git = m.bq.git, cache
        try:
            c, _ = m.bq.candidates(gd, fp[off], after)
        finally:
            m.bq.git = orig
        res[off] = len(c)
        if best is None or min(len(c), CAP) > best[0]:
            best = (min(len(c), CAP), off)
    return best[1], res, len(fp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", default=os.environ.get("MIRROR_ROOT", "/work/.mirror"))
    ap.add_argument("--repos", default=os.path.join(m.HERE, "repos-v2.json"))
    ap.add_argument("--only", default=None)
    ap.add_argument("--write", action="store_true", help="write the chosen offsets back")
    args = ap.parse_args()
    ents = json.load(open(args.repos))
    only = set(args.only.split(",")) if args.only else None
    for e in ents:
        if only and e["repo"] not in only:
            continue
        gd = m.git_dir(args.mirror, e["repo"])
        if gd is None:
            print(e["repo"], "no mirror", flush=True)
            continue
        head = e.get("head") or m.bq.git(gd, "rev-parse", "HEAD").strip()
        off, res, n = pick(gd, head)
        print(e["repo"], res, "->", off, flush=True)
        e.update(head=head, offset=off, first_parent_commits=n)
    if args.write:
        tmp = args.repos + ".tmp"
        with open(tmp, "w") as f:
            json.dump(ents, f, indent=1)
            f.write("\n")
        os.replace(tmp, args.repos)


if __name__ == "__main__":
    main()
