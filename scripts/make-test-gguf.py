"""Writes a tiny llama-architecture GGUF model for quarry's in-process GGUF test.

No model hub is reachable from CI, and no registry package ships a GGUF model; PyPI's `gguf` package (llama.cpp's own
GGUF writer) does ship the format. This makes a 2-layer, 64-wide llama with seeded random weights and a byte-level
SentencePiece vocabulary: it answers gibberish, but it is a real model that llama.cpp loads, tokenizes for, and
generates from, which is what the test checks. The output is deterministic (the sha256 is pinned by the caller).

usage: python make-test-gguf.py OUT.gguf
"""
import sys

import gguf
import numpy as np

out = sys.argv[1]
# the legacy generator's integer stream is the same in every numpy version; scaled integers are exact in float32
rng = np.random.RandomState(20261122)
n_embd, n_head, n_layer, n_ff, n_ctx = 64, 4, 2, 128, 4096

# vocabulary: <unk> <s> </s>, the 256 byte tokens (so any text can be tokenized), and a few words
tokens = [b"<unk>", b"<s>", b"</s>"] + [f"<0x{i:02X}>".encode() for i in range(256)]
words = ["\u2581the", "\u2581code", "\u2581file", "\u2581is", "\u2581in", "\u2581a", "\u2581function", "\u2581quarry"]
tokens += [w.encode() for w in words]
scores = [0.0, 0.0, 0.0] + [-1000.0] * 256 + [-float(i + 1) for i in range(len(words))]
types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256 + [
    gguf.TokenType.NORMAL
] * len(words)
n_vocab = len(tokens)

w = gguf.GGUFWriter(out, "llama")
w.add_name("quarry-test-tiny-llama")
w.add_context_length(n_ctx)
w.add_embedding_length(n_embd)
w.add_block_count(n_layer)
w.add_feed_forward_length(n_ff)
w.add_head_count(n_head)
w.add_head_count_kv(n_head)
w.add_rope_dimension_count(n_embd // n_head)
w.add_layer_norm_rms_eps(1e-5)
w.add_file_type(gguf.LlamaFileType.ALL_F32)
w.add_tokenizer_model("llama")
w.add_token_list(tokens)
w.add_token_scores(scores)
w.add_token_types(types)
w.add_bos_token_id(1)
w.add_eos_token_id(2)
w.add_unk_token_id(0)
w.add_add_bos_token(True)
w.add_chat_template(
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def t(*shape):
    return (rng.randint(-1000, 1001, size=shape) / 50000).astype(np.float32)


w.add_tensor("token_embd.weight", t(n_vocab, n_embd))
w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
w.add_tensor("output.weight", t(n_vocab, n_embd))
for i in range(n_layer):
    p = f"blk.{i}."
    w.add_tensor(p + "attn_norm.weight", np.ones(n_embd, dtype=np.float32))
    w.add_tensor(p + "attn_q.weight", t(n_embd, n_embd))
    w.add_tensor(p + "attn_k.weight", t(n_embd, n_embd))
    w.add_tensor(p + "attn_v.weight", t(n_embd, n_embd))
    w.add_tensor(p + "attn_output.weight", t(n_embd, n_embd))
    w.add_tensor(p + "ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
    w.add_tensor(p + "ffn_gate.weight", t(n_ff, n_embd))
    w.add_tensor(p + "ffn_up.weight", t(n_ff, n_embd))
    w.add_tensor(p + "ffn_down.weight", t(n_embd, n_ff))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
