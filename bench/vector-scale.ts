// How dense-query latency grows with the number of chunk vectors: sqlite-vec's exact scan (the SQLite driver) against
// pgvector's HNSW index (the PostgreSQL driver), on synthetic unit vectors of all-MiniLM-L6-v2's size (384).
//
//   node --import tsx bench/vector-scale.ts --url postgres://quarry@127.0.0.1:PORT/postgres --sizes 10000,100000,1000000
//
// Both engines get the same vectors (a seeded generator: 64 clusters, so neighbours exist as in real embeddings) and
// the same 50 queries; the tables mirror the drivers' (`vec0 … distance_metric=cosine`; `vector(384)` + HNSW
// `vector_cosine_ops`, ef_search 200, iterative scans). Recall@10 of HNSW is against sqlite-vec's exact answer.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { ChromaClient } from 'chromadb';
import pg from 'pg';
import * as sqliteVec from 'sqlite-vec';
import { chromaAddress } from '../src/store/chroma.ts';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    chroma: { type: 'string' },
    sizes: { type: 'string', default: '10000,100000' },
    dim: { type: 'string', default: '384' },
    queries: { type: 'string', default: '50' },
  },
});
if (!values.url)
  throw new Error('pass --url postgres://… (scripts/store-servers.sh postgres DIR PORT starts one)');
const DIM = Number(values.dim);
const Q = Number(values.queries);
const K = 10;

/** A seeded generator (mulberry32) and unit vectors around 64 cluster centres. */
function generator(seed: number) {
  let a = seed >>> 0;
  const rand = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const gauss = () => Math.sqrt(-2 * Math.log(rand() || 1e-12)) * Math.cos(2 * Math.PI * rand());
  const unit = (v: Float32Array) => {
    let n = 0;
    for (const x of v) n += x * x;
    n = Math.sqrt(n) || 1;
    for (let i = 0; i < v.length; i++) v[i]! /= n;
    return v;
  };
  const centres = Array.from({ length: 64 }, () => unit(Float32Array.from({ length: DIM }, gauss)));
  return () => {
    const c = centres[Math.floor(rand() * centres.length)]!;
    return unit(Float32Array.from({ length: DIM }, (_, i) => c[i]! + (0.8 * gauss()) / Math.sqrt(DIM)));
  };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const literal = (v: Float32Array) => `[${Array.from(v).join(',')}]`;

const rows: string[] = [];
for (const n of values.sizes!.split(',').map(Number)) {
  const next = generator(42);
  const queries = Array.from({ length: Q }, generator(7));

  // sqlite-vec, exact
  const dir = mkdtempSync(join(tmpdir(), 'quarry-vec-'));
  const db = new Database(join(dir, 'v.db'));
  sqliteVec.load(db);
  db.pragma('journal_mode = WAL');
  db.exec(
    `CREATE VIRTUAL TABLE v USING vec0 (id INTEGER PRIMARY KEY, embedding float[${DIM}] distance_metric=cosine)`,
  );
  // pgvector, HNSW
  const client = new pg.Client({ connectionString: values.url });
  await client.connect();
  await client.query(`CREATE EXTENSION IF NOT EXISTS vector`);
  await client.query(`DROP TABLE IF EXISTS bench_vec`);
  await client.query(`CREATE TABLE bench_vec (id BIGINT PRIMARY KEY, embedding vector(${DIM}) NOT NULL)`);
  let sqliteLoad = 0;
  let pgLoad = 0;
  let chromaLoad = 0;
  const chroma = values.chroma
    ? new ChromaClient({ host: chromaAddress(values.chroma).host, port: chromaAddress(values.chroma).port })
    : undefined;
  await chroma?.deleteCollection({ name: 'bench-vec' }).catch(() => {});
  const col = await chroma?.createCollection({
    name: 'bench-vec',
    configuration: { hnsw: { space: 'cosine' } },
    embeddingFunction: null as never,
  });
  const insert = db.prepare(`INSERT INTO v (id, embedding) VALUES (?, ?)`);
  for (let done = 0; done < n; ) {
    const batch = Array.from({ length: Math.min(5000, n - done) }, () => next());
    let t = performance.now();
    db.transaction(() => {
      for (const [i, v] of batch.entries()) insert.run(BigInt(done + i + 1), v);
    })();
    sqliteLoad += performance.now() - t;
    t = performance.now();
    await client.query(
      `INSERT INTO bench_vec (id, embedding) SELECT t.id, t.v::vector FROM unnest($1::bigint[], $2::text[]) AS t(id, v)`,
      [batch.map((_, i) => done + i + 1), batch.map(literal)],
    );
    pgLoad += performance.now() - t;
    if (col) {
      t = performance.now();
      await col.add({
        ids: batch.map((_, i) => String(done + i + 1)),
        embeddings: batch.map((v) => Array.from(v)),
      });
      chromaLoad += performance.now() - t;
    }
    done += batch.length;
  }
  let t = performance.now();
  await client.query(`SET maintenance_work_mem = '6GB'`);
  await client.query(`SET max_parallel_maintenance_workers = 2`);
  await client.query(`CREATE INDEX ON bench_vec USING hnsw (embedding vector_cosine_ops)`);
  const hnswBuild = performance.now() - t;
  await client.query(`VACUUM ANALYZE bench_vec`);

  const exact: number[][] = [];
  const sqliteMs: number[] = [];
  const knn = db.prepare(`SELECT id FROM v WHERE embedding MATCH ? AND k = ${K} ORDER BY distance`);
  for (const q of queries) {
    t = performance.now();
    exact.push((knn.all(q) as Array<{ id: number }>).map((r) => Number(r.id)));
    sqliteMs.push(performance.now() - t);
  }
  const pgMs: number[] = [];
  let recall = 0;
  await client.query(`SET hnsw.ef_search = 200`);
  await client.query(`SET hnsw.iterative_scan = relaxed_order`);
  for (const [i, q] of queries.entries()) {
    t = performance.now();
    const r = await client.query(`SELECT id FROM bench_vec ORDER BY embedding <=> $1::vector LIMIT ${K}`, [
      literal(q),
    ]);
    pgMs.push(performance.now() - t);
    const got = new Set(r.rows.map((x) => Number(x.id)));
    recall += exact[i]!.filter((id) => got.has(id)).length / K;
  }
  let chromaCell = '';
  if (col) {
    const cms: number[] = [];
    let crecall = 0;
    for (const [i, q] of queries.entries()) {
      t = performance.now();
      const r = await col.query({
        queryEmbeddings: [Array.from(q)],
        nResults: K,
        include: ['distances'] as never,
      });
      cms.push(performance.now() - t);
      const got = new Set((r.ids[0] ?? []).map(Number));
      crecall += exact[i]!.filter((id) => got.has(id)).length / K;
    }
    chromaCell = ` ${(chromaLoad / 1000).toFixed(1)} s | ${pct(cms, 50).toFixed(1)} / ${pct(cms, 95).toFixed(1)} ms | ${(crecall / Q).toFixed(3)} |`;
    await chroma!.deleteCollection({ name: 'bench-vec' });
  }
  const line = `| ${n.toLocaleString('en')} | ${(sqliteLoad / 1000).toFixed(1)} s | ${pct(sqliteMs, 50).toFixed(1)} / ${pct(sqliteMs, 95).toFixed(1)} ms | ${((pgLoad + hnswBuild) / 1000).toFixed(1)} s (HNSW ${(hnswBuild / 1000).toFixed(1)} s) | ${pct(pgMs, 50).toFixed(1)} / ${pct(pgMs, 95).toFixed(1)} ms | ${(recall / Q).toFixed(3)} |${chromaCell}`;
  rows.push(line);
  console.error(line);
  await client.query(`DROP TABLE bench_vec`);
  await client.end();
  db.close();
  rmSync(dir, { recursive: true, force: true });
}
const chromaHead = values.chroma ? ' Chroma load | Chroma HNSW p50 / p95 | Chroma recall@10 |' : '';
const chromaRule = values.chroma ? ' --- | --- | --- |' : '';
console.log(
  `| chunk vectors | sqlite-vec load | sqlite-vec exact p50 / p95 | pgvector load + index | pgvector HNSW p50 / p95 | HNSW recall@10 |${chromaHead}\n| --- | --- | --- | --- | --- | --- |${chromaRule}\n${rows.join('\n')}`,
);
