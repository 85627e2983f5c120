#!/usr/bin/env python3
"""One-off helper that chose each repository's snapshot offset in repos.json (stdlib only).

For every entry it counts build_queries.candidates() at offsets 400, 700, 1000, 1500, 2000,
2500, 3000 first-parent commits before the recorded head (capped at the oldest commit) and
keeps the offset with the most candidates, capped at 800 (ties -> the smaller offset).  It looks
only at commit history and the source-file rules, never at any evaluation result.  The chosen
offsets are recorded in repos.json; mine_corpus.py itself is deterministic for them.
(google/leveldb was then set by hand to 224 = 60% of its 374 first-parent commits: every grid
point gave 0 candidates and the oldest commit has an empty tree.)

Usage: python3 train/pick_offsets.py [--mirror /work/.mirror] [--repos train/repos.json] [--write]
"""
import argparse, json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mine_corpus as m  # noqa: E402

GRID = [400, 700, 1000, 1500, 2000, 2500, 3000]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", default=os.environ.get("MIRROR_ROOT", "/work/.mirror"))
    ap.add_argument("--repos", default=os.path.join(m.HERE, "repos.json"))
    ap.add_argument("--write", action="store_true", help="write the chosen offsets back")
    args = ap.parse_args()
    ents = json.load(open(args.repos))
    for e in ents:
        gd = m.git_dir(args.mirror, e["repo"])
        fp = m.bq.git(gd, "rev-list", "--first-parent", e["head"]).split()
        best, res = None, {}
        for off in sorted({min(o, len(fp) - 1) for o in GRID}):
            after = list(reversed(fp[:off]))
            cache = m.GitCache(m.bq.git)
            cache.load(gd, after)
            orig, m.bq.git = m.bq.git, cache
            try:
                c, _ = m.bq.candidates(gd, fp[off], after)
            finally:
                m.bq.git = orig
            res[off] = len(c)
            if best is None or min(len(c), 800) > best[0]:
                best = (min(len(c), 800), off)
        print(e["repo"], res, "->", best[1], flush=True)
        e["offset"] = best[1]
    if args.write:
        with open(args.repos, "w") as f:
            json.dump(ents, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
