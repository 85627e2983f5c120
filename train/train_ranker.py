#!/usr/bin/env python3
"""Trains quarry's learned file ranker (LightGBM LambdaRank) on rows from train/dump_features.ts, reports it
cross-validated by repository (whole repositories held out per fold) next to today's order, and exports the model
as flat JSON trees that src/search/ranker.ts evaluates.

  python3 train/train_ranker.py /work/train-data/features.jsonl --folds 5 \
      --report /work/train-data/cv.json --export models/ranker/ranker-v2.json

Needs lightgbm and numpy (pip install lightgbm numpy). Deterministic for a given input (fixed seeds, one thread).
"""
import argparse, collections, hashlib, json, math, random, sys

import lightgbm as lgb
import numpy as np

ROUNDS = 300
PARAMS = dict(
    objective="lambdarank",
    learning_rate=0.05,
    num_leaves=15,
    min_data_in_leaf=40,
    bagging_fraction=0.8,
    bagging_freq=1,
    feature_fraction=0.9,
    lambda_l2=1.0,
    lambdarank_truncation_level=20,
    seed=7,
    num_threads=2,
    deterministic=True,
    force_row_wise=True,
    verbose=-1,
)


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    return rows


def metrics(ranked_lists):
    """ranked_lists: list of (ranked_paths, gold_set). hit@1/5/10 and MRR, as eval-dev's score.py counts them."""
    n = len(ranked_lists) or 1
    h1 = h5 = h10 = mrr = 0.0
    for ranked, gold in ranked_lists:
        first = next((i for i, p in enumerate(ranked) if p in gold), None)
        if first is None:
            continue
        h1 += first < 1
        h5 += first < 5
        h10 += first < 10
        mrr += 1 / (first + 1)
    return {"n": len(ranked_lists), "hit@1": h1 / n, "hit@5": h5 / n, "hit@10": h10 / n, "mrr": mrr / n}


def order(row, scores):
    idx = sorted(range(len(row["files"])), key=lambda i: (-scores[i], i))
    return [row["files"][i] for i in idx]


def matrices(rows):
    X, y, groups = [], [], []
    for r in rows:
        gold = set(r["gold"])
        for p, x in zip(r["files"], r["X"]):
            X.append(x)
            y.append(1 if p in gold else 0)
        groups.append(len(r["files"]))
    return np.array(X, dtype=np.float64), np.array(y), groups


SKIP_KINDS = set()


def train(rows):
    rows = [r for r in rows if r["files"] and r.get("kind") not in SKIP_KINDS]
    X, y, groups = matrices(rows)
    return lgb.train(PARAMS, lgb.Dataset(X, y, group=groups), num_boost_round=ROUNDS)


def key(row):
    """A row's identity: the same query is searched in each mode."""
    return row["id"] + "|" + row.get("mode", "lexical")


def predict(model, row):
    if not row["files"]:
        return []
    return model.predict(np.array(row["X"], dtype=np.float64)).tolist()


def folds_by_repo(rows, k, seed=13):
    repos = sorted({r["repo"] for r in rows})
    random.Random(seed).shuffle(repos)
    return [set(repos[i::k]) for i in range(k)]


def report(rows, ranked_of):
    out = {"all": metrics([(ranked_of(r), set(r["gold"])) for r in rows])}
    for key in ("language", "kind", "mode", "kind|mode"):
        buckets = collections.defaultdict(list)
        for r in rows:
            b = "|".join(str(r.get(k, "lexical" if k == "mode" else "?")) for k in key.split("|"))
            buckets[b].append(r)
        out[key] = {b: metrics([(ranked_of(r), set(r["gold"])) for r in rs]) for b, rs in sorted(buckets.items())}
    return out


def flatten(tree):
    """LightGBM's nested tree → arrays: node i splits on feature[i] at threshold[i] (<= goes left); a child < 0 is
    leaf ~child."""
    feature, threshold, left, right, leaf = [], [], [], [], []

    def walk(node):
        if "leaf_value" in node:
            leaf.append(node["leaf_value"])
            return ~(len(leaf) - 1)
        assert node["decision_type"] == "<=", node["decision_type"]
        i = len(feature)
        feature.append(node["split_feature"])
        threshold.append(node["threshold"])
        left.append(0)
        right.append(0)
        left[i] = walk(node["left_child"])
        right[i] = walk(node["right_child"])
        return i

    root = walk(tree["tree_structure"])
    if root < 0:  # a single leaf
        return {"feature": [], "threshold": [], "left": [], "right": [], "leaf": leaf}
    return {"feature": feature, "threshold": threshold, "left": left, "right": right, "leaf": leaf}


def exported_scorer(path, names):
    """Scores rows with an exported model (flat trees over its own feature names), as src/search/ranker.ts does:
    every tree walked for all of a row's files at once (numpy), the scores cached by row."""
    model = json.load(open(path))
    at = np.array([names.index(n) for n in model["features"]], dtype=np.int64)
    trees = [{k: np.array(v) for k, v in t.items()} for t in model["trees"]]
    cache = {}

    def score_matrix(X):
        out = np.zeros(len(X))
        rows = np.arange(len(X))
        for t in trees:
            if not len(t["feature"]):
                out += t["leaf"][0] if len(t["leaf"]) else 0.0
                continue
            node = np.zeros(len(X), dtype=np.int64)
            leaf = np.full(len(X), -1, dtype=np.int64)
            active = np.ones(len(X), dtype=bool)
            while active.any():
                n = node[active]
                x = X[rows[active], at[t["feature"][n]]]
                nxt = np.where(x <= t["threshold"][n], t["left"][n], t["right"][n])
                done = nxt < 0
                idx = rows[active]
                leaf[idx[done]] = ~nxt[done]
                node[idx[~done]] = nxt[~done]
                active[idx[done]] = False
            out += t["leaf"][leaf]
        return out

    def score(row):
        k = key(row)
        if k not in cache:
            X = np.array(row["X"], dtype=np.float64) if row["X"] else np.zeros((0, len(names)))
            cache[k] = score_matrix(X).tolist() if len(X) else []
        return cache[k]

    def prime(rows):
        """Scores many rows in one pass (one matrix), filling the cache."""
        rows = [r for r in rows if r["X"]]
        if not rows:
            return
        scores = score_matrix(np.array([x for r in rows for x in r["X"]], dtype=np.float64))
        at_row = 0
        for r in rows:
            cache[key(r)] = scores[at_row:at_row + len(r["X"])].tolist()
            at_row += len(r["X"])

    score.prime = prime
    return score


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("features")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--report")
    ap.add_argument("--export")
    ap.add_argument("--check", help="write sample vectors and their predictions here (the TypeScript scorer's test)")
    ap.add_argument("--validate", nargs="*", default=[],
                    help="feature files of the practice sets: the exported model is scored on them, never trained on")
    ap.add_argument("--only-features", type=int,
                    help="train on the first N features only (23: the lexical-v1 recipe, for comparison)")
    ap.add_argument("--modes", default="lexical,hybrid", help="which rows to train and report on")
    ap.add_argument("--extra-train", nargs="*", default=[],
                    help="feature files whose rows are only trained on: in every fold's training set, never held out")
    ap.add_argument("--skip-kinds", default="",
                    help="query kinds left out of training (still reported): e.g. symbol,test, the v2 corpus's own")
    ap.add_argument("--compare", help="an exported model (models/ranker/ranker-v3.json) scored on the same held-out "
                    "rows, by its feature names")
    a = ap.parse_args()
    names = json.load(open(a.features + ".features.json"))
    modes = set(a.modes.split(","))
    SKIP_KINDS.update(k for k in a.skip_kinds.split(",") if k)
    if a.only_features:
        names = names[:a.only_features]

    def rows_of(path):
        out = [r for r in load(path) if r.get("mode", "lexical") in modes]
        if a.only_features:
            for r in out:
                r["X"] = [x[:a.only_features] for x in r["X"]]
        return out

    rows = rows_of(a.features)
    print(f"{len(rows)} queries, {len({r['repo'] for r in rows})} repositories", file=sys.stderr)
    extra = [r for f in a.extra_train for r in rows_of(f)]
    if extra:
        print(f"+ {len(extra)} training-only queries, {len({r['repo'] for r in extra})} repositories", file=sys.stderr)
    compare = exported_scorer(a.compare, names) if a.compare else None
    if compare:
        compare.prime(rows)

    baseline = lambda r: r["files"]  # noqa: E731
    cv_scores = {}
    fold_reports = []
    for i, held in enumerate(folds_by_repo(rows, a.folds)):
        model = train([r for r in rows if r["repo"] not in held] + extra)
        test = [r for r in rows if r["repo"] in held]
        for r in test:
            cv_scores[key(r)] = predict(model, r)
        fold_reports.append({
            "fold": i, "held_out": sorted(held),
            "baseline": metrics([(baseline(r), set(r["gold"])) for r in test]),
            "learned": metrics([(order(r, cv_scores[key(r)]), set(r["gold"])) for r in test]),
        })
        if compare:
            fold_reports[-1]["compare"] = metrics([(order(r, compare(r)), set(r["gold"])) for r in test])
        print(f"fold {i}: {fold_reports[-1]['baseline']['mrr']:.3f} -> {fold_reports[-1]['learned']['mrr']:.3f}",
              file=sys.stderr)
    result = {"features": names, "params": {**PARAMS, "rounds": ROUNDS}, "folds": fold_reports}
    if a.folds > 0:  # --folds 0: no cross-validation, only the export
        result.update({
            "baseline": report(rows, baseline),
            "learned": report(rows, lambda r: order(r, cv_scores[key(r)])),
            "per_repo": {
                repo: {
                    "baseline": metrics([(baseline(r), set(r["gold"])) for r in rows if r["repo"] == repo]),
                    "learned": metrics([(order(r, cv_scores[key(r)]), set(r["gold"])) for r in rows
                                        if r["repo"] == repo]),
                }
                for repo in sorted({r["repo"] for r in rows})
            },
        })
        if compare:
            result["compare"] = report(rows, lambda r: order(r, compare(r)))
        b, l = result["baseline"]["all"], result["learned"]["all"]
        c = result["compare"]["all"] if compare else None
        print("cross-validated by repository (all queries): today's order" + (" | compared model" if c else "")
              + " -> learned", file=sys.stderr)
        for k in ("hit@1", "hit@5", "hit@10", "mrr"):
            print(f"  {k:6} {b[k]:.3f}" + (f" | {c[k]:.3f}" if c else "") + f" -> {l[k]:.3f}", file=sys.stderr)
    if a.report:
        json.dump(result, open(a.report, "w"), indent=1)

    if a.export:
        model = train(rows + extra)
        dump = model.dump_model()
        trees = [flatten(t) for t in dump["tree_info"]]
        out = {"name": a.export.rsplit("/", 1)[-1].removesuffix(".json"), "features": names,
               "trained_on": {"queries": len(rows), "repositories": len({r['repo'] for r in rows})},
               "trees": trees}
        text = json.dumps(out, separators=(",", ":"))
        open(a.export, "w").write(text)
        print(f"exported {len(trees)} trees to {a.export} ({len(text)} bytes, sha256 "
              f"{hashlib.sha256(text.encode()).hexdigest()})", file=sys.stderr)
        validation = {}
        for vf in a.validate:
            vrows = rows_of(vf)
            validation[vf] = {"baseline": report(vrows, baseline),
                              "learned": report(vrows, lambda r: order(r, predict(model, r)))}
            vb, vl = validation[vf]["baseline"]["all"], validation[vf]["learned"]["all"]
            print(f"validation {vf}: " + ", ".join(f"{k} {vb[k]:.3f} -> {vl[k]:.3f}" for k in ("hit@1", "hit@5", "hit@10", "mrr")),
                  file=sys.stderr)
        if a.report and validation:
            result["validation"] = validation
            json.dump(result, open(a.report, "w"), indent=1)
        if a.check:
            sample = [x for r in rows[:50] for x in r["X"][:5]]
            preds = model.predict(np.array(sample, dtype=np.float64)).tolist()
            json.dump({"vectors": sample, "scores": preds}, open(a.check, "w"))


if __name__ == "__main__":
    main()
