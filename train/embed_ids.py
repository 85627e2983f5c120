"""Computes quarry's all-MiniLM-L6-v2 vectors on a GPU (or this CPU) for texts listed by `train/export_texts.ts`.

The shipped model is int8 by weights only: each matrix is stored as int8 with one scale per row or column and turned
back into floats inside the graph, so the network it runs is BERT with those dequantized weights. `weights` reads
them out of quarry's ONNX file by following each matrix to the bias it is added to (whose name is BERT's), and
writes them, still int8, to an .npz; `embed` builds that BERT in PyTorch (float32, no TF32), runs the token ids,
mean-pools over each text's tokens and L2-normalises, as quarry does. `train/import_vectors.ts` puts the result into
the user's embedding cache and compares the check sample against the vectors quarry made itself.

  python train/embed_ids.py weights --onnx ~/.cache/quarry/models/all-MiniLM-L6-v2/model.onnx --out minilm-w8.npz
  python train/embed_ids.py embed --weights minilm-w8.npz --config config.json --ids texts.ids --out vectors \
      [--parts 2] [--fp16]
"""
import argparse
import json
import sys
import time

import numpy as np


def weights(onnx_path, out):
    import onnx
    from onnx import numpy_helper

    m = onnx.load(onnx_path)
    g = m.graph
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    consumers = {}
    for n in g.node:
        for x in n.input:
            consumers.setdefault(x, []).append(n)
    arrays = {}

    # the exporter's prefix before BERT's own names (`inner.` for quarry's MiniLM, `bert.` for a fine-tuned export)
    prefix = next(n[: n.index("embeddings.")] for n in inits if "embeddings.word_embeddings" in n)

    def hf(name):
        return name[len(prefix):] if name.startswith(prefix) else name

    # float tensors that BERT names itself: biases, LayerNorms, the token type table
    for name, a in inits.items():
        if name.startswith(prefix) and a.dtype == np.float32 and not name.endswith("_scale"):
            arrays[hf(name)] = a
    # each int8 matrix: `<w>_q` and `<w>_scale` make `<w>` through Cast and Mul
    for name in inits:
        if not name.endswith("_q"):
            continue
        w = name[:-2]
        q, scale = inits[name], inits[w + "_scale"]
        if w.startswith(prefix) and "embeddings." in w:  # an embedding table keeps its name
            key = hf(w)
        else:  # a MatMul weight [in, out]: name it by the bias added to its product
            mm = [n for n in consumers.get(w, []) if n.op_type == "MatMul"]
            assert len(mm) == 1, w
            adds = [n for n in consumers.get(mm[0].output[0], []) if n.op_type == "Add"]
            bias = [x for n in adds for x in n.input if x.endswith(".bias")]
            assert len(bias) == 1, (w, bias)
            key = hf(bias[0])[: -len(".bias")] + ".weight"
            q, scale = q.T, scale.T  # torch's Linear keeps [out, in]
        arrays[key + ".q"] = np.ascontiguousarray(q)
        arrays[key + ".scale"] = np.ascontiguousarray(scale).astype(np.float32)
    np.savez(out, **arrays)
    print(f"{out}: {len(arrays)} arrays, {sum(1 for k in arrays if k.endswith('.q'))} int8 matrices", file=sys.stderr)


def read_ids(path):
    buf = np.fromfile(path, dtype="<u2")
    seqs, at = [], 0
    while at < len(buf):
        n = int(buf[at])
        seqs.append(buf[at + 1 : at + 1 + n].astype(np.int64))
        at += 1 + n
    return seqs


def model_from(weights_path, config_path, device):
    import torch
    from transformers import BertConfig, BertModel

    cfg = BertConfig(**json.load(open(config_path)))
    model = BertModel(cfg, add_pooling_layer=False)
    z = np.load(weights_path)
    state = {}
    for k in z.files:
        if k.endswith(".scale"):
            continue
        if k.endswith(".q"):
            base = k[:-2]
            state[base] = torch.from_numpy(z[k].astype(np.float32) * z[base + ".scale"])
        else:
            state[k] = torch.from_numpy(z[k])
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    assert not missing and not unexpected, (missing, unexpected)
    return model.to(device).eval()


def embed(args):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = model_from(args.weights, args.config, device)
    seqs = read_ids(args.ids)
    if args.limit:
        seqs = seqs[: args.limit]
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    out = np.zeros((len(seqs), model.config.hidden_size), dtype=np.float32)
    t0 = time.time()
    tokens = 0
    with torch.inference_mode():
        for s in range(0, len(order), args.batch):
            idx = order[s : s + args.batch]
            L = max(len(seqs[i]) for i in idx)
            ids = torch.zeros((len(idx), L), dtype=torch.long)
            mask = torch.zeros((len(idx), L), dtype=torch.long)
            for r, i in enumerate(idx):
                ids[r, : len(seqs[i])] = torch.from_numpy(seqs[i])
                mask[r, : len(seqs[i])] = 1
                tokens += len(seqs[i])
            ids, mask = ids.to(device), mask.to(device)
            hidden = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
            m = mask.unsqueeze(-1).to(hidden.dtype)
            v = (hidden * m).sum(1) / m.sum(1)
            v = v / v.norm(dim=1, keepdim=True).clamp_min(1e-12)
            out[idx] = v.float().cpu().numpy()
    dt = time.time() - t0
    print(f"{len(seqs)} texts, {tokens} tokens in {dt:.1f} s on {device} ({tokens / dt:.0f} tokens/s)", file=sys.stderr)
    arr = out.astype(np.float16) if args.fp16 else out
    parts = np.array_split(np.arange(len(seqs)), args.parts)
    for p, rows in enumerate(parts):
        path = f"{args.out}.{p}.npy"
        np.save(path, arr[rows])
        print(f"{path}: rows {rows[0]}-{rows[-1]}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("weights")
    p.add_argument("--onnx", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("embed")
    p.add_argument("--weights", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--ids", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--parts", type=int, default=1)
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--fp16", action="store_true")
    a = ap.parse_args()
    if a.cmd == "weights":
        weights(a.onnx, a.out)
    else:
        embed(a)


if __name__ == "__main__":
    main()
