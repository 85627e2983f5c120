// Recall and latency of dense search from 10k to 1M vectors of real code, exact top-k as truth (docs/stores.md).
//
//   node --import tsx bench/vector-recall.ts make --index BIG/.quarry/index.db --queries Q.jsonl --out DIR [--n 1000000]
//   node --import tsx bench/vector-recall.ts minilm --indexes A.db,B.db,… --queries Q.jsonl --out DIR
//   node --import tsx bench/vector-recall.ts sqlite --data DIR --sizes 10000,100000,1000000
//   node --import tsx bench/vector-recall.ts pg --data DIR --url postgres://… --sizes …
//
// `make` embeds real chunks with the static tier (the shipped code-v1 table, 256 dimensions): every chunk of an index
// (`bench/big-corpus.ts` builds one of 491k chunks), then each chunk's two halves until there are `--n`, shuffled
// with a fixed seed so that every prefix is a sample of the whole. `minilm` takes the all-MiniLM-L6-v2 vectors that
// indexes already hold (384 dimensions), to check that what holds for the static vectors holds for the transformer's.
// Queries: the practice set's query texts (commit messages) and as many held-out chunks (never in the base), embedded
// by the same model. Truth is computed here, exactly, in JavaScript: the top 100 by cosine for every query.
//
// `sqlite` measures the embedded store: sqlite-vec's exact scan (what the SQLite driver runs), and quantised vectors
// (bit, and int8) whose first candidates are re-scored at full precision. `pg` measures pgvector's HNSW (m 16,
// ef_construction 64, as the driver makes it) over a range of search widths, unfiltered and filtered to one of ten
// repositories (iterative scans), with the build's time and the server's peak memory.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import * as sqliteVec from 'sqlite-vec';
import { findWeights } from '../src/embed/models.ts';
import { openStaticEmbedder } from '../src/embed/static.ts';
import { chunkText } from '../src/indexing/embedding.ts';
import { asBlob, CodeScan, int8Copy, int8Cosine, readCodePage, signCode } from '../src/store/codes.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    index: { type: 'string' },
    indexes: { type: 'string' },
    queries: { type: 'string' },
    out: { type: 'string' },
    data: { type: 'string' },
    url: { type: 'string' },
    n: { type: 'string', default: '1000000' },
    q: { type: 'string', default: '100' },
    sizes: { type: 'string', default: '10000,100000,1000000' },
    ef: { type: 'string', default: '40,100,200,400,800' },
    candidates: { type: 'string', default: '200,400,800,1600,3200,6400,8192' },
  },
});
const command = positionals[0];
const TRUTH_K = 100;

interface Data {
  dim: number;
  n: number;
  q: number;
  base: Float32Array;
  queries: Float32Array;
  /** Which of ten repositories each vector belongs to (blocks of the unshuffled order, so a repository's vectors are its own). */
  repo: Uint8Array;
  dir: string;
}

/** mulberry32: a seeded generator, so that a data set is the same on every machine. */
function seeded(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function queryTexts(path: string, n: number): string[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { query: string }).query)
    .slice(0, n);
}

/** Writes a data set: vectors shuffled (seed 1), their repositories, the queries. */
function save(out: string, dim: number, vectors: Float32Array[], queries: Float32Array[]): void {
  mkdirSync(out, { recursive: true });
  const n = vectors.length;
  const order = Array.from({ length: n }, (_, i) => i);
  const rand = seeded(1);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const base = new Float32Array(n * dim);
  const repo = new Uint8Array(n);
  for (const [to, from] of order.entries()) {
    base.set(vectors[from]!, to * dim);
    repo[to] = Math.min(9, Math.floor((from * 10) / n));
  }
  const qs = new Float32Array(queries.length * dim);
  for (const [i, v] of queries.entries()) qs.set(v, i * dim);
  writeFileSync(join(out, 'base.f32'), new Uint8Array(base.buffer));
  writeFileSync(join(out, 'repo.u8'), repo);
  writeFileSync(join(out, 'queries.f32'), new Uint8Array(qs.buffer));
  writeFileSync(join(out, 'meta.json'), JSON.stringify({ dim, n, q: queries.length }));
  console.error(`wrote ${n} vectors and ${queries.length} queries of ${dim} dimensions to ${out}`);
}

function load(dir: string): Data {
  const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as {
    dim: number;
    n: number;
    q: number;
  };
  const f32 = (name: string) => {
    const b = readFileSync(join(dir, name));
    return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
  };
  return {
    ...meta,
    base: f32('base.f32'),
    queries: f32('queries.f32'),
    repo: readFileSync(join(dir, 'repo.u8')),
    dir,
  };
}

async function make(): Promise<void> {
  if (!values.index || !values.queries || !values.out)
    throw new Error('make needs --index, --queries and --out');
  const weights = findWeights();
  if (!weights) throw new Error('no weights: run scripts/fetch-test-weights.sh');
  // a shipped table: the weights' path and hash are not read
  const embedder = await openStaticEmbedder(weights, '', { table: 'code-v1' });
  const db = new Database(values.index, { readonly: true });
  const rows = db.prepare('SELECT text, symbol, container FROM chunks ORDER BY id').all() as Array<{
    text: string;
    symbol: string | null;
    container: string | null;
  }>;
  db.close();
  const q = Number(values.q);
  const heldOut = new Set<number>();
  const rand = seeded(2);
  while (heldOut.size < q) heldOut.add(Math.floor(rand() * rows.length));
  const texts: string[] = [];
  for (const [i, r] of rows.entries()) if (!heldOut.has(i)) texts.push(chunkText(r));
  const n = Number(values.n);
  for (const [i, r] of rows.entries()) {
    if (texts.length >= n) break;
    if (heldOut.has(i)) continue;
    const lines = r.text.split('\n');
    if (lines.length < 4) continue;
    const half = Math.ceil(lines.length / 2);
    texts.push(chunkText({ ...r, text: lines.slice(0, half).join('\n') }));
    if (texts.length < n) texts.push(chunkText({ ...r, text: lines.slice(half).join('\n') }));
  }
  if (texts.length < n) console.error(`only ${texts.length} texts (asked for ${n})`);
  const vectors: Float32Array[] = [];
  const t = performance.now();
  for (let i = 0; i < texts.length; i += 4096) {
    vectors.push(...(await embedder.embed(texts.slice(i, i + 4096), 'document')));
    if (i % 102_400 === 0) console.error(`embedded ${i} of ${texts.length}`);
  }
  console.error(`embedded ${texts.length} texts in ${((performance.now() - t) / 1000).toFixed(0)} s`);
  const queries = [
    ...(await embedder.embed(queryTexts(values.queries, q), 'query')),
    ...(await embedder.embed(
      [...heldOut].map((i) => chunkText(rows[i]!)),
      'query',
    )),
  ];
  save(values.out, embedder.dimension, vectors, queries);
}

async function minilm(): Promise<void> {
  if (!values.indexes || !values.queries || !values.out)
    throw new Error('minilm needs --indexes, --queries and --out');
  const { createLocalEmbedder } = await import('../src/embed/local.ts');
  const weights = findWeights();
  if (!weights) throw new Error('no weights: run scripts/fetch-test-weights.sh');
  const q = Number(values.q);
  const vectors: Float32Array[] = [];
  const held: string[] = [];
  const rand = seeded(3);
  const paths = values.indexes.split(',');
  for (const path of paths) {
    const db = new Database(path, { readonly: true });
    sqliteVec.load(db);
    const rows = db
      .prepare(
        'SELECT v.embedding, c.text, c.symbol, c.container FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id',
      )
      .all() as Array<{ embedding: Buffer; text: string; symbol: string | null; container: string | null }>;
    for (const r of rows) {
      if (held.length < q && rand() < q / paths.length / rows.length) held.push(chunkText(r));
      else vectors.push(new Float32Array(new Uint8Array(r.embedding).buffer));
    }
    db.close();
  }
  const embedder = await createLocalEmbedder({ weights });
  const queries = [
    ...(await embedder.embed(queryTexts(values.queries, q), 'query')),
    ...(await embedder.embed(held, 'query')),
  ];
  await embedder.close();
  save(values.out, embedder.dimension, vectors, queries);
}

/** Exact top-100 (ids in 0..size) for every query, by cosine (all vectors are unit length); cached beside the data. */
function truth(d: Data, size: number, repo?: number): Int32Array[] {
  const file = join(d.dir, `truth-${size}${repo === undefined ? '' : `-r${repo}`}.i32`);
  const q = d.q;
  if (existsSync(file)) {
    const all = new Int32Array(new Uint8Array(readFileSync(file)).buffer);
    return Array.from({ length: q }, (_, i) => all.subarray(i * TRUTH_K, (i + 1) * TRUTH_K));
  }
  const { dim, base, queries } = d;
  const out: Int32Array[] = [];
  const scores = new Float32Array(size);
  for (let i = 0; i < q; i++) {
    const qo = i * dim;
    for (let j = 0; j < size; j++) {
      if (repo !== undefined && d.repo[j] !== repo) {
        scores[j] = -Infinity;
        continue;
      }
      let s = 0;
      const bo = j * dim;
      for (let k = 0; k < dim; k++) s += queries[qo + k]! * base[bo + k]!;
      scores[j] = s;
    }
    out.push(topIds(scores, TRUTH_K));
  }
  const all = new Int32Array(q * TRUTH_K);
  for (const [i, t] of out.entries()) all.set(t, i * TRUTH_K);
  writeFileSync(file, new Uint8Array(all.buffer));
  return out;
}

/** The ids of the k highest scores, best first (ties by id). */
function topIds(scores: Float32Array, k: number): Int32Array {
  const ids: number[] = [];
  let floor = -Infinity;
  for (let j = 0; j < scores.length; j++) {
    const s = scores[j]!;
    if (ids.length >= k && s <= floor) continue;
    ids.push(j);
    if (ids.length > 4 * k) {
      ids.sort((a, b) => scores[b]! - scores[a]! || a - b);
      ids.length = k;
      floor = scores[ids[k - 1]!]!;
    }
  }
  ids.sort((a, b) => scores[b]! - scores[a]! || a - b);
  return Int32Array.from(ids.slice(0, k));
}

/** Recall@k of `got` against the first k of `want`. */
function recall(want: Int32Array, got: number[], k: number): number {
  const w = new Set(want.subarray(0, k));
  return got.slice(0, k).filter((id) => w.has(id)).length / Math.min(k, w.size || k);
}

/**
 * Recall@k that counts ties as hits: a returned vector is right when its exact similarity reaches the k-th true
 * one's (real chunks repeat, and an index may return either of two equal vectors).
 */
function recallByScore(d: Data, qi: number, want: Int32Array, got: number[], k: number): number {
  const sim = (j: number) => {
    let s = 0;
    for (let x = 0; x < d.dim; x++) s += d.queries[qi * d.dim + x]! * d.base[j * d.dim + x]!;
    return s;
  };
  const floor = sim(want[k - 1]!) - 1e-6;
  return got.slice(0, k).filter((j) => sim(j) >= floor).length / k;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const ms = (xs: number[]) => `${pct(xs, 50).toFixed(1)} / ${pct(xs, 95).toFixed(1)} ms`;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const vec = (d: Data, i: number) => d.base.subarray(i * d.dim, (i + 1) * d.dim);
const qvec = (d: Data, i: number) => d.queries.subarray(i * d.dim, (i + 1) * d.dim);

/** Centres a vector on the collection's mean before its signs are taken (sign bits of raw vectors waste bits on the mean). */
function meanOf(d: Data, size: number): Float32Array {
  const m = new Float32Array(d.dim);
  const step = Math.max(1, Math.floor(size / 20_000));
  let n = 0;
  for (let j = 0; j < size; j += step, n++)
    for (let k = 0; k < d.dim; k++) m[k] = (m[k] ?? 0) + (d.base[j * d.dim + k] ?? 0);
  for (let k = 0; k < d.dim; k++) m[k]! /= n;
  return m;
}
const minus = (v: Float32Array, m: Float32Array) => v.map((x, k) => x - m[k]!);

async function sqlite(): Promise<void> {
  const d = load(values.data!);
  const rows: string[] = [];
  for (const size of values
    .sizes!.split(',')
    .map(Number)
    .filter((s) => s <= d.n)) {
    const want = truth(d, size);
    const dir = mkdtempSync(join(tmpdir(), 'quarry-recall-'));
    const db = new Database(join(dir, 'v.db'));
    sqliteVec.load(db);
    db.pragma('journal_mode = WAL');
    // the SQLite driver's two tables: sqlite-vec's exact one, and the codes beside it
    db.exec(`CREATE VIRTUAL TABLE chunk_vectors USING vec0 (chunk_id INTEGER PRIMARY KEY, embedding float[${d.dim}] distance_metric=cosine);
      CREATE TABLE chunk_codes (chunk_id INTEGER PRIMARY KEY, bits BLOB NOT NULL, q8 BLOB NOT NULL);`);
    const mb = () => {
      db.pragma('wal_checkpoint(TRUNCATE)');
      return statSync(join(dir, 'v.db')).size / 2 ** 20;
    };
    let t = performance.now();
    const insF = db.prepare('INSERT INTO chunk_vectors (chunk_id, embedding) VALUES (?, ?)');
    db.transaction(() => {
      for (let j = 0; j < size; j++) insF.run(BigInt(j), vec(d, j));
    })();
    const loadF = performance.now() - t;
    const sizeF = mb();
    t = performance.now();
    const insC = db.prepare('INSERT INTO chunk_codes (chunk_id, bits, q8) VALUES (?, ?, ?)');
    db.transaction(() => {
      for (let j = 0; j < size; j++) insC.run(j, asBlob(signCode(vec(d, j))), asBlob(int8Copy(vec(d, j))));
    })();
    const loadC = performance.now() - t;
    const sizeC = mb() - sizeF;

    const exact = db
      .prepare('SELECT chunk_id FROM chunk_vectors WHERE embedding MATCH ? AND k = ? ORDER BY distance')
      .pluck();
    const exactMs: number[] = [];
    const exactR: number[] = [];
    for (let i = 0; i < d.q; i++) {
      t = performance.now();
      const got = exact.all(qvec(d, i), 10) as number[];
      exactMs.push(performance.now() - t);
      exactR.push(recallByScore(d, i, want[i]!, got, 10));
    }
    rows.push(
      `| ${size.toLocaleString('en')} | float, sqlite-vec exact scan | ${(loadF / 1000).toFixed(1)} s | ${sizeF.toFixed(0)} MiB | | ${ms(exactMs)} | ${mean(exactR).toFixed(3)} |`,
    );
    console.error(rows.at(-1));

    // what the dense reader does: the codes read once into memory, then per query a scan and a re-score
    t = performance.now();
    const scan = new CodeScan(d.dim, size);
    for (let after = 0, last: number | undefined = 0; last !== undefined; ) {
      last = readCodePage(db, scan, after, 100_000);
      if (last !== undefined) after = last;
    }
    const readCodes = performance.now() - t;
    const q8 = db
      .prepare('SELECT chunk_id, q8 FROM chunk_codes WHERE chunk_id IN (SELECT value FROM json_each(?))')
      .raw();
    const centre = meanOf(d, size);
    const centred = new CodeScan(d.dim, size);
    for (let j = 0; j < size; j++) centred.add(j, asBlob(signCode(minus(vec(d, j), centre))));
    for (const [name, sc, shift] of [
      ['sign bits', scan, undefined],
      ['sign bits of centred vectors', centred, centre],
    ] as const) {
      for (const n of shift ? [1600] : values.candidates!.split(',').map(Number)) {
        const took: number[] = [];
        const r10: number[] = [];
        for (let i = 0; i < d.q; i++) {
          const qv = qvec(d, i);
          t = performance.now();
          const cands = sc.nearest(shift ? minus(qv, shift) : qv, n);
          const scored = (q8.all(JSON.stringify(cands)) as Array<[number, Buffer]>)
            .map(([id, blob]) => ({ id, s: int8Cosine(qv, blob) }))
            .sort((a, b) => b.s - a.s || a.id - b.id)
            .slice(0, 10);
          took.push(performance.now() - t);
          r10.push(
            recallByScore(
              d,
              i,
              want[i]!,
              scored.map((x) => x.id),
              10,
            ),
          );
        }
        rows.push(
          `| ${size.toLocaleString('en')} | ${name}, int8 re-score of the first ${n} | ${(loadC / 1000).toFixed(1)} s (read into memory ${(readCodes / 1000).toFixed(1)} s) | +${sizeC.toFixed(0)} MiB | ${n} | ${ms(took)} | ${mean(r10).toFixed(3)} |`,
        );
        console.error(rows.at(-1));
      }
    }
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    `| vectors | method | load | on disk | candidates | p50 / p95 | recall@10 |\n| --- | --- | --- | --- | --- | --- | --- |\n${rows.join('\n')}`,
  );
}

/** The resident memory of every process of the PostgreSQL server whose data directory is `dataDir`, in MiB. */
function serverRss(): number {
  try {
    const out = execFileSync('ps', ['-C', 'postgres', '-o', 'rss='], { encoding: 'utf8' });
    return out.split('\n').reduce((a, l) => a + (Number(l.trim()) || 0), 0) / 1024;
  } catch {
    return 0;
  }
}

async function postgres(): Promise<void> {
  if (!values.url)
    throw new Error('pg needs --url postgres://… (scripts/store-servers.sh postgres DIR PORT)');
  const d = load(values.data!);
  const literal = (v: Float32Array) => `[${Array.from(v).join(',')}]`;
  const rows: string[] = [];
  const client = new pg.Client({ connectionString: values.url });
  await client.connect();
  await client.query('CREATE EXTENSION IF NOT EXISTS vector');
  for (const size of values
    .sizes!.split(',')
    .map(Number)
    .filter((s) => s <= d.n)) {
    const want = truth(d, size);
    const wantR = truth(d, size, 3);
    await client.query('DROP TABLE IF EXISTS bench_recall');
    await client.query(
      `CREATE TABLE bench_recall (id BIGINT PRIMARY KEY, repo INT NOT NULL, embedding vector(${d.dim}) NOT NULL)`,
    );
    let t = performance.now();
    for (let j = 0; j < size; j += 5000) {
      const ids = Array.from({ length: Math.min(5000, size - j) }, (_, i) => j + i);
      await client.query(
        `INSERT INTO bench_recall SELECT t.id, t.r, t.v::vector FROM unnest($1::bigint[], $2::int[], $3::text[]) AS t(id, r, v)`,
        [ids, ids.map((i) => d.repo[i]), ids.map((i) => literal(vec(d, i)))],
      );
    }
    const loadMs = performance.now() - t;
    await client.query(`CREATE INDEX bench_recall_repo ON bench_recall (repo)`);
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, serverRss());
    }, 500);
    t = performance.now();
    await client.query(`SET maintenance_work_mem = '2GB'`);
    await client.query(
      `CREATE INDEX bench_recall_hnsw ON bench_recall USING hnsw (embedding vector_cosine_ops)`,
    );
    const buildMs = performance.now() - t;
    clearInterval(sampler);
    await client.query('VACUUM ANALYZE bench_recall');
    const indexMb =
      Number((await client.query(`SELECT pg_relation_size('bench_recall_hnsw') AS s`)).rows[0].s) / 2 ** 20;
    rows.push(
      `| ${size.toLocaleString('en')} | build | load ${(loadMs / 1000).toFixed(1)} s, HNSW ${(buildMs / 1000).toFixed(1)} s, index ${indexMb.toFixed(0)} MiB, server peak RSS ${peak.toFixed(0)} MiB | | | |`,
    );
    console.error(rows.at(-1));
    for (const filtered of [false, true]) {
      for (const ef of values.ef!.split(',').map(Number)) {
        for (const limit of [10, 100]) {
          if (limit > ef) continue;
          await client.query(`SET hnsw.ef_search = ${ef}`);
          await client.query(`SET hnsw.iterative_scan = relaxed_order`);
          const took: number[] = [];
          const r10: number[] = [];
          const r100: number[] = [];
          for (let i = 0; i < d.q; i++) {
            t = performance.now();
            const r = await client.query(
              `SELECT id FROM (SELECT id, embedding <=> $1::vector AS distance FROM bench_recall
                 WHERE repo = ANY($2::int[]) ORDER BY embedding <=> $1::vector LIMIT $3) x ORDER BY distance, id`,
              [literal(qvec(d, i)), filtered ? [3] : [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], limit],
            );
            took.push(performance.now() - t);
            const got = r.rows.map((x) => Number(x.id));
            const w = (filtered ? wantR : want)[i]!;
            r10.push(filtered ? recall(w, got, 10) : recallByScore(d, i, w, got, 10));
            if (limit === 100) r100.push(recall(w, got, 100));
          }
          rows.push(
            `| ${size.toLocaleString('en')} | ${filtered ? 'one repository of ten' : 'all'} | ef_search ${ef}, LIMIT ${limit} | ${ms(took)} | ${mean(r10).toFixed(3)} | ${r100.length ? mean(r100).toFixed(3) : ''} |`,
          );
          console.error(rows.at(-1));
        }
      }
    }
    // the cost of one more vector once the graph is large (the driver's indexing inserts into the built index)
    t = performance.now();
    const extra = Math.min(2000, size);
    for (let j = 0; j < extra; j += 100) {
      const ids = Array.from({ length: 100 }, (_, i) => j + i);
      await client.query(
        `INSERT INTO bench_recall SELECT t.id + ${d.n}, t.r, t.v::vector FROM unnest($1::bigint[], $2::int[], $3::text[]) AS t(id, r, v)`,
        [ids, ids.map((i) => d.repo[i]), ids.map((i) => literal(vec(d, i)))],
      );
    }
    rows.push(
      `| ${size.toLocaleString('en')} | insert into the built index | ${((performance.now() - t) / extra).toFixed(2)} ms a vector | | | |`,
    );
    console.error(rows.at(-1));
    await client.query('DROP TABLE bench_recall');
  }
  await client.end();
  console.log(
    `| vectors | queries | setting | p50 / p95 | recall@10 | recall@100 |\n| --- | --- | --- | --- | --- | --- |\n${rows.join('\n')}`,
  );
}

if (command === 'make') await make();
else if (command === 'minilm') await minilm();
else if (command === 'sqlite') await sqlite();
else if (command === 'pg') await postgres();
else throw new Error('usage: vector-recall.ts make|minilm|sqlite|pg … (see the comment at the top)');
