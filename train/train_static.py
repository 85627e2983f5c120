#!/usr/bin/env python3
"""Tunes quarry's static (token-table) embedder for code search, contrastively.

Start: the table quarry distils from all-MiniLM-L6-v2 (src/embed/static.ts, `distillStaticTable`), kept in the model
cache as `~/.cache/quarry/models/all-MiniLM-L6-v2/static/all-MiniLM-L6-v2-static256-<sha16>.bin`.

Table layout (static.ts `writeStaticTable` / `readStaticTable`):
    b"QSTATIC1" + JSON {"dims": 256, "vocabSize": 30522, "source": "<sha256 of the transformer weights>"} + b"\n"
    then vocabSize * dims little-endian float32, row-major: row `id` is the vector of WordPiece id `id`
    (all-MiniLM-L6-v2's vocabulary), already multiplied by its SIF weight a / (a + p(token)); special tokens and
    [unused] slots are zero rows.
A text's vector is the L2-normalised SUM of the rows of its word pieces (static.ts `createStaticEmbedder`), where the
word pieces come from static.ts `wordPieces`: identifiers split (camelCase, snake_case, HTTPServer), lower-cased,
words = runs of [a-z0-9] (ASCII) or letters/digits (after NFD accent stripping), each word WordPiece'd by greedy
longest match; [UNK] and punctuation contribute nothing. `word_pieces` below replicates it exactly (the ASCII path
is the one code takes; --check-tokenizer compares with the `tokenizers` package on a sample).

Training: InfoNCE with in-batch negatives (temperature 0.05, symmetric), query = the corpus row's query, positive =
  commit rows:    the head (first --doc-chars characters) of one of the gold files (a different gold each epoch);
  docstring rows: the code around the docstring in the gold file (the docstring's own lines removed, so that the
                  pair is not a copy), or the gold file's head when the docstring cannot be found.
The trained parameters are the table's rows themselves (so they absorb the SIF weights: the semantics "a text is the
sum of its tokens' weighted rows" is unchanged and quarry needs no code change to use the table). A pull towards
the distilled rows (--anchor) keeps rows of tokens the corpus seldom shows from drifting.
Validation holds out whole repositories (--val-repos of them, picked by a fixed seed); each epoch ranks, for every
held-out query, all the source files of its repository's snapshot tree by their heads, and early-stops on MRR.

Output: the same layout with `"dtype": "float16"` in the header and float16 rows (15.6 MB; static.ts reads both), by
default models/static/code-v1.bin; prints its sha256.
Needs: torch (CPU is enough), numpy. Usage: python3 train/train_static.py [--epochs N] [--out PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import sys
import time
import unicodedata
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
MAGIC = b"QSTATIC1"
SRC_EXT = {
    ".py", ".go", ".rs", ".java", ".kt", ".kts", ".swift", ".c", ".h", ".cc", ".cpp", ".hpp", ".hh", ".cxx",
    ".cs", ".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".php", ".rb", ".scala", ".m", ".mm", ".lua", ".sh",
    ".vue", ".svelte", ".ex", ".exs", ".erl", ".hs", ".ml", ".dart", ".zig", ".toml", ".yaml", ".yml", ".md",
}


# ---------------------------------------------------------------- table I/O


def default_table() -> Path:
    d = Path(os.environ.get("QUARRY_MODELS_CACHE", Path.home() / ".cache/quarry/models")) / "all-MiniLM-L6-v2/static"
    found = sorted(d.glob("all-MiniLM-L6-v2-static256-*.bin"))
    if not found:
        sys.exit(f"no distilled table in {d}: run quarry once with QUARRY_EMBED=static (it distils it)")
    return found[0]


def read_table(path: Path) -> tuple[np.ndarray, dict]:
    buf = path.read_bytes()
    nl = buf.index(b"\n")
    head = buf[:nl]
    if not head.startswith(MAGIC):
        sys.exit(f"{path} is not a quarry static table")
    meta = json.loads(head[len(MAGIC):])
    body = np.frombuffer(buf[nl + 1:], dtype="<f2" if meta.get("dtype") == "float16" else "<f4")
    assert body.size == meta["dims"] * meta["vocabSize"], "table cut short"
    return body.reshape(meta["vocabSize"], meta["dims"]).copy(), meta


def write_table(path: Path, rows: np.ndarray, meta: dict, dtype: str = "float16") -> str:
    """float16 keeps the table under 16 MB (float32: 31 MB); static.ts reads the header's `dtype`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    head = {"dims": meta["dims"], "vocabSize": meta["vocabSize"], "source": meta["source"]}
    if dtype == "float16":
        head["dtype"] = "float16"
    header = MAGIC + json.dumps(head, separators=(",", ":")).encode() + b"\n"
    data = header + np.ascontiguousarray(rows, dtype="<f2" if dtype == "float16" else "<f4").tobytes()
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- tokenising as static.ts does

_CAMEL1 = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL2 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_UNDER = re.compile(r"[_$]+")
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_UNI_WORD = re.compile(r"[^\W_]+")  # letters and digits (\p{L}\p{N} in static.ts)
_HAN = re.compile(r"([\u4e00-\u9fff\u3400-\u4dbf\uf900-\ufaff])")


def split_code_words(text: str) -> str:
    return _UNDER.sub(" ", _CAMEL2.sub(r"\1 \2", _CAMEL1.sub(r"\1 \2", text)))


class WordPiecer:
    def __init__(self, vocab: dict[str, int]):
        self.vocab = vocab
        self.unk = vocab.get("[UNK]", 100)
        self.cache: dict[str, list[int]] = {}

    def piece(self, word: str) -> list[int]:
        known = self.cache.get(word)
        if known is not None:
            return known
        ids: list[int] = []
        if len(word) > 100:
            ids = [self.unk]
        else:
            start = 0
            while start < len(word):
                end = len(word)
                found = None
                while end > start:
                    found = self.vocab.get(("##" if start > 0 else "") + word[start:end])
                    if found is not None:
                        break
                    end -= 1
                if found is None:
                    ids = [self.unk]
                    break
                ids.append(found)
                start = end
        if len(self.cache) < 500_000:
            self.cache[word] = ids
        return ids

    def __call__(self, text: str) -> list[int]:
        lower = split_code_words(text[:64_000]).lower()
        if any(ord(c) > 127 for c in lower):
            lower = "".join(c for c in unicodedata.normalize("NFD", lower) if unicodedata.category(c) != "Mn")
            words = _UNI_WORD.findall(_HAN.sub(r" \1 ", lower))
        else:
            words = _ASCII_WORD.findall(lower)
        out: list[int] = []
        for w in words:
            for i in self.piece(w):
                if i != self.unk:
                    out.append(i)
        return out


def check_tokenizer(pieces: WordPiecer, tok_path: Path, texts: list[str]) -> None:
    """Our word pieces against the `tokenizers` package's BERT tokenizer, on words static.ts would give it."""
    from tokenizers import Tokenizer

    tk = Tokenizer.from_file(str(tok_path))
    tk.no_padding()  # tokenizer.json pads (and truncates) to 128
    tk.no_truncation()
    bad = 0
    for t in texts:
        ours = pieces(t)
        lower = split_code_words(t[:64_000]).lower()
        words = _ASCII_WORD.findall(lower) if all(ord(c) < 128 for c in lower) else None
        if words is None:
            continue
        enc = tk.encode(" ".join(words), add_special_tokens=False).ids
        theirs = [i for i in enc if i != pieces.unk]
        bad += ours != theirs
    print(f"tokenizer check: {len(texts) - bad}/{len(texts)} texts give the same ids as the tokenizers package")


# ---------------------------------------------------------------- data


def read_text(path: Path, limit: int = 200_000) -> str | None:
    try:
        with open(path, "rb") as f:
            raw = f.read(limit)
    except OSError:
        return None
    if b"\0" in raw[:4096]:
        return None
    return raw.decode("utf-8", "replace")


def docstring_window(text: str, query: str, chars: int) -> str | None:
    """The code around the docstring the query was taken from, without the docstring's own lines."""
    qwords = _ASCII_WORD.findall(query.lower())
    if len(qwords) < 3:
        return None
    lower = text.lower()
    pos = -1
    # find the first run of three query words in order, within a short span
    for s in range(0, min(len(qwords) - 2, 6)):
        m = re.search(r"\b" + r"\W+".join(map(re.escape, qwords[s:s + 3])) + r"\b", lower)
        if m:
            pos = m.start()
            break
    if pos < 0:
        return None
    qset = set(qwords)
    line_start = text.rfind("\n", 0, pos) + 1
    before = text[max(0, line_start - 400):line_start].split("\n")[-4:]
    after = text[line_start:line_start + chars * 3].split("\n")
    keep: list[str] = []
    for line in before + after:
        ws = _ASCII_WORD.findall(line.lower())
        if ws and sum(w in qset for w in ws) / len(ws) >= 0.5 and len(ws) >= 2:
            continue  # a docstring line
        keep.append(line)
    out = "\n".join(keep)
    return out[:chars] if out.strip() else None


def list_source_files(tree: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in ("node_modules", "vendor", "dist")]
        for f in filenames:
            p = Path(dirpath) / f
            if p.suffix.lower() in SRC_EXT:
                out.append(p)
    return out


# ---------------------------------------------------------------- model


def bag(batch: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    flat = [i for ids in batch for i in ids]
    offsets = np.cumsum([0] + [len(ids) for ids in batch[:-1]])
    return torch.tensor(flat, dtype=torch.long), torch.tensor(offsets, dtype=torch.long)


def encode(emb: torch.nn.EmbeddingBag, batch: list[list[int]]) -> torch.Tensor:
    # an empty text gets e0, as static.ts gives it
    batch = [ids if ids else [0] for ids in batch]
    ids, offsets = bag(batch)
    v = emb(ids, offsets)
    empty = (v.abs().sum(1) == 0)
    if empty.any():
        v = v.clone()
        v[empty, 0] = 1.0
    return F.normalize(v, dim=1)


@torch.no_grad()
def embed_all(emb: torch.nn.EmbeddingBag, texts: list[list[int]], bs: int = 1024) -> torch.Tensor:
    return torch.cat([encode(emb, texts[i:i + bs]) for i in range(0, len(texts), bs)]) if texts else torch.zeros(0)


@torch.no_grad()
def validate(emb, val: dict) -> dict:
    """Per held-out repository: each query ranks all the repository's files (by their heads)."""
    h1 = h5 = h10 = rr = n = 0
    for repo, (file_ids, paths, queries) in val.items():
        D = embed_all(emb, file_ids)
        Q = embed_all(emb, [q for q, _ in queries])
        S = Q @ D.T
        order = torch.argsort(S, dim=1, descending=True)[:, :100]
        for qi, (_, gold) in enumerate(queries):
            ranks = [r for r, j in enumerate(order[qi].tolist()) if paths[j] in gold]
            first = ranks[0] if ranks else 10**9
            h1 += first < 1
            h5 += first < 5
            h10 += first < 10
            rr += 1 / (first + 1) if first < 100 else 0
            n += 1
    return {"hit@1": h1 / n, "hit@5": h5 / n, "hit@10": h10 / n, "mrr": rr / n, "n": n}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="/work/train-data/corpus.jsonl")
    ap.add_argument("--trees", default="/work/train-data/trees")
    ap.add_argument("--table", default=None, help="the distilled table (default: quarry's model cache)")
    ap.add_argument("--out", default=str(ROOT / "models/static/code-v1.bin"))
    ap.add_argument("--val-repos", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--patience", type=int, default=2)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--temp", type=float, default=0.05)
    ap.add_argument("--anchor", type=float, default=1e-3, help="L2 pull of the batch's rows towards the distilled rows")
    ap.add_argument("--doc-chars", type=int, default=1500)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--check-tokenizer", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    t0 = time.time()

    table_path = Path(args.table) if args.table else default_table()
    rows0, meta = read_table(table_path)
    print(f"distilled table {table_path}: {meta['vocabSize']}x{meta['dims']}, source {meta['source'][:16]}")
    tok_path = ROOT / "models/all-MiniLM-L6-v2/tokenizer.json"
    vocab = json.loads(tok_path.read_text())["model"]["vocab"]
    pieces = WordPiecer(vocab)

    corpus = [json.loads(line) for line in open(args.corpus)]
    repos = sorted({r["repo"] for r in corpus})
    rng = random.Random(args.seed)
    val_repos = set(rng.sample(repos, args.val_repos))
    print(f"{len(corpus)} rows from {len(repos)} repositories; held out: {', '.join(sorted(val_repos))}")

    trees = Path(args.trees)
    file_cache: dict[tuple[str, str], str | None] = {}

    def file_text(repo: str, path: str) -> str | None:
        key = (repo, path)
        if key not in file_cache:
            file_cache[key] = read_text(trees / repo.replace("/", "+") / path)
        return file_cache[key]

    # training pairs: (query ids, [positive ids per gold], positive keys)
    train: list[tuple[list[int], list[list[int]], list[str]]] = []
    found_doc = 0
    for r in corpus:
        if r["repo"] in val_repos:
            continue
        q = pieces(r["query"])
        if not q:
            continue
        pos, keys = [], []
        for g in r["gold"]:
            text = file_text(r["repo"], g)
            if not text:
                continue
            if r["kind"] == "docstring":
                w = docstring_window(text, r["query"], args.doc_chars)
                if w:
                    found_doc += 1
                    pos.append(pieces(w))
                    keys.append(f"{r['repo']}:{g}:{r['id']}")
                    continue
            pos.append(pieces(text[: args.doc_chars]))
            keys.append(f"{r['repo']}:{g}")
        pos_keys = [(p, k) for p, k in zip(pos, keys) if p]
        if pos_keys:
            train.append((q, [p for p, _ in pos_keys], [k for _, k in pos_keys]))
    file_cache.clear()
    print(f"{len(train)} training pairs ({found_doc} docstring windows found); {time.time() - t0:.0f}s")

    # validation: every source file of each held-out tree, by its head
    val: dict = {}
    for repo in sorted(val_repos):
        tree = trees / repo.replace("/", "+")
        files = list_source_files(tree)
        paths, ids = [], []
        for f in files:
            t = read_text(f, args.doc_chars * 4)
            if t is None:
                continue
            paths.append(str(f.relative_to(tree)))
            ids.append(pieces(t[: args.doc_chars]))
        qs = [(pieces(r["query"]), set(r["gold"])) for r in corpus if r["repo"] == repo]
        val[repo] = (ids, paths, qs)
    print(f"validation: {sum(len(v[2]) for v in val.values())} queries over "
          f"{sum(len(v[1]) for v in val.values())} files; {time.time() - t0:.0f}s")
    if args.check_tokenizer:
        check_tokenizer(pieces, tok_path, [r["query"] for r in corpus[:2000]])

    emb = torch.nn.EmbeddingBag(rows0.shape[0], rows0.shape[1], mode="sum")
    with torch.no_grad():
        emb.weight.copy_(torch.from_numpy(rows0))
    anchor = torch.from_numpy(rows0)
    opt = torch.optim.Adam(emb.parameters(), lr=args.lr)
    # rows of special tokens stay zero
    frozen = torch.from_numpy(np.abs(rows0).sum(1) == 0)

    base = validate(emb, val)
    print(f"epoch 0 (distilled): val {json.dumps({k: round(v, 4) for k, v in base.items()})}")
    best, best_rows, bad = base["mrr"], rows0.copy(), 0
    history = [{"epoch": 0, **base}]
    train_start = time.time()
    for epoch in range(1, args.epochs + 1):
        rng.shuffle(train)
        total, steps = 0.0, 0
        for s in range(0, len(train) - args.batch + 1, args.batch):
            chunk = train[s:s + args.batch]
            qs, ds, ks = [], [], []
            for q, pos, keys in chunk:
                j = rng.randrange(len(pos))
                qs.append(q)
                ds.append(pos[j])
                ks.append(keys[j])
            Q = encode(emb, qs)
            D = encode(emb, ds)
            logits = Q @ D.T / args.temp
            # the same file twice in a batch is no negative
            same = torch.tensor([[a == b for b in ks] for a in ks])
            eye = torch.eye(len(ks), dtype=torch.bool)
            logits = logits.masked_fill(same & ~eye, float("-inf"))
            target = torch.arange(len(ks))
            loss = (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2
            if args.anchor > 0:
                touched = torch.unique(torch.tensor([i for x in qs + ds for i in x], dtype=torch.long))
                loss = loss + args.anchor * ((emb.weight[touched] - anchor[touched]) ** 2).sum(1).mean() * 100
            opt.zero_grad()
            loss.backward()
            emb.weight.grad[frozen] = 0
            opt.step()
            total += loss.item()
            steps += 1
        m = validate(emb, val)
        history.append({"epoch": epoch, "loss": total / max(steps, 1), **m})
        print(f"epoch {epoch}: loss {total / max(steps, 1):.4f} val {json.dumps({k: round(v, 4) for k, v in m.items()})}"
              f" ({time.time() - train_start:.0f}s)", flush=True)
        if m["mrr"] > best:
            best, best_rows, bad = m["mrr"], emb.weight.detach().numpy().copy(), 0
        else:
            bad += 1
            if bad >= args.patience:
                print("early stop")
                break
    train_secs = time.time() - train_start
    best_rows[frozen.numpy()] = 0
    sha = write_table(Path(args.out), best_rows, meta)
    size = Path(args.out).stat().st_size
    print(f"wrote {args.out}: {size} bytes, sha256 {sha}; best val MRR {best:.4f} (distilled {base['mrr']:.4f}); "
          f"training {train_secs:.0f}s, total {time.time() - t0:.0f}s")
    Path(args.out).with_suffix(".json").write_text(json.dumps({
        "sha256": sha, "bytes": size, "from": str(table_path.name), "source": meta["source"],
        "val_repos": sorted(val_repos), "history": history, "train_seconds": round(train_secs),
        "args": {k: v for k, v in vars(args).items() if k not in ("corpus", "trees", "table", "out")},
    }, indent=1) + "\n")


if __name__ == "__main__":
    main()
