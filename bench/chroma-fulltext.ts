// Chroma's own full-text search against the lexical side quarry keeps in SQLite, on a practice set.
//
//   node --import tsx bench/chroma-fulltext.ts --trees DIR --queries FILE --chroma chroma://127.0.0.1:PORT
//
// Each tree must already be indexed by quarry (SQLite default). Its chunks go into a Chroma collection as documents
// (lower-cased, as quarry's tokens are). Chroma's `where_document: {$contains}` filters without ranking, so the best a
// Chroma-only lexical side can do is count: for each informative query term, the chunks that contain it (one call
// per term), then a chunk scores the idf-weighted sum of the terms it contains, and a file its best chunk. That is
// compared with quarry's lexical file ranking (BM25 with hints) on the same queries.
import { parseArgs } from 'node:util';
import { ChromaClient } from 'chromadb';
import { readQueries, score, treeFor } from '../src/eval/eval.ts';
import { openProject, searchProject } from '../src/project/local/index.ts';
import { analyzeQuery } from '../src/search/query.ts';
import { informativeTerms } from '../src/search/search.ts';
import { chromaAddress } from '../src/store/chroma.ts';

const { values } = parseArgs({
  options: { trees: { type: 'string' }, queries: { type: 'string' }, chroma: { type: 'string' } },
});
if (!values.trees || !values.queries || !values.chroma) throw new Error('pass --trees --queries --chroma');
const a = chromaAddress(values.chroma);
const client = new ChromaClient({ host: a.host, port: a.port, ssl: a.ssl });
const queries = readQueries(values.queries).filter((q) => {
  try {
    treeFor(values.trees!, q);
    return true;
  } catch {
    return false; // a tree prepare.sh could not extract
  }
});
const collections = new Map<string, Awaited<ReturnType<ChromaClient['createCollection']>>>();
const rows: Record<'chroma' | 'quarry', Array<ReturnType<typeof score>>> = { chroma: [], quarry: [] };
const ms: Record<'chroma' | 'quarry', number[]> = { chroma: [], quarry: [] };

for (const q of queries) {
  const tree = treeFor(values.trees, q);
  const project = await openProject({ root: tree, userConfig: false, env: { QUARRY_EMBED: 'none' } });
  let col = collections.get(tree);
  if (!col) {
    const name = `fulltext-${collections.size}`;
    await client.deleteCollection({ name }).catch(() => {});
    col = await client.createCollection({ name, embeddingFunction: null as never });
    const files = (await project.store.listFiles()).map((f) => f.path);
    const chunks = [...(await project.store.getFilesChunks(files)).values()].flat();
    for (let i = 0; i < chunks.length; i += 1000) {
      const slice = chunks.slice(i, i + 1000);
      await col.add({
        ids: slice.map((c) => String(c.chunkId)),
        embeddings: slice.map(() => [0]),
        documents: slice.map((c) => `${c.path}\n${c.text}`.toLowerCase()),
        metadatas: slice.map((c) => ({ path: c.path })),
      });
    }
    collections.set(tree, col);
  }
  const total = await col.count();
  let t = performance.now();
  const terms = await informativeTerms(project.store, analyzeQuery(q.query).terms, 'chunks');
  const chunkScore = new Map<string, { path: string; score: number }>();
  for (const term of terms.slice(0, 32)) {
    const hit = await col.get({ whereDocument: { $contains: term }, include: ['metadatas'] as never });
    const df = hit.ids.length;
    if (!df) continue;
    const idf = Math.max(Math.log((total - df + 0.5) / (df + 0.5)), 1e-6);
    for (const [i, id] of hit.ids.entries()) {
      const e = chunkScore.get(id) ?? { path: String(hit.metadatas[i]?.path), score: 0 };
      e.score += idf;
      chunkScore.set(id, e);
    }
  }
  const fileBest = new Map<string, number>();
  for (const { path, score: s } of chunkScore.values())
    fileBest.set(path, Math.max(fileBest.get(path) ?? 0, s));
  const ranked = [...fileBest.entries()]
    .sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))
    .map(([p]) => p);
  ms.chroma.push(performance.now() - t);
  rows.chroma.push(score(ranked.slice(0, 20), q.gold));
  t = performance.now();
  const res = await searchProject(project, q.query, { mode: 'lexical', topK: 20, topFiles: 20 });
  ms.quarry.push(performance.now() - t);
  rows.quarry.push(
    score(
      res.files.map((f) => f.path),
      q.gold,
    ),
  );
  await project.close();
}
const avg = (xs: Array<ReturnType<typeof score>>, k: keyof ReturnType<typeof score>) =>
  (xs.reduce((s, r) => s + r[k], 0) / xs.length).toFixed(3);
const p50 = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!.toFixed(0);
console.log(
  '| lexical side | hit@1 | hit@5 | hit@10 | MRR | p50 ms |\n| --- | --- | --- | --- | --- | --- |',
);
for (const k of ['chroma', 'quarry'] as const)
  console.log(
    `| ${k === 'chroma' ? 'Chroma where_document, idf-weighted term counts' : 'SQLite FTS5 BM25 + hints (shipped)'} | ${avg(rows[k], 'hit@1')} | ${avg(rows[k], 'hit@5')} | ${avg(rows[k], 'hit@10')} | ${avg(rows[k], 'MRR')} | ${p50(ms[k])} |`,
  );
