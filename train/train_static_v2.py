#!/usr/bin/env python3
"""Trains quarry's static (token-table) embedder "code-v2" for code search: numpy only, a vocabulary learned from code.

Differences from train_static.py (code-v1):
  * vocabulary: pieces learned from the snapshot trees (not MiniLM's WordPiece vocabulary). A word is what static.ts
    `wordPieces` makes of a text (identifiers split at camelCase / snake_case / HTTPServer, lower-cased, runs of
    [a-z0-9], or letters/digits after NFD accent stripping). The N most frequent words (seen in >= 2 repositories) are
    pieces; a WordPiece-style fallback (`##` continuation pieces and word-initial prefixes, chosen by frequency over the
    tail words, plus every single [a-z0-9] character both ways) spells every other ASCII word. The vocabulary is a
    WordPiece vocabulary (id 0 = "[UNK]"), so static.ts' own greedy longest-match `wordPieces` tokenises with it
    unchanged: the only loader change needed is to take the vocabulary from the table's header (below).
  * training: InfoNCE (temperature --temp, symmetric on the positives) with in-batch negatives AND hard negatives
    (--hard per query, drawn from the --hard-pool top BM25 files of the same repository that are not gold);
    the model is a table of rows E (V x dims) and a learned per-piece log-weight a (init: SIF over the pieces'
    frequency in the trees, or 0 when the rows start from code-v1); a text vector = L2-normalised sum over its pieces
    of exp(a_t) * E_t. The gradient is written by hand; lazy (sparse) Adam on the rows a batch touches; float32.
  * cross-validation by whole repositories (--val-repos, spread over languages, never one of v1's 69 repositories, so
    that code-v1 has not seen them): every held-out query ranks ALL source files (eval-dev's srcfiles.is_source,
    files <= 1 MB, no NUL in the first 8 KiB) of its repository's tree by cosine to the file's head (--doc-chars);
    hit@1/5/10 and MRR (cut at 100, as train_static.py), overall, per kind and per language. Baselines on the same
    queries: BM25 over the heads' code pieces, the shipped code-v1 table (MiniLM word pieces, as static.ts), and the
    v2 model at step 0.
  * resumable: every phase is cached under --work (split.json, vocab.json, prep/<repo>.pkl, baselines.json) and the
    training writes ckpt-<step>.npz every --ckpt-every steps (the last two kept, plus best.npz); a rerun with the same
    arguments resumes from the last checkpoint.

Output (--out, default <work>/code-v2.bin): static.ts' layout with two header additions:
    b"QSTATIC1" + JSON {"dims", "vocabSize", "source", "dtype": "float16", "vocab": [piece for id 0..vocabSize-1]}
    + b"\\n" + vocabSize * dims little-endian float16, row-major, row id = exp(a_id) * E_id (row 0, "[UNK]", zero).
Today's static.ts ignores "vocab" (readStaticTable keeps dims/vocabSize/source/dtype only) and createStaticEmbedder
always tokenises with MiniLM's WordPiece vocabulary (`loadVocab()`), so the file would load without an error and give
meaningless vectors: do NOT point `embed.static_table` at it before this loader change: `StaticTable.vocab?: string[]`,
readStaticTable copies `meta.vocab` (checked: an array of vocabSize strings holding "[UNK]"), and createStaticEmbedder
uses `table.vocab ? new Map(table.vocab.map((t, i) => [t, i])) : loadVocab()`; `wordPieces` itself is unchanged
(this script's WordPiecer gives the same ids as static.ts `wordPieces` with the learned vocabulary: checked on 1,550
texts).

Usage (niced, one thread):
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 19 python3 train/train_static_v2.py \\
      --work /work/train-data/v2/static-v2/full [--epochs 3] [--val-repos 20] ...
  smoke: --work .../smoke --train-repos 16 --val-repos 4 --steps 300 --batch 128
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import pickle  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import unicodedata  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
MAGIC = b"QSTATIC1"
PREP_VERSION = 1


def _find_eval_dev() -> str:
    for c in (os.environ.get("EVAL_DEV"), str(ROOT.parent / "shared" / "eval-dev"), "/work/shared/eval-dev"):
        if c and os.path.isfile(os.path.join(c, "srcfiles.py")):
            return os.path.abspath(c)
    sys.exit("cannot find eval-dev (srcfiles.py); set EVAL_DEV")


sys.path.insert(0, _find_eval_dev())
from srcfiles import is_source  # noqa: E402  (the benchmark's source-file rule; gold files follow it)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------- tokenising as static.ts does (train_static.py's copy)

_CAMEL1 = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL2 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_UNDER = re.compile(r"[_$]+")
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_UNI_WORD = re.compile(r"[^\W_]+")  # letters and digits (\p{L}\p{N} in static.ts)
_HAN = re.compile(r"([\u4e00-\u9fff\u3400-\u4dbf\uf900-\ufaff])")


def split_code_words(text: str) -> str:
    return _UNDER.sub(" ", _CAMEL2.sub(r"\1 \2", _CAMEL1.sub(r"\1 \2", text)))


def words_of(text: str) -> list[str]:
    """static.ts `wordPieces`' words (before WordPiece): split identifiers, lower-case, letters/digits runs."""
    lower = split_code_words(text[:64_000]).lower()
    if not lower.isascii():
        lower = "".join(c for c in unicodedata.normalize("NFD", lower) if unicodedata.category(c) != "Mn")
        return _UNI_WORD.findall(_HAN.sub(r" \1 ", lower))
    return _ASCII_WORD.findall(lower)


class WordPiecer:
    """static.ts `wordPieces` for any WordPiece vocabulary: greedy longest match, `##` continuations, [UNK] dropped."""

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
        ids = [i for i in ids if i != self.unk]
        if len(self.cache) < 1_000_000:
            self.cache[word] = ids
        return ids

    def __call__(self, text: str) -> np.ndarray:
        out: list[int] = []
        for w in words_of(text):
            out.extend(self.piece(w))
        return np.asarray(out, dtype=np.int32)


# ---------------------------------------------------------------- files

def read_head(path: Path, chars: int) -> str | None:
    """The first `chars` characters of a source file, or None (> 1 MB, unreadable, or a NUL in the first 8 KiB)."""
    try:
        if path.is_symlink() or path.stat().st_size > (1 << 20):
            return None
        with open(path, "rb") as f:
            raw = f.read(max(8192, chars * 4))
    except OSError:
        return None
    if b"\0" in raw[:8192]:
        return None
    return raw.decode("utf-8", "replace")[:chars]


def read_text(path: Path, limit: int = 200_000) -> str | None:
    try:
        with open(path, "rb") as f:
            raw = f.read(limit)
    except OSError:
        return None
    if b"\0" in raw[:4096]:
        return None
    return raw.decode("utf-8", "replace")


def source_files(tree: Path) -> list[str]:
    """Repository-relative paths of the tree's source files (is_source), sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(tree):
        rel_dir = os.path.relpath(dirpath, tree)
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for f in filenames:
            rel = rel_dir + f
            if is_source(rel):
                out.append(rel)
    return sorted(out)


def docstring_window(text: str, query: str, chars: int) -> str | None:
    """train_static.py's: the code around the docstring the query was taken from, without the docstring's lines."""
    qwords = _ASCII_WORD.findall(query.lower())
    if len(qwords) < 3:
        return None
    lower = text.lower()
    pos = -1
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
            continue
        keep.append(line)
    out = "\n".join(keep)
    return out[:chars] if out.strip() else None


def tag(repo: str) -> str:
    return repo.replace("/", "+")


def atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


# ---------------------------------------------------------------- split

def make_split(corpus_by_repo: dict, languages: dict, args) -> dict:
    """Held-out repositories: round-robin over languages (shuffled by seed), never one of v1's repositories (code-v1
    trained on them), at least --val-min-rows rows each. Training repositories: all others (or --train-repos of them)."""
    v1 = {e["repo"] for e in json.loads((HERE / "repos.json").read_text())}
    rng = random.Random(args.seed)
    by_lang: dict[str, list[str]] = defaultdict(list)
    for repo in sorted(corpus_by_repo):
        if repo not in v1 and len(corpus_by_repo[repo]) >= args.val_min_rows:
            by_lang[languages[repo]].append(repo)
    langs = sorted(by_lang)
    rng.shuffle(langs)
    for lang in langs:
        rng.shuffle(by_lang[lang])
    val: list[str] = []
    while len(val) < args.val_repos and any(by_lang.values()):
        for lang in langs:
            if by_lang[lang] and len(val) < args.val_repos:
                val.append(by_lang[lang].pop())
    train = [r for r in sorted(corpus_by_repo) if r not in set(val)]
    if args.train_repos:
        train = sorted(rng.sample(train, min(args.train_repos, len(train))))
    return {"val": sorted(val), "train": train, "seed": args.seed}


# ---------------------------------------------------------------- vocabulary

def learn_vocab(trees: Path, repos: list[str], args, queries: dict[str, list[str]] | None = None) -> dict:
    """Word counts over the training trees' source files (each file's first --vocab-chars characters, at most
    --vocab-files files per repository, evenly spread), then the pieces (module docstring)."""
    t0 = time.time()
    count: Counter = Counter()
    n_repos: Counter = Counter()
    n_files = n_chars = 0
    for k, repo in enumerate(repos):
        tree = trees / tag(repo)
        files = source_files(tree)
        if args.vocab_files and len(files) > args.vocab_files:
            step = len(files) / args.vocab_files
            files = [files[int(i * step)] for i in range(args.vocab_files)]
        rc: Counter = Counter()
        for rel in files:
            text = read_head(tree / rel, args.vocab_chars)
            if text is None:
                continue
            n_files += 1
            n_chars += len(text)
            rc.update(words_of(text))
        if queries and args.vocab_queries > 0:  # the training queries' words too (--vocab-queries times each)
            qc: Counter = Counter()
            for q in queries.get(repo, []):
                qc.update(words_of(q))
            for w, c in qc.items():
                rc[w] += c * args.vocab_queries
        count.update(rc)
        n_repos.update(rc.keys())
        if (k + 1) % 25 == 0:
            log(f"vocab: {k + 1}/{len(repos)} repositories, {n_files} files, {n_chars / 1e6:.0f} M chars, "
                f"{len(count)} distinct words, {time.time() - t0:.0f}s")
    words = [w for w, c in count.most_common() if n_repos[w] >= 2 and len(w) <= 100]
    top = words[: args.vocab_words]
    vocab = ["[UNK]"] + top
    have = set(vocab)
    for c in "abcdefghijklmnopqrstuvwxyz0123456789":
        for p in (c, "##" + c):
            if p not in have:
                vocab.append(p)
                have.add(p)
    # fallback pieces from the tail: word-initial prefixes and ## substrings of 2..6 characters, by count x (len - 1)
    top_set = set(top)
    tail = [(w, c) for w, c in count.most_common() if w not in top_set and w.isascii() and len(w) <= 100][:500_000]
    cand: Counter = Counter()
    for w, c in tail:
        n = len(w)
        for L in range(2, min(6, n - 1) + 1):
            cand[w[:L]] += c * (L - 1)
            for s in range(1, n - L + 1):
                cand["##" + w[s:s + L]] += c * (L - 1)
    added = 0
    for p, _ in cand.most_common():
        if added >= args.vocab_sub:
            break
        if p not in have:
            vocab.append(p)
            have.add(p)
            added += 1
    # piece frequencies (for SIF) and coverage, from the counted words
    ids = {p: i for i, p in enumerate(vocab)}
    wp = WordPiecer(ids)
    freq = np.zeros(len(vocab), dtype=np.float64)
    occ = pieces_total = unk_occ = 0
    for w, c in count.most_common(2_000_000):
        ps = wp.piece(w)
        if not ps:
            unk_occ += c
        for p in ps:
            freq[p] += c
        occ += c
        pieces_total += c * len(ps)
    stats = {"files": n_files, "chars": n_chars, "distinct_words": len(count), "words_in_vocab": len(top),
             "fallback_pieces": len(vocab) - 1 - len(top), "word_occurrences": occ,
             "share_single_piece": round(sum(count[w] for w in top) / max(occ, 1), 4),
             "pieces_per_word": round(pieces_total / max(occ, 1), 3),
             "share_unk_words": round(unk_occ / max(occ, 1), 5), "seconds": round(time.time() - t0)}
    log(f"vocab: {len(vocab)} pieces; {json.dumps(stats)}")
    return {"vocab": vocab, "freq": freq.tolist(), "stats": stats}


# ---------------------------------------------------------------- BM25 over piece ids

class BM25:
    def __init__(self, docs: list[np.ndarray], k1: float = 1.2, b: float = 0.75):
        self.N = len(docs)
        toks, dids, tfs = [], [], []
        dl = np.zeros(self.N, dtype=np.float64)
        for i, d in enumerate(docs):
            if len(d) == 0:
                continue
            u, c = np.unique(d, return_counts=True)
            toks.append(u)
            dids.append(np.full(len(u), i, dtype=np.int32))
            tfs.append(c)
            dl[i] = len(d)
        tok = np.concatenate(toks) if toks else np.zeros(0, np.int32)
        did = np.concatenate(dids) if dids else np.zeros(0, np.int32)
        tf = np.concatenate(tfs).astype(np.float64) if tfs else np.zeros(0)
        order = np.argsort(tok, kind="stable")
        self.tok, self.did, tf = tok[order], did[order], tf[order]
        self.terms, starts, df = np.unique(self.tok, return_index=True, return_counts=True)
        self.start = dict(zip(self.terms.tolist(), zip(starts.tolist(), (starts + df).tolist())))
        avgdl = dl.mean() if self.N and dl.mean() > 0 else 1.0
        idf = np.log(1 + (self.N - df + 0.5) / (df + 0.5))
        idf_per = np.repeat(idf, df)
        self.w = idf_per * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl[self.did] / avgdl))

    def scores(self, q: np.ndarray) -> np.ndarray:
        s = np.zeros(self.N, dtype=np.float64)
        for t in np.unique(q).tolist():
            se = self.start.get(t)
            if se:
                s[self.did[se[0]:se[1]]] += self.w[se[0]:se[1]]
        return s


# ---------------------------------------------------------------- per-repository preparation (cached)

KINDS = ["commit", "docstring", "symbol", "test"]


def ragged(arrs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    off = np.zeros(len(arrs) + 1, dtype=np.int64)
    if arrs:
        off[1:] = np.cumsum([len(a) for a in arrs])
    flat = np.concatenate(arrs).astype(np.int32) if arrs and off[-1] else np.zeros(0, np.int32)
    return flat, off


def prep_repo(repo: str, rows: list[dict], trees: Path, wp: WordPiecer, wp_minilm: WordPiecer | None,
              is_val: bool, args) -> dict:
    tree = trees / tag(repo)
    paths = source_files(tree)
    heads: list[str] = []
    keep: list[str] = []
    for rel in paths:
        h = read_head(tree / rel, args.doc_chars)
        if h is not None:
            keep.append(rel)
            heads.append(h)
    index = {p: i for i, p in enumerate(keep)}
    gold_added = 0
    for r in rows:  # a gold file the rule left out (> 1 MB, NUL) is still a candidate: its head is what we have
        for g in r["gold"]:
            if g not in index:
                t = read_text(tree / g, args.doc_chars * 4)
                if t is not None:
                    index[g] = len(keep)
                    keep.append(g)
                    heads.append(t[: args.doc_chars])
                    gold_added += 1
    ftok = [wp(h) for h in heads]
    out: dict = {"repo": repo, "paths": keep, "gold_added": gold_added}
    out["ftok"], out["foff"] = ragged(ftok)
    qtok, golds, pos, wins, meta = [], [], [], [], []
    full_cache: dict[str, str | None] = {}
    for r in rows:
        g = [index[x] for x in r["gold"] if x in index]
        if not g:
            continue
        q = wp(r["query"])
        items: list[int] = []
        if not is_val:
            for x in r["gold"]:
                if x not in index:
                    continue
                if r["kind"] == "docstring":
                    if x not in full_cache:
                        full_cache[x] = read_text(tree / x)
                    text = full_cache[x]
                    w = docstring_window(text, r["query"], args.doc_chars) if text else None
                    if w:
                        wt = wp(w)
                        if len(wt):
                            items.append(-(len(wins) + 1))
                            wins.append(wt)
                            continue
                if len(ftok[index[x]]):
                    items.append(index[x])
            if not items or not len(q):
                continue
        qtok.append(q)
        golds.append(np.asarray(g, dtype=np.int32))
        pos.append(np.asarray(items, dtype=np.int32))
        meta.append((r["id"], KINDS.index(r["kind"]), r["language"]))
    out["qtok"], out["qoff"] = ragged(qtok)
    out["gold"], out["goff"] = ragged(golds)
    out["meta"] = meta
    if is_val:
        if wp_minilm is not None:
            out["ftok_m"], out["foff_m"] = ragged([wp_minilm(h) for h in heads])
            out["qtok_m"], out["qoff_m"] = ragged([wp_minilm(r_q) for r_q in
                                                   [r["query"] for r in rows if any(x in index for x in r["gold"])]])
    else:
        out["pos"], out["poff"] = ragged(pos)
        out["wtok"], out["woff"] = ragged(wins)
        # hard negatives: the top --hard-pool files by BM25 over the heads' pieces, gold left out
        bm = BM25(ftok)
        hn = np.full((len(qtok), args.hard_pool), -1, dtype=np.int32)
        for i, q in enumerate(qtok):
            s = bm.scores(q)
            s[golds[i]] = -1.0
            k = min(args.hard_pool, len(s))
            if k == 0:
                continue
            top = np.argpartition(-s, k - 1)[:k] if k < len(s) else np.arange(len(s))
            top = top[np.argsort(-s[top], kind="stable")]
            top = top[s[top] > 0]
            hn[i, : len(top)] = top
        out["hard"] = hn
    return out


# ---------------------------------------------------------------- the model

def encode_rows(R: np.ndarray, flat: np.ndarray, off: np.ndarray) -> np.ndarray:
    """Normalised sums of rows (R already weighted) for the ragged texts (flat, off); an empty text gets e0."""
    n = len(off) - 1
    U = np.zeros((n, R.shape[1]), dtype=np.float32)
    lens = np.diff(off)
    nz = np.nonzero(lens)[0]
    if len(nz):
        U[nz] = np.add.reduceat(R[flat], off[:-1][nz], axis=0)
    empty = ~np.any(U != 0, axis=1)
    U[empty, 0] = 1.0
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    return U


def encode_chunked(R: np.ndarray, flat: np.ndarray, off: np.ndarray, chunk: int = 512) -> np.ndarray:
    n = len(off) - 1
    parts = []
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        o = off[s:e + 1]
        parts.append(encode_rows(R, flat[o[0]:o[-1]], o - o[0]))
    return np.concatenate(parts) if parts else np.zeros((0, R.shape[1]), np.float32)


class Batch:
    """The sparse structure of a batch of texts: unique (text, piece) pairs with counts, and the pieces it touches."""

    def __init__(self, texts: list[np.ndarray], V: int):
        lens = np.array([len(t) for t in texts], dtype=np.int64)
        self.n = len(texts)
        flat = np.concatenate(texts).astype(np.int64) if lens.sum() else np.zeros(0, np.int64)
        seg = np.repeat(np.arange(self.n, dtype=np.int64), lens)
        key, cnt = np.unique(seg * V + flat, return_counts=True)
        self.seg = key // V
        self.utok, self.inv = np.unique(key % V, return_inverse=True)
        self.cnt = cnt.astype(np.float32)[:, None]  # float32 x float64 rows stays float64 (the gradient check)
        self.seg_start = np.searchsorted(self.seg, np.arange(self.n))
        self.nonempty = np.isin(np.arange(self.n), self.seg)
        self.inv_order = np.argsort(self.inv, kind="stable")
        self.inv_start = np.searchsorted(self.inv[self.inv_order], np.arange(len(self.utok)))

    def forward(self, Rb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rb = weighted rows of self.utok. Returns (v, norms): normalised text vectors."""
        d = Rb.shape[1]
        U = np.zeros((self.n, d), dtype=Rb.dtype)
        X = Rb[self.inv] * self.cnt
        ne = np.nonzero(self.nonempty)[0]
        if len(ne):
            U[ne] = np.add.reduceat(X, self.seg_start[ne], axis=0)
        self.const = ~np.any(U != 0, axis=1)
        U[self.const, 0] = 1.0
        norms = np.linalg.norm(U, axis=1, keepdims=True)
        return U / norms, norms

    def backward(self, gv: np.ndarray, v: np.ndarray, norms: np.ndarray) -> np.ndarray:
        """d loss / d Rb from d loss / d v."""
        gu = (gv - v * np.sum(v * gv, axis=1, keepdims=True)) / norms
        gu[self.const] = 0
        gX = gu[self.seg] * self.cnt
        return np.add.reduceat(gX[self.inv_order], self.inv_start, axis=0)


def infonce(Q: np.ndarray, D: np.ndarray, mask: np.ndarray, temp: float) -> tuple[float, np.ndarray, np.ndarray]:
    """Loss = (query->docs over all B + extra columns, docs->queries over the B positives) / 2, masked entries out.
    Returns (loss, dL/dQ, dL/dD)."""
    B = Q.shape[0]
    S = (Q @ D.T) / temp
    S = np.where(mask, -np.inf, S)
    idx = np.arange(B)
    m = S.max(axis=1, keepdims=True)
    P = np.exp(S - m)
    Z = P.sum(axis=1, keepdims=True)
    P /= Z
    lq = float(np.mean(-(S[idx, idx] - m[:, 0] - np.log(Z[:, 0]))))
    G = P
    G[idx, idx] -= 1.0
    G *= 0.5 / B
    Sd = S[:, :B]
    mc = Sd.max(axis=0, keepdims=True)
    Pc = np.exp(Sd - mc)
    Zc = Pc.sum(axis=0, keepdims=True)
    Pc /= Zc
    ld = float(np.mean(-(Sd[idx, idx] - mc[0] - np.log(Zc[0]))))
    Pc[idx, idx] -= 1.0
    G[:, :B] += Pc * (0.5 / B)
    gQ = (G @ D) / temp
    gD = (G.T @ Q) / temp
    return (lq + ld) / 2, gQ.astype(Q.dtype), gD.astype(Q.dtype)


# ---------------------------------------------------------------- evaluation

def rank_metrics(S: np.ndarray, gold: list[np.ndarray]) -> np.ndarray:
    """Per query: the 0-based rank of its best gold file, ties broken by file order (a stable descending sort)."""
    ranks = np.empty(S.shape[0], dtype=np.int64)
    N = S.shape[1]
    ar = np.arange(N)
    for i in range(S.shape[0]):
        s = S[i]
        g = gold[i]
        gbest = g[np.argmax(s[g])]
        b = s[gbest]
        ranks[i] = int(np.count_nonzero(s > b) + np.count_nonzero((s == b) & (ar < gbest)))
    return ranks


def summarise(ranks: np.ndarray) -> dict:
    n = len(ranks)
    if n == 0:
        return {"n": 0}
    rr = np.where(ranks < 100, 1.0 / (ranks + 1), 0.0)
    return {"n": n, "hit@1": round(float(np.mean(ranks < 1)), 4), "hit@5": round(float(np.mean(ranks < 5)), 4),
            "hit@10": round(float(np.mean(ranks < 10)), 4), "mrr": round(float(rr.mean()), 4)}


def breakdown(ranks: np.ndarray, metas: list) -> dict:
    out = {"all": summarise(ranks), "kind": {}, "language": {}}
    kinds = np.array([m[1] for m in metas])
    langs = np.array([m[2] for m in metas])
    for k, name in enumerate(KINDS):
        if np.any(kinds == k):
            out["kind"][name] = summarise(ranks[kinds == k])
    for lang in sorted(set(langs.tolist())):
        out["language"][lang] = summarise(ranks[langs == lang])
    return out


def gold_list(p: dict) -> list[np.ndarray]:
    return [p["gold"][p["goff"][i]:p["goff"][i + 1]] for i in range(len(p["goff"]) - 1)]


def evaluate_static(R: np.ndarray, val: list[dict], minilm: bool = False) -> dict:
    ranks, metas = [], []
    sfx = "_m" if minilm else ""
    for p in val:
        D = encode_chunked(R, p["ftok" + sfx], p["foff" + sfx])
        Q = encode_chunked(R, p["qtok" + sfx], p["qoff" + sfx])
        ranks.append(rank_metrics(Q @ D.T, gold_list(p)))
        metas += p["meta"]
    return breakdown(np.concatenate(ranks) if ranks else np.zeros(0, np.int64), metas)


def evaluate_bm25(val: list[dict]) -> dict:
    ranks, metas = [], []
    for p in val:
        docs = [p["ftok"][p["foff"][j]:p["foff"][j + 1]] for j in range(len(p["foff"]) - 1)]
        bm = BM25(docs)
        qs = [p["qtok"][p["qoff"][i]:p["qoff"][i + 1]] for i in range(len(p["qoff"]) - 1)]
        S = np.stack([bm.scores(q) for q in qs]) if qs else np.zeros((0, len(docs)))
        ranks.append(rank_metrics(S, gold_list(p)))
        metas += p["meta"]
    return breakdown(np.concatenate(ranks) if ranks else np.zeros(0, np.int64), metas)


# ---------------------------------------------------------------- table I/O

def read_table(path: Path) -> tuple[np.ndarray, dict]:
    buf = path.read_bytes()
    nl = buf.index(b"\n")
    head = buf[:nl]
    if not head.startswith(MAGIC):
        sys.exit(f"{path} is not a quarry static table")
    meta = json.loads(head[len(MAGIC):])
    body = np.frombuffer(buf[nl + 1:], dtype="<f2" if meta.get("dtype") == "float16" else "<f4")
    assert body.size == meta["dims"] * meta["vocabSize"], "table cut short"
    return body.reshape(meta["vocabSize"], meta["dims"]).astype(np.float32), meta


def write_table(path: Path, rows: np.ndarray, vocab: list[str], source: str) -> str:
    head = {"dims": int(rows.shape[1]), "vocabSize": int(rows.shape[0]), "source": source, "dtype": "float16",
            "vocab": vocab}
    data = MAGIC + json.dumps(head, separators=(",", ":")).encode() + b"\n" + \
        np.ascontiguousarray(rows, dtype="<f2").tobytes()
    atomic_write(path, data)
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="/work/train-data/v2/corpus.jsonl")
    ap.add_argument("--trees", default="/work/train-data/v2/trees")
    ap.add_argument("--work", default="/work/train-data/v2/static-v2/full")
    ap.add_argument("--out", default=None, help="the table (default <work>/code-v2.bin)")
    ap.add_argument("--code-v1", default=str(ROOT / "models/static/code-v1.bin"))
    ap.add_argument("--val-repos", type=int, default=20)
    ap.add_argument("--val-min-rows", type=int, default=100)
    ap.add_argument("--train-repos", type=int, default=0, help="train on this many repositories only (0: all)")
    ap.add_argument("--vocab-words", type=int, default=60_000)
    ap.add_argument("--vocab-sub", type=int, default=8_000)
    ap.add_argument("--vocab-files", type=int, default=2_000, help="files per repository read for the vocabulary")
    ap.add_argument("--vocab-chars", type=int, default=32_000)
    ap.add_argument("--vocab-queries", type=int, default=0,
                    help="also count the training queries' words, this many times each (0: the trees only)")
    ap.add_argument("--doc-chars", type=int, default=2_000)
    ap.add_argument("--hard-pool", type=int, default=10)
    ap.add_argument("--hard", type=int, default=2, help="hard negatives per query per step")
    ap.add_argument("--dims", type=int, default=256)
    ap.add_argument("--init", choices=["code-v1", "random"], default="code-v1")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--steps", type=int, default=0, help="stop after this many steps in all (overrides --epochs)")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--lr-weight", type=float, default=1e-2, help="Adam lr of the per-piece log-weights (0: fixed)")
    ap.add_argument("--temp", type=float, default=0.05)
    ap.add_argument("--ckpt-every", type=int, default=500)
    ap.add_argument("--eval-every", type=int, default=500)
    ap.add_argument("--patience", type=int, default=4, help="stop after this many evaluations without a better MRR")
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    trees = Path(args.trees)
    out_path = Path(args.out) if args.out else work / "code-v2.bin"
    t_start = time.time()

    # -- corpus and split
    rows_by_repo: dict[str, list[dict]] = defaultdict(list)
    languages: dict[str, str] = {}
    with open(args.corpus) as f:
        for line in f:
            r = json.loads(line)
            rows_by_repo[r["repo"]].append(r)
            languages[r["repo"]] = r["language"]
    split_path = work / "split.json"
    if split_path.exists():
        split = json.loads(split_path.read_text())
    else:
        split = make_split(rows_by_repo, languages, args)
        atomic_write(split_path, json.dumps(split, indent=1).encode())
    log(f"corpus: {sum(map(len, rows_by_repo.values()))} rows, {len(rows_by_repo)} repositories; training on "
        f"{len(split['train'])}, held out {len(split['val'])}: "
        + ", ".join(f"{r} ({languages[r]})" for r in split["val"]))

    # -- vocabulary (from the training trees only)
    vocab_path = work / "vocab.json"
    if vocab_path.exists():
        V_info = json.loads(vocab_path.read_text())
    else:
        V_info = learn_vocab(trees, split["train"], args,
                             {r: [x["query"] for x in rows_by_repo[r]] for r in split["train"]})
        atomic_write(vocab_path, json.dumps(V_info).encode())
    vocab: list[str] = V_info["vocab"]
    V = len(vocab)
    vocab_sha = hashlib.sha256("\n".join(vocab).encode()).hexdigest()
    wp = WordPiecer({p: i for i, p in enumerate(vocab)})
    minilm_vocab = json.loads((ROOT / "models/all-MiniLM-L6-v2/tokenizer.json").read_text())["model"]["vocab"]
    wp_m = WordPiecer(minilm_vocab)

    # -- per-repository preparation (cached per repository; keyed by the vocabulary)
    prep_dir = work / "prep"
    prep_dir.mkdir(exist_ok=True)
    t0 = time.time()
    tok_time = 0.0

    def load_prep(repo: str, is_val: bool) -> dict:
        nonlocal tok_time
        path = prep_dir / f"{tag(repo)}.pkl"
        key = (PREP_VERSION, vocab_sha[:16], args.doc_chars, args.hard_pool, is_val)
        if path.exists():
            p = pickle.loads(path.read_bytes())
            if p.get("key") == key:
                return p
        t = time.time()
        p = prep_repo(repo, rows_by_repo[repo], trees, wp, wp_m if is_val else None, is_val, args)
        p["key"] = key
        p["seconds"] = time.time() - t
        tok_time += p["seconds"]
        atomic_write(path, pickle.dumps(p, protocol=pickle.HIGHEST_PROTOCOL))
        return p

    val = [load_prep(r, True) for r in split["val"]]
    log(f"held out: {sum(len(p['meta']) for p in val)} queries over {sum(len(p['paths']) for p in val)} files "
        f"({time.time() - t0:.0f}s)")
    train = []
    for k, r in enumerate(split["train"]):
        p = load_prep(r, False)
        # keep only the files a batch can use (positives and hard negatives)
        need = np.unique(np.concatenate([p["pos"][p["pos"] >= 0], p["hard"][p["hard"] >= 0].ravel()]))
        remap = np.full(len(p["foff"]) - 1, -1, dtype=np.int32)
        remap[need] = np.arange(len(need), dtype=np.int32)
        ft = [p["ftok"][p["foff"][j]:p["foff"][j + 1]] for j in need]
        pos = np.where(p["pos"] >= 0, remap[np.maximum(p["pos"], 0)], p["pos"])
        hard = np.where(p["hard"] >= 0, remap[np.maximum(p["hard"], 0)], -1)
        gold = np.where(remap[p["gold"]] >= 0, remap[p["gold"]], -2)  # -2: a gold no batch shows
        train.append({"repo": r, "files": ft, "q": [p["qtok"][p["qoff"][i]:p["qoff"][i + 1]]
                                                     for i in range(len(p["qoff"]) - 1)],
                      "goff": p["goff"], "gold": gold, "pos": pos, "poff": p["poff"], "hard": hard,
                      "wins": [p["wtok"][p["woff"][i]:p["woff"][i + 1]] for i in range(len(p["woff"]) - 1)],
                      "kinds": [m[1] for m in p["meta"]]})
        if (k + 1) % 25 == 0:
            log(f"prep: {k + 1}/{len(split['train'])} training repositories ({time.time() - t0:.0f}s)")
    n_rows = sum(len(t["q"]) for t in train)
    n_files = sum(len(t["files"]) for t in train)
    log(f"training: {n_rows} pairs, {n_files} files kept; prep {time.time() - t0:.0f}s "
        f"(of which tokenising + BM25 now {tok_time:.0f}s)")

    # -- baselines (cached)
    base_path = work / "baselines.json"
    if base_path.exists():
        baselines = json.loads(base_path.read_text())
    else:
        baselines = {"bm25_code_pieces": evaluate_bm25(val)}
        if Path(args.code_v1).exists():
            rows_v1, _ = read_table(Path(args.code_v1))
            baselines["code_v1"] = evaluate_static(rows_v1, val, minilm=True)
        atomic_write(base_path, json.dumps(baselines, indent=1).encode())
    for name, b in baselines.items():
        log(f"baseline {name}: {json.dumps(b['all'])}")

    # -- model init
    rng0 = np.random.default_rng(args.seed)
    freq = np.asarray(V_info["freq"], dtype=np.float64)
    p_tok = freq / max(freq.sum(), 1.0)
    sif = 1e-4 / (1e-4 + p_tok)
    if args.init == "code-v1":
        rows_v1, _ = read_table(Path(args.code_v1))
        E = np.zeros((V, args.dims), dtype=np.float32)
        d1 = min(args.dims, rows_v1.shape[1])
        scale = float(np.median(np.linalg.norm(rows_v1[np.abs(rows_v1).sum(1) > 0], axis=1)))
        for i, piece in enumerate(vocab):
            if i == 0:
                continue
            ids = wp_m.piece(piece[2:]) if piece.startswith("##") else wp_m.piece(piece)
            if piece.startswith("##") and ("##" + piece[2:]) in minilm_vocab:
                ids = [minilm_vocab["##" + piece[2:]]]
            vec = rows_v1[ids].sum(0) if ids else np.zeros(rows_v1.shape[1], np.float32)
            if not np.any(vec):
                vec = rng0.standard_normal(rows_v1.shape[1]).astype(np.float32) * scale / math.sqrt(rows_v1.shape[1])
            E[i, :d1] = vec[:d1]
        if args.dims > d1:
            E[1:, d1:] = rng0.standard_normal((V - 1, args.dims - d1)).astype(np.float32) * scale * 0.05 / math.sqrt(
                args.dims)
        A = np.zeros(V, dtype=np.float32)
    else:
        E = rng0.standard_normal((V, args.dims)).astype(np.float32) / math.sqrt(args.dims)
        A = np.log(sif).astype(np.float32)
    E[0] = 0

    # -- training state (resume from the last checkpoint)
    per_epoch = n_rows // args.batch
    total_steps = args.steps or int(math.ceil(args.epochs * per_epoch))
    state = {"step": 0, "best_mrr": -1.0, "best_step": 0, "bad": 0, "history": [], "vocab_sha": vocab_sha}
    mE = np.zeros_like(E)
    vE = np.zeros_like(E)
    mA = np.zeros_like(A)
    vA = np.zeros_like(A)
    ckpts = sorted(work.glob("ckpt-*.npz"), key=lambda p: int(p.stem.split("-")[1]))
    if ckpts:
        z = np.load(ckpts[-1])
        E, A, mE, vE, mA, vA = z["E"], z["A"], z["mE"], z["vE"], z["mA"], z["vA"]
        state = json.loads(str(z["state"]))
        if state.get("vocab_sha") != vocab_sha or E.shape != (V, args.dims):
            sys.exit(f"{ckpts[-1]} was trained with another vocabulary or --dims: use another --work")
        log(f"resumed from {ckpts[-1].name} (step {state['step']})")

    def eval_now(step: int) -> dict:
        R = np.exp(A)[:, None] * E
        R[0] = 0
        m = evaluate_static(R, val)
        state["history"].append({"step": step, "metrics": m})
        log(f"eval step {step}: {json.dumps(m['all'])} kinds "
            + " ".join(f"{k}={v['mrr']}" for k, v in m["kind"].items()))
        if m["all"]["mrr"] > state["best_mrr"]:
            state["best_mrr"], state["best_step"], state["bad"] = m["all"]["mrr"], step, 0
            np.savez(work / "best.tmp.npz", E=E, A=A)
            (work / "best.tmp.npz").replace(work / "best.npz")
        else:
            state["bad"] += 1
        return m

    def checkpoint(step: int) -> None:
        path = work / f"ckpt-{step}.npz"
        tmp = work / f"ckpt-{step}.tmp.npz"
        np.savez(tmp, E=E, A=A, mE=mE, vE=vE, mA=mA, vA=vA, state=json.dumps(state))
        tmp.replace(path)
        for old in sorted(work.glob("ckpt-*.npz"), key=lambda p: int(p.stem.split("-")[1]))[:-2]:
            if old != path and not old.name.endswith(".tmp.npz"):
                old.unlink()

    if state["step"] == 0 and not state["history"]:
        eval_now(0)

    # the sample order: a permutation per epoch from (seed, epoch); a step's draws from (seed, step)
    index = np.array([(ri, qi) for ri, t in enumerate(train) for qi in range(len(t["q"]))], dtype=np.int64)
    b1, b2, eps = 0.9, 0.999, 1e-8
    log(f"training: {total_steps} steps of {args.batch} (+{args.hard} hard negatives each), "
        f"{per_epoch} steps an epoch; vocab {V} x {args.dims}")
    t_run = time.time()
    steps_run = 0
    loss_avg = None
    timing = defaultdict(float)
    while state["step"] < total_steps:
        step = state["step"]
        epoch, within = divmod(step, per_epoch)
        perm = np.random.default_rng([args.seed, epoch]).permutation(len(index))
        pick = index[perm[within * args.batch:(within + 1) * args.batch]]
        rs = np.random.default_rng([args.seed, 1_000_003, step])
        t_a = time.time()
        qs, docs, dkeys, gkeys = [], [], [], []
        negs, nkeys = [], []
        for ri, qi in pick.tolist():
            t = train[ri]
            qs.append(t["q"][qi])
            pos = t["pos"][t["poff"][qi]:t["poff"][qi + 1]]
            j = int(pos[rs.integers(len(pos))])
            base = ri << 32
            if j >= 0:
                docs.append(t["files"][j])
                dkeys.append(base | j)
            else:
                docs.append(t["wins"][-j - 1])
                dkeys.append(-(base | (-j)))  # a window is only itself
            g = t["gold"][t["goff"][qi]:t["goff"][qi + 1]]
            gkeys.append([base | int(x) for x in g if x >= 0])
            pool = t["hard"][qi]
            pool = pool[pool >= 0]
            if len(pool) and args.hard:
                for h in rs.choice(pool, size=min(args.hard, len(pool)), replace=False).tolist():
                    negs.append(t["files"][h])
                    nkeys.append(base | h)
        B = len(qs)
        allkeys = np.array(dkeys + nkeys, dtype=np.int64)
        mask = np.zeros((B, len(allkeys)), dtype=bool)
        for i, g in enumerate(gkeys):
            if g:
                mask[i] = np.isin(allkeys, g)
        mask[np.arange(B), np.arange(B)] = False
        batch = Batch(qs + docs + negs, V)
        timing["batch"] += time.time() - t_a
        t_b = time.time()
        w = np.exp(A[batch.utok])
        Eb = E[batch.utok]
        Rb = Eb * w[:, None]
        v, norms = batch.forward(Rb)
        loss, gQ, gD = infonce(v[:B], v[B:], mask, args.temp)
        gRb = batch.backward(np.concatenate([gQ, gD]), v, norms)
        gE = gRb * w[:, None]
        gA = np.sum(Eb * gRb, axis=1) * w
        timing["fwd_bwd"] += time.time() - t_b
        t_c = time.time()
        # lazy Adam on the touched rows
        u = batch.utok
        keep = u != 0
        u, gE, gA = u[keep], gE[keep], gA[keep]
        tt = step + 1
        c1, c2 = 1 - b1 ** tt, 1 - b2 ** tt
        m_ = b1 * mE[u] + (1 - b1) * gE
        v_ = b2 * vE[u] + (1 - b2) * gE * gE
        mE[u], vE[u] = m_, v_
        E[u] -= args.lr * (m_ / c1) / (np.sqrt(v_ / c2) + eps)
        if args.lr_weight > 0:
            ma = b1 * mA[u] + (1 - b1) * gA
            va = b2 * vA[u] + (1 - b2) * gA * gA
            mA[u], vA[u] = ma, va
            A[u] -= args.lr_weight * (ma / c1) / (np.sqrt(va / c2) + eps)
        timing["adam"] += time.time() - t_c
        state["step"] = step + 1
        steps_run += 1
        loss_avg = loss if loss_avg is None else 0.98 * loss_avg + 0.02 * loss
        if state["step"] % 50 == 0 or state["step"] == total_steps:
            el = time.time() - t_run
            log(f"step {state['step']}/{total_steps} loss {loss_avg:.4f} "
                f"{steps_run / el:.3f} steps/s {steps_run * args.batch / el:.1f} rows/s "
                f"(batch {timing['batch'] / steps_run:.3f}s fwd+bwd {timing['fwd_bwd'] / steps_run:.3f}s "
                f"adam {timing['adam'] / steps_run:.3f}s a step)")
        stop = False
        if state["step"] % args.eval_every == 0 or state["step"] == total_steps:
            eval_now(state["step"])
            if args.patience and state["bad"] >= args.patience:
                log("early stop")
                stop = True
        if state["step"] % args.ckpt_every == 0 or state["step"] == total_steps or stop:
            checkpoint(state["step"])
        if stop:
            break
    el = time.time() - t_run
    speed = {"steps": steps_run, "seconds": round(el, 1),
             "steps_per_s": round(steps_run / el, 3) if steps_run else None,
             "rows_per_s": round(steps_run * args.batch / el, 1) if steps_run else None,
             "per_step": {k: round(v / max(steps_run, 1), 4) for k, v in timing.items()}}

    # -- export the best rows, float16, and evaluate the file as quarry would read it
    z = np.load(work / "best.npz") if (work / "best.npz").exists() else {"E": E, "A": A}
    R = np.exp(z["A"])[:, None] * z["E"]
    R[0] = 0
    sha = write_table(out_path, R, vocab, f"code-v2:vocab-{vocab_sha[:16]}:step-{state['best_step']}")
    rows16, meta = read_table(out_path)
    final = evaluate_static(rows16, val)
    report = {"sha256": sha, "bytes": out_path.stat().st_size, "vocab": V, "dims": args.dims,
              "vocab_stats": V_info["stats"], "split": split, "best_step": state["best_step"],
              "final_float16": final, "baselines": baselines, "speed_this_run": speed,
              "history": [{"step": h["step"], **h["metrics"]["all"]} for h in state["history"]],
              "args": {k: v for k, v in vars(args).items()}, "wall_seconds": round(time.time() - t_start)}
    atomic_write(out_path.with_suffix(".json"), json.dumps(report, indent=1).encode())
    log(f"wrote {out_path}: {report['bytes']} bytes, sha256 {sha}")
    log(f"held-out (float16 file, step {state['best_step']}): {json.dumps(final['all'])}")
    for name, b in [("v2", final)] + list(baselines.items()):
        log(f"  {name:18s} kinds: " + "  ".join(f"{k} {v['mrr']:.3f} ({v['n']})" for k, v in b["kind"].items()))
        log(f"  {name:18s} langs: " + "  ".join(f"{k} {v['mrr']:.3f}" for k, v in b["language"].items()))
    log(f"speed: {json.dumps(speed)}")


if __name__ == "__main__":
    main()
