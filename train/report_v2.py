#!/usr/bin/env python3
"""Rewrite the progress section of train/README-v2.md from /work/train-data/v2 (stdlib only).

Reads OUT/stats.json (written by grow_corpus.py), OUT/progress.json and OUT/fetch-log.tsv
(repositories whose fetch failed, one `repo<TAB>reason` a line) and replaces everything between
the markers <!-- progress:begin --> and <!-- progress:end --> in the README.

Usage: python3 train/report_v2.py [--out /work/train-data/v2] [--readme train/README-v2.md]
"""
import argparse, json, os, re, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ["commit", "docstring", "symbol", "test"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/work/train-data/v2")
    ap.add_argument("--readme", default=os.path.join(HERE, "README-v2.md"))
    ap.add_argument("--repos", default=os.path.join(HERE, "repos-v2.json"))
    args = ap.parse_args()
    st = json.load(open(os.path.join(args.out, "stats.json")))
    ents = json.load(open(args.repos))
    fl = os.path.join(args.out, "fetch-log.tsv")
    fetch_fail = []
    if os.path.exists(fl):
        for line in open(fl):
            if line.strip() and not line.startswith("repo\t"):
                r, _, why = line.rstrip("\n").partition("\t")
                fetch_fail.append((r, why))
    t = st["totals"]
    L = []
    L.append(f"_Updated {time.strftime('%Y-%m-%d %H:%M')} (machine time) from `{args.out}/stats.json`._")
    L.append("")
    L.append(f"**{t['repositories_mined']} repositories mined** of {len(ents)} listed in `repos-v2.json`, "
             f"{t['languages']} languages, **{t['rows']} rows**: "
             + ", ".join(f"{t['kinds'][k]} {k}" for k in KINDS)
             + f". Trees materialised: {t['trees']}. Free disk: {t['free_disk_gb']} GB.")
    L.append(f"Listed but not fetched yet: {len(st['no_mirror_yet'])}. "
             f"Fetch failures (dropped from the list): {len(fetch_fail)}. "
             f"Mining failures: {len(st['failed'])}.")
    L.append("")
    L.append("| language | repos | commit | docstring | symbol | test | rows |")
    L.append("|---|---|---|---|---|---|---|")
    for lang, v in sorted(st["per_language"].items(), key=lambda kv: -kv[1]["rows"]):
        L.append(f"| {lang} | {v['repositories']} | " + " | ".join(str(v[k]) for k in KINDS) + f" | {v['rows']} |")
    L.append(f"| **all** | **{t['repositories_mined']}** | " + " | ".join(f"**{t['kinds'][k]}**" for k in KINDS)
             + f" | **{t['rows']}** |")
    L.append("")
    if fetch_fail:
        L.append("Fetch failures (the store's snapshot limit is 524,288,000 bytes; these were dropped from "
                 "`repos-v2.json`):")
        L.append("")
        for r, why in fetch_fail:
            L.append(f"- `{r}`: {why}")
        L.append("")
    if st["failed"]:
        L.append("Mining failures (in `progress.json`; rerun with `--retry-failed`):")
        L.append("")
        for r, v in st["failed"].items():
            L.append(f"- `{r}`: {v['error'][:200]}")
        L.append("")
    weak = [s for s in st["repositories"] if s["rows"] < 100]
    if weak:
        L.append("Weak repositories (< 100 rows): " + ", ".join(f"`{s['repo']}` ({s['rows']})" for s in weak) + ".")
        L.append("")
    block = "\n".join(L)
    txt = open(args.readme).read()
    new = re.sub(r"(<!-- progress:begin -->\n).*?(\n<!-- progress:end -->)",
                 lambda mt: mt.group(1) + block + mt.group(2), txt, flags=re.S)
    tmp = args.readme + ".tmp"
    with open(tmp, "w") as f:
        f.write(new)
    os.replace(tmp, args.readme)
    print(block.splitlines()[2])


if __name__ == "__main__":
    main()
