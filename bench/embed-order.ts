// The embedding order's gain: hybrid retrieval after 10%, 25% and 50% of the embedding time, priority order against
// walk order (docs/benchmarks.md, "Vectors where they matter first").
//
//   node --import tsx bench/embed-order.ts --queries <jsonl> --root <trees> [--fractions 0,0.1,0.25,0.5,1]
//        [--full-weight] [--json]
//
// Each tree must be indexed with every vector (its `.quarry/index.db`). The run is simulated from those vectors, so
// that both orders see exactly the same vectors and the same queries: the time to a point of an embedding run is
// the texts embedded by then (phase 1, one coarse text per file, in the order; then phase 2, each file's chunks, in
// the order), and a search at that point sees the coarse vectors of the files phase 1 reached and the chunk vectors
// of the files phase 2 reached, found by exact cosine similarity as the store's own scan finds them. The rest of
// the search is the real pipeline (search/search.ts) over the real lexical index.

import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { type EvalQuery, readQueries, score, treeFor } from '../src/eval/eval.ts';
import { chunksToEmbed } from '../src/indexing/embedding.ts';
import { byPriority, centralityOf } from '../src/indexing/priority.ts';
import { embedQuery, type LocalProject, openProject } from '../src/project/local/index.ts';
import { readHistory } from '../src/search/history.ts';
import { denseShare, passesFilter, search } from '../src/search/search.ts';
import type { ChunkHit, FileHit, SearchFilter, Store, VectorIndex } from '../src/store/types.ts';
import { indexPaths } from '../src/workspace/root.ts';

const args = process.argv.slice(2);
const arg = (name: string, fallback?: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const queriesFile = arg('queries');
const treesRoot = arg('root');
if (!queriesFile || !treesRoot) {
  console.error('usage: embed-order.ts --queries FILE --root TREES [--fractions 0,0.1,0.25,0.5,1] [--json]');
  process.exit(2);
}
const FRACTIONS = arg('fractions', '0,0.1,0.25,0.5,1')!.split(',').map(Number);
const json = args.includes('--json');
/** `--full-weight`: the dense list at full weight however few vectors exist (quarry before 2026-11-25). */
const WEIGHTED = !args.includes('--full-weight');
/** `--share-power P`: the product's weight (denseShare, the square of the share) raised to P / 2 (trials). */
const POWER = Number(arg('share-power', '2')) / 2;

interface Loaded {
  chunks: Array<Omit<ChunkHit, 'score'> & { vector: Float32Array }>;
  files: Map<string, Float32Array>;
  /** Texts each file costs in phase 2 (its chunks that get a vector). */
  chunkTexts: Map<string, number>;
}

function loadVectors(root: string): Loaded {
  const db = new Database(indexPaths(root).db, { readonly: true });
  sqliteVec.load(db);
  try {
    const vec = (b: Buffer) => new Float32Array(new Uint8Array(b).buffer.slice(0));
    const chunks = (
      db
        .prepare(
          `SELECT c.id, f.path, c.start_line, c.end_line, c.symbol, c.kind, v.embedding
           FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id JOIN files f ON f.id = c.file_id`,
        )
        .all() as Array<Record<string, unknown>>
    ).map((r) => ({
      chunkId: r.id as number,
      path: r.path as string,
      startLine: r.start_line as number,
      endLine: r.end_line as number,
      symbol: r.symbol as string | null,
      kind: r.kind as ChunkHit['kind'],
      vector: vec(r.embedding as Buffer),
    }));
    const files = new Map(
      (
        db
          .prepare('SELECT f.path, v.embedding FROM file_vectors v JOIN files f ON f.id = v.file_id')
          .all() as Array<{ path: string; embedding: Buffer }>
      ).map((r) => [r.path, vec(r.embedding)]),
    );
    const chunkTexts = new Map<string, number>();
    const perFile = db
      .prepare('SELECT f.path, count(*) AS n FROM chunks c JOIN files f ON f.id = c.file_id GROUP BY f.path')
      .all() as Array<{ path: string; n: number }>;
    for (const r of perFile)
      chunkTexts.set(r.path, chunksToEmbed(r.path, Array.from({ length: r.n })).length);
    return { chunks, files, chunkTexts };
  } finally {
    db.close();
  }
}

const cosine = (a: Float32Array, b: Float32Array) => {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(na * nb);
};
const byScore = (a: { score: number; path: string }, b: { score: number; path: string }) =>
  b.score - a.score || (a.path < b.path ? -1 : 1);

/** The vectors an embedding run has made by a point: coarse for `coarse`, chunks for `refined`. */
function partialVectors(
  real: VectorIndex,
  data: Loaded,
  coarse: ReadonlySet<string>,
  refined: ReadonlySet<string>,
): VectorIndex {
  return {
    ...real,
    embedder: () => real.embedder(),
    async searchChunks(vector, limit, filter?: SearchFilter) {
      const hits: ChunkHit[] = [];
      for (const c of data.chunks)
        if (refined.has(c.path) && passesFilter(c.path, filter)) {
          const { vector: v, ...rest } = c;
          hits.push({ ...rest, score: cosine(vector, v) });
        }
      return hits.sort(byScore).slice(0, limit);
    },
    async searchFiles(vector, limit, filter?: SearchFilter) {
      const hits: Array<FileHit & { refined: boolean }> = [];
      for (const [path, v] of data.files)
        if (coarse.has(path) && passesFilter(path, filter))
          hits.push({ path, score: cosine(vector, v), refined: refined.has(path) });
      return hits.sort(byScore).slice(0, limit);
    },
  };
}

/** The files each phase has reached after `fraction` of the run's texts, embedding in `order`. */
function reached(order: string[], data: Loaded, fraction: number) {
  const total = order.length + order.reduce((s, p) => s + (data.chunkTexts.get(p) ?? 0), 0);
  let budget = fraction * total;
  const coarse = new Set<string>();
  const refined = new Set<string>();
  for (const p of order) {
    if (budget < 1) break;
    coarse.add(p);
    budget -= 1;
  }
  for (const p of order) {
    const cost = data.chunkTexts.get(p) ?? 0;
    if (budget < cost) break;
    refined.add(p);
    budget -= cost;
  }
  return { coarse, refined };
}

const queries = readQueries(queriesFile);
const byTree = new Map<string, EvalQuery[]>();
for (const q of queries) {
  const t = treeFor(treesRoot, q);
  byTree.set(t, [...(byTree.get(t) ?? []), q]);
}
type Row = {
  order: string;
  fraction: number;
  n: number;
  hit1: number;
  hit5: number;
  hit10: number;
  mrr: number;
};
const sums = new Map<string, Row>();
for (const [tree, qs] of byTree) {
  const project: LocalProject = await openProject({ root: tree, userConfig: false });
  const data = loadVectors(tree);
  const embedder = await project.queryEmbedder();
  if (!embedder || !project.store.vectors) throw new Error(`${tree}: no vectors or no embedder`);
  const vectors = new Map<string, Awaited<ReturnType<typeof embedQuery>>>();
  for (const q of qs) vectors.set(q.id, await embedQuery(embedder, q.query));
  const eligible = (await project.store.listFiles())
    .filter((f) => f.method !== 'skipped' && data.chunkTexts.has(f.path))
    .map((f) => f.path)
    .sort();
  const orders = {
    walk: eligible,
    priority: byPriority(
      eligible.map((path) => ({ path })),
      { history: await readHistory(tree), centrality: (await centralityOf(project.store)) ?? new Map() },
    ).map((f) => f.path),
  };
  for (const [name, order] of Object.entries(orders))
    for (const fraction of FRACTIONS) {
      const { coarse, refined } = reached(order, data, fraction);
      const store = Object.create(project.store, {
        vectors: { value: partialVectors(project.store.vectors, data, coarse, refined) },
      }) as Store;
      const key = `${name} ${fraction}`;
      const row = sums.get(key) ?? { order: name, fraction, n: 0, hit1: 0, hit5: 0, hit10: 0, mrr: 0 };
      for (const q of qs) {
        const { vector, coverage } = vectors.get(q.id)!;
        // as searchProject weighs the dense list of an index whose vectors are still coming
        const share = WEIGHTED
          ? denseShare({ files: order.length, coarse: coarse.size, refined: refined.size }) ** POWER
          : 1;
        const res = await search(store, project.config, q.query, {
          mode: 'hybrid',
          topK: 20,
          topFiles: 20,
          queryVector: vector,
          queryCoverage: coverage * share,
          history: () => readHistory(tree),
        });
        const s = score(
          res.files.map((f) => f.path),
          q.gold,
        );
        row.n++;
        row.hit1 += s['hit@1'];
        row.hit5 += s['hit@5'];
        row.hit10 += s['hit@10'];
        row.mrr += s.MRR;
      }
      sums.set(key, row);
      if (!json) console.error(`${tree.split('/').pop()} ${key}`);
    }
  await project.close();
}
const rows = [...sums.values()].map((r) => ({
  order: r.order,
  fraction: r.fraction,
  n: r.n,
  'hit@1': Number((r.hit1 / r.n).toFixed(3)),
  'hit@5': Number((r.hit5 / r.n).toFixed(3)),
  'hit@10': Number((r.hit10 / r.n).toFixed(3)),
  MRR: Number((r.mrr / r.n).toFixed(3)),
}));
console.log(json ? JSON.stringify(rows) : rows.map((r) => JSON.stringify(r)).join('\n'));
