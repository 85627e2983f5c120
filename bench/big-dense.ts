// Dense search through the SQLite driver on a large embedded index: the sign codes (the default past 60k chunk
// vectors) against the exact scan, on the same store file, and hybrid search as a user runs it.
//
//   QUARRY_EMBED=static quarry index BIG     (embeds every chunk; bench/big-corpus.ts builds BIG)
//   QUARRY_EMBED=static node --import tsx bench/big-dense.ts BIG [--queries 100]
//
// Queries: the practice set's commit messages (dense recall) and index-bench's mix of phrases and "where is X
// defined" (hybrid latency). Recall@10 of the codes is against the exact scan's top 10, by the exact similarity of
// what they return (ties count).
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { openProject, searchProject } from '../src/project/local/index.ts';
import { openSqliteStore } from '../src/store/sqlite/index.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    queries: { type: 'string', default: '100' },
    set: {
      type: 'string',
      default: join(import.meta.dirname, '..', '..', 'shared', 'eval-dev', 'queries.jsonl'),
    },
  },
});
const root = resolve(positionals[0] ?? '');
if (!positionals[0]) throw new Error('usage: bench/big-dense.ts <indexed-and-embedded-dir>');
const n = Number(values.queries);
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const ms = (xs: number[]) => `${pct(xs, 50).toFixed(1)} / ${pct(xs, 95).toFixed(1)} ms`;

const project = await openProject({ root });
const embedder = await project.queryEmbedder();
if (!embedder)
  throw new Error('no embedder: run with QUARRY_EMBED=static (or the model the index was embedded with)');
const texts = readFileSync(values.set!, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => (JSON.parse(l) as { query: string }).query)
  .slice(0, n);
const vectors = await embedder.embed(texts, 'query');

const path = join(root, '.quarry', 'index.db');
const exact = openSqliteStore(path, { readonly: true, codesMin: Number.POSITIVE_INFINITY });
const coded = openSqliteStore(path, { readonly: true });
const status = await exact.vectors!.status();
if (!status.chunkVectors) throw new Error('no chunk vectors: QUARRY_EMBED=static quarry index BIG first');
console.error(`${status.chunkVectors} chunk vectors`);
// the codes are read on the first search that wants them; wait until they answer
await coded.vectors!.searchChunks(vectors[0]!, 10);
await new Promise((r) => setTimeout(r, 5000));

const exactMs: number[] = [];
const codedMs: number[] = [];
let recall = 0;
for (const v of vectors) {
  let t = performance.now();
  const want = await exact.vectors!.searchChunks(v, 100);
  exactMs.push(performance.now() - t);
  t = performance.now();
  const got = await coded.vectors!.searchChunks(v, 100);
  codedMs.push(performance.now() - t);
  const floor = want[9]!.score - 1e-6;
  const scoreOf = new Map(want.map((h) => [h.chunkId, h.score]));
  // a code hit outside the exact top 100 is scored below the floor; within it, by its exact score
  recall += got.slice(0, 10).filter((h) => (scoreOf.get(h.chunkId) ?? -1) >= floor).length / 10;
}
await exact.close();
await coded.close();

const hybridMs: number[] = [];
for (let i = 0; i < n; i++) {
  const q =
    i % 2 === 0
      ? texts[i]!
      : `where is ${texts[i]!.split(/\W+/).find((w) => w.length > 5) ?? 'main'} defined`;
  const t = performance.now();
  await searchProject(project, q);
  hybridMs.push(performance.now() - t);
}
await project.close();

console.log(`| measure (${status.chunkVectors.toLocaleString('en')} chunk vectors, ${n} queries) | p50 / p95 |
| --- | --- |
| dense, 100 nearest, exact scan (the dense reader) | ${ms(exactMs)} |
| dense, 100 nearest, sign codes (the default), recall@10 against the exact scan ${(recall / n).toFixed(3)} | ${ms(codedMs)} |
| hybrid search in process (\`searchProject\`, the default path) | ${ms(hybridMs)} |`);
