/**
 * Embedding throughput (numbers go to docs/benchmarks.md; not a test).
 *
 *   node --import tsx bench/embed-bench.ts <indexed-corpus-dir> [--n 512] [--aye 64]
 *
 * Over the same chunks of an existing index, in one run: quarry's pipeline (tokenise, sort by length, batches of 8,
 * pooling, on the low-priority worker that indexing uses), a bare onnxruntime-node loop over the same model with the
 * same batching and the tokens prepared in advance (the machine's limit), and Aye Chat's way (every chunk padded to
 * 256 tokens, one chunk per call).
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Tokenizer } from '@huggingface/tokenizers';
import Database from 'better-sqlite3';
import * as ort from 'onnxruntime-node';
import { createLocalEmbedder } from '../src/embed/local.ts';
import { bundledModelDir, findWeights } from '../src/embed/models.ts';
import { createWorkerEmbedder } from '../src/embed/worker-pool.ts';
import { chunkText } from '../src/indexing/embedding.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { n: { type: 'string', default: '512' }, aye: { type: 'string', default: '64' } },
});
const corpus = resolve(positionals[0] ?? '.');
const weights = findWeights();
if (!weights) throw new Error('no weights: run scripts/fetch-test-weights.sh');
const n = Number(values.n);
const threads = availableParallelism();

const db = new Database(join(corpus, '.quarry', 'index.db'), { readonly: true });
const total = db.prepare('SELECT COUNT(*) FROM chunks').pluck().get() as number;
const step = Math.max(1, Math.floor(total / n));
const rows = db
  .prepare(`SELECT text, symbol, container FROM chunks WHERE id % ? = 0 ORDER BY id LIMIT ?`)
  .all(step, n) as Array<{ text: string; symbol: string | null; container: string | null }>;
db.close();
const texts = rows.map(chunkText);

const dir = bundledModelDir();
const tokenizer = new Tokenizer(
  JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')),
  JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')),
);
const encode = (t: string) => {
  const ids = tokenizer.encode(t.slice(0, 2048)).ids;
  return ids.length > 256 ? [...ids.slice(0, 255), ids.at(-1)!] : ids;
};
const session = await ort.InferenceSession.create(weights, {
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  graphOptimizationLevel: 'all',
});
const run = async (batch: number[][], pad?: number) => {
  const len = pad ?? Math.max(...batch.map((b) => b.length));
  const ids = new BigInt64Array(batch.length * len);
  const mask = new BigInt64Array(batch.length * len);
  for (const [i, seq] of batch.entries())
    for (const [j, id] of seq.entries()) {
      ids[i * len + j] = BigInt(id);
      mask[i * len + j] = 1n;
    }
  const dims = [batch.length, len];
  await session.run({
    input_ids: new ort.Tensor('int64', ids, dims),
    attention_mask: new ort.Tensor('int64', mask, dims),
    token_type_ids: new ort.Tensor('int64', new BigInt64Array(batch.length * len), dims),
  });
};

// bare loop: tokens prepared beforehand, sorted by length, batches of 8
const encoded = texts.map(encode).sort((a, b) => a.length - b.length);
await run(encoded.slice(0, 8));
let t = performance.now();
for (let i = 0; i < encoded.length; i += 8) await run(encoded.slice(i, i + 8));
const bare = texts.length / ((performance.now() - t) / 1000);

// Aye Chat's way: one chunk per call, padded to 256
const ayeN = Math.min(Number(values.aye), texts.length);
t = performance.now();
for (const seq of encoded.slice(0, ayeN)) await run([seq], 256);
const aye = ayeN / ((performance.now() - t) / 1000);
await session.release();

// quarry: in this thread, and on the indexing worker (what `quarry index` runs)
const local = await createLocalEmbedder({ weights, threads });
await local.embed(texts.slice(0, 8), 'document');
t = performance.now();
await local.embed(texts, 'document');
const inThread = texts.length / ((performance.now() - t) / 1000);
const worker = createWorkerEmbedder({ local, weights, workers: 1, threads });
await worker.embed(texts.slice(0, 8), 'document');
t = performance.now();
await worker.embed(texts, 'document');
const onWorker = texts.length / ((performance.now() - t) / 1000);
await worker.close();

const avgTokens = encoded.reduce((s, e) => s + e.length, 0) / encoded.length;
console.log(`| pipeline (${texts.length} chunks, ${avgTokens.toFixed(0)} tokens on average, ${threads} threads) | chunks/s | vs bare loop |
| --- | --- | --- |
| bare onnxruntime-node loop (tokens prepared, sorted, batches of 8) | ${bare.toFixed(1)} | 100% |
| quarry, in-thread embedder | ${inThread.toFixed(1)} | ${((inThread / bare) * 100).toFixed(0)}% |
| quarry, indexing worker (nice 10) | ${onWorker.toFixed(1)} | ${((onWorker / bare) * 100).toFixed(0)}% |
| Aye Chat's way (padded to 256, one per call; ${ayeN} chunks) | ${aye.toFixed(1)} | ${((aye / bare) * 100).toFixed(0)}% (quarry ${(onWorker / aye).toFixed(2)}×) |`);
