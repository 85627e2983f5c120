/**
 * Hybrid query latency with 100k chunk vectors (numbers go to docs/benchmarks.md; not a test).
 *
 *   node --import tsx bench/hybrid-bench.ts <lexically-indexed-corpus> [--vectors 100000] [--queries 100]
 *
 * Copies the corpus's index, gives it the installed model's id and 100k unit vectors (one per real chunk, the rest
 * on ids no chunk has: they are scanned like any other vector but never joined), then times `search` in hybrid
 * mode with real query embeddings.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { DEFAULT_CONFIG } from '../src/config/config.ts';
import { createLocalEmbedder } from '../src/embed/local.ts';
import { findWeights } from '../src/embed/models.ts';
import { search } from '../src/search/search.ts';
import { openSqliteStore } from '../src/store/sqlite/index.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { vectors: { type: 'string', default: '100000' }, queries: { type: 'string', default: '100' } },
});
const src = join(resolve(positionals[0] ?? '.'), '.quarry', 'index.db');
const dir = mkdtempSync(join(tmpdir(), 'quarry-hybrid-'));
const dbPath = join(dir, 'index.db');
const raw = new Database(src, { readonly: true });
await raw.backup(dbPath);
raw.close();

const weights = findWeights();
if (!weights) throw new Error('no weights: run scripts/fetch-test-weights.sh');
const embedder = await createLocalEmbedder({ weights, threads: 1 });
const store = openSqliteStore(dbPath);
await store.vectors!.useEmbedder(embedder.id, embedder.dimension);
const want = Number(values.vectors);
const db = new Database(dbPath);
const ids = db.prepare('SELECT id FROM chunks ORDER BY id').pluck().all() as number[];
const maxId = ids.at(-1) ?? 0;
let seed = 42;
const rand = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return (seed / 2 ** 31) * 2 - 1;
};
const unit = () => {
  const v = new Float32Array(384).map(rand);
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};
const batch: Array<{ chunkId: number; vector: Float32Array }> = [];
for (let i = 0; i < want; i++)
  batch.push({ chunkId: i < ids.length ? ids[i]! : maxId + 1 + i, vector: unit() });
db.close();
// straight into the vector table: these are synthetic, not tied to files
const vdb = new Database(dbPath);
(await import('sqlite-vec')).load(vdb);
const ins = vdb.prepare('INSERT INTO chunk_vectors (chunk_id, embedding) VALUES (?, ?)');
vdb.transaction(() => {
  for (const b of batch) ins.run(BigInt(b.chunkId), b.vector);
})();
vdb.close();

const phrases = [
  'how is the configuration loaded',
  'retry the request after a failure',
  'where are errors logged',
  'close the connection when done',
  'validate user input',
  'cache the result',
  'parse command line arguments',
  'handle a timeout',
  'read the file from disk',
  'convert the value to a string',
];
const times: number[] = [];
const embedTimes: number[] = [];
for (let i = 0; i < Number(values.queries); i++) {
  const q = `${phrases[i % phrases.length]} ${i}`;
  const t0 = performance.now();
  const [v] = await embedder.embed([q], 'query');
  const t1 = performance.now();
  await search(store, DEFAULT_CONFIG, q, { mode: 'hybrid', queryVector: v! });
  const t2 = performance.now();
  embedTimes.push(t1 - t0);
  times.push(t2 - t0);
}
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.floor((p / 100) * (xs.length - 1))]!;
console.log(`| hybrid query, ${want} chunk vectors (${ids.length} real chunks), ${times.length} queries | p50 | p95 |
| --- | --- | --- |
| whole query (embed + lexical + dense + fusion) | ${pct(times, 50).toFixed(1)} ms | ${pct(times, 95).toFixed(1)} ms |
| of which the query embedding | ${pct(embedTimes, 50).toFixed(1)} ms | ${pct(embedTimes, 95).toFixed(1)} ms |`);
await store.close();
await embedder.close();
