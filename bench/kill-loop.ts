// Kill loop: `kill -9` quarry at random instants while it indexes, check the index after every kill, resume, and
// compare the final index with a clean build of the same tree.
//   node --import tsx bench/kill-loop.ts [--kills N] [--files N] [--embed] [--seed S] [--json]
//     [--store sqlite|postgres|chroma] [--server-kills F] [--power-loss N] [--write-behind-files N]
// Lexical by default (walk, chunking, the lexical writes); --embed adds both embedding phases with the real model
// (weights from scripts/fetch-test-weights.sh). The tree is generated (TypeScript, `--files` of them) in a
// temporary folder. After each kill: the driver's own check (`Store.check()`: for SQLite `PRAGMA integrity_check`,
// FTS5's integrity checks and quarry's invariants; for PostgreSQL the BM25 counters against their rows, postings
// and vectors against their files; for Chroma its vectors against the phase marks) and, for SQLite, the raw
// pragmas; the next kill hits the resumed run. At the end the run is let finish, and files, chunks, symbols,
// references, lexical answers and (with --embed) the vectors are compared with a clean build, and the same fixed
// queries are searched in both.
// --store postgres|chroma starts a real server (scripts/store-servers.sh) and also kills *it* (a fraction
// --server-kills of the kills, default 0.25: PostgreSQL by an immediate shutdown, which recovers like a crash;
// Chroma by SIGKILL); quarry must then exit with an error at once, and the next run resume.
// --power-loss N (SQLite): N times during an uninterrupted run, copy the database and its write-ahead log as they
// are mid-write (under a held read transaction, so that the copy is a state a power loss can leave), then open the
// copy, check it, resume it and compare it with the clean build.
// --write-behind-files N: runs with at least N files to read write on their own thread (`write_behind_files`; the
// default keeps quarry's), so that kills land while that thread writes, and resumed runs below N write on the main one.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { isQuarryError } from '../src/errors.ts';
import { openProject } from '../src/project/local/index.ts';
import { CLI, dumpIndex } from '../test/helpers.ts';
import { snapshot } from '../test/store-guarantees.ts';
import { startServer, type TestServer } from '../test/store-servers.ts';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const KILLS = arg('kills', 100);
const FILES = arg('files', 600);
const WRITE_BEHIND = process.argv.includes('--write-behind-files') ? arg('write-behind-files', 0) : undefined;
const EMBED = process.argv.includes('--embed');
const STORE = (() => {
  const i = process.argv.indexOf('--store');
  const s = i >= 0 ? process.argv[i + 1] : 'sqlite';
  if (s !== 'sqlite' && s !== 'postgres' && s !== 'chroma')
    throw new Error(`--store takes sqlite, postgres or chroma, not ${s}`);
  return s;
})();
const SERVER_KILLS = STORE === 'sqlite' ? 0 : arg('server-kills', 0.25);
const POWER_LOSS = STORE === 'sqlite' ? arg('power-loss', 0) : 0;
let seed = arg('seed', 1);
const random = () => {
  // a small deterministic generator (mulberry32): the same seed kills at the same instants
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const TSX = import.meta.resolve('tsx');
const server: TestServer | undefined = STORE === 'sqlite' ? undefined : await startServer(STORE);
const BASE_ENV = {
  ...process.env,
  QUARRY_EMBED: EMBED ? 'local' : 'none',
  QUARRY_SHARED_CACHE: 'off',
  NO_COLOR: '1',
  ...(server ? { QUARRY_STORE_URL: server.url } : {}),
  ...(WRITE_BEHIND !== undefined ? { QUARRY_WRITE_BEHIND_FILES: String(WRITE_BEHIND) } : {}),
};
/** Each tree its own repository in a shared server. */
const envFor = (repo: string) => ({ ...BASE_ENV, QUARRY_REPO: repo });

function makeCorpus(root: string): void {
  mkdirSync(join(root, '.git'), { recursive: true });
  writeFileSync(join(root, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  for (let i = 0; i < FILES; i++) {
    const dir = join(root, 'src', `pkg${i % 20}`);
    mkdirSync(dir, { recursive: true });
    const fns = Array.from(
      { length: 8 },
      (_, j) =>
        `/** Step ${j} of module ${i}: checks the ${['cache', 'token', 'socket', 'parser'][j % 4]} state. */\nexport function step${i}x${j}(input: Input${j % 3}): number {\n  const value = helper${(i + j) % 50}(input.field${j});\n  if (value > ${j}) return retry${j % 5}(value);\n  return value * ${i + 1};\n}\n`,
    ).join('\n');
    writeFileSync(join(dir, `mod${i}.ts`), `import { helper${i % 50} } from '../helpers';\n\n${fns}`);
  }
}

/** `quarry index` as a child; resolves with its exit code (or the signal that ended it) and its stderr. */
function runIndex(
  root: string,
  repo: string,
  kill?: { afterMs: number; server: boolean },
): Promise<{ code: number | null; signal: string | null; ms: number; stderr: string }> {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(
      process.execPath,
      ['--import', TSX, CLI, 'index', root, '--quiet', ...(EMBED ? [] : ['--no-embed'])],
      { env: envFor(repo), stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    let timer: NodeJS.Timeout | undefined;
    if (kill)
      timer = setTimeout(() => {
        if (kill.server) void killServer();
        else child.kill('SIGKILL');
      }, kill.afterMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, ms: performance.now() - started, stderr });
    });
  });
}

let serverDown: Promise<void> | undefined;
/** The store's server dies as in a crash: PostgreSQL's immediate shutdown (recovery on restart), Chroma's SIGKILL. */
function killServer(): Promise<void> {
  if (!server) return Promise.resolve();
  serverDown =
    STORE === 'chroma'
      ? Promise.resolve().then(() => {
          process.kill(Number(readFileSync(join(server.dir, 'chroma.pid'), 'utf8')), 'SIGKILL');
        })
      : server.stop();
  return serverDown;
}

/** SQLite's own pragmas, read from outside quarry (nothing migrated or repaired by opening it). */
function rawCheck(dbPath: string): string | null {
  if (!existsSync(dbPath)) return null;
  try {
    const db = new Database(dbPath);
    try {
      const ok = db.pragma('integrity_check', { simple: true });
      if (ok !== 'ok') return `integrity_check: ${ok}`;
      for (const t of ['chunks_fts', 'files_fts', 'refs_fts'])
        db.prepare(`INSERT INTO ${t}(${t}, rank) VALUES('integrity-check', 1)`).run();
      return null;
    } finally {
      db.close();
    }
  } catch (err) {
    // a kill before the schema was made is not a failure
    if (/no such table/.test((err as Error).message)) return null;
    return (err as Error).message;
  }
}

/** The driver's own check through the seam; an index not made yet is no failure. */
async function driverCheck(root: string, repo: string): Promise<string[]> {
  let project: Awaited<ReturnType<typeof openProject>>;
  try {
    project = await openProject({ root, env: envFor(repo), userConfig: false });
  } catch (err) {
    if (isQuarryError(err) && err.code === 'NO_INDEX') return [];
    return [`opening: ${(err as Error).message}`];
  }
  try {
    return await project.store.check();
  } finally {
    await project.close();
  }
}

const work = mkdtempSync(join(tmpdir(), 'quarry-kill-'));
const root = join(work, 'tree');
const clean = join(work, 'clean');
const REPO = `kill-${process.pid}`;
const CLEAN_REPO = `clean-${process.pid}`;
makeCorpus(root);
cpSync(root, clean, { recursive: true });

/** Starts over: an empty index for this tree (kills keep landing mid-run). */
async function dropIndex(): Promise<void> {
  rmSync(join(root, '.quarry'), { recursive: true, force: true });
  if (STORE === 'postgres') {
    const p = await import('pg');
    const c = new p.default.Client({ connectionString: server!.url });
    await c.connect();
    await c.query(`DELETE FROM quarry_repos WHERE name = $1`, [REPO]);
    // the embedding cache is shared by the database's repositories: without this, every run after the first
    // found its vectors there and finished before the kill
    await c.query(`DELETE FROM quarry_embed_cache`);
    await c.end();
  }
  // Chroma's collections are named after the index id kept in the SQLite file just removed: a new id, new ones
}

// how long an uninterrupted run takes: kills are spread over it
const full = await runIndex(clean, CLEAN_REPO);
if (full.code !== 0) throw new Error(`the clean build failed (${full.code}): ${full.stderr}`);
const span = full.ms;

let kills = 0;
let midRun = 0;
let serverKills = 0;
const failures: string[] = [];
const db = join(root, '.quarry', 'index.db');
while (kills < KILLS) {
  // the first instants matter most (start-up, migrations, the walk): half the kills land in the first fifth
  const at = random() < 0.5 ? random() * span * 0.2 : random() * span;
  const ofServer = random() < SERVER_KILLS;
  const r = await runIndex(root, REPO, { afterMs: at, server: ofServer });
  if (ofServer && serverDown) {
    await serverDown;
    serverDown = undefined;
    await server!.restart();
  }
  if (r.signal === 'SIGKILL') {
    kills++;
    midRun++;
  } else if (ofServer && r.code !== 0) {
    // quarry saw its server die: one line, a non-zero exit, nothing hung
    kills++;
    midRun++;
    serverKills++;
    if (r.stderr.trim().split('\n').length !== 1)
      failures.push(`server kill ${kills}: quarry said more than one line: ${r.stderr.slice(0, 400)}`);
  } else if (r.code === 0) {
    // the run finished before the kill: start over from an empty index so that kills keep landing mid-run
    kills++;
    await dropIndex();
  } else failures.push(`run ${kills}: exit ${r.code}: ${r.stderr.trim().split('\n')[0]}`);
  const problems = [
    ...(STORE === 'sqlite' ? [rawCheck(db)].filter((p): p is string => p !== null) : []),
    ...(await driverCheck(root, REPO)),
  ];
  for (const problem of problems)
    failures.push(`after kill ${kills} at ${at.toFixed(0)} ms${ofServer ? ' (server)' : ''}: ${problem}`);
}

/** The final state of a tree's index next to the clean build's: rows, answers and vectors. */
async function compareWithClean(tree: string, repo: string, label: string): Promise<void> {
  const last = await runIndex(tree, repo);
  if (last.code !== 0) failures.push(`${label}: the final resume exited ${last.code}: ${last.stderr}`);
  for (const problem of await driverCheck(tree, repo)) failures.push(`${label}: ${problem}`);
  const [pa, pb] = [
    await openProject({ root: tree, env: envFor(repo), userConfig: false }),
    await openProject({ root: clean, env: envFor(CLEAN_REPO), userConfig: false }),
  ];
  try {
    const [sa, sb] = [
      (await snapshot(pa.store)) as Record<string, unknown>,
      (await snapshot(pb.store)) as Record<string, unknown>,
    ];
    // (its `lexical` part asks for terms of another corpus: the fixed queries below stand for it here)
    for (const k of Object.keys(sb).filter((k) => k !== 'lexical'))
      if (JSON.stringify(sa[k]) !== JSON.stringify(sb[k]))
        failures.push(
          `${label}: ${k} differ from a clean build${process.env.KILL_DEBUG ? `: ${JSON.stringify(sa[k]).slice(0, 300)} vs ${JSON.stringify(sb[k]).slice(0, 300)}` : ''}`,
        );
    if (STORE === 'sqlite') {
      const a = dumpIndex(join(tree, '.quarry', 'index.db'));
      const b = dumpIndex(join(clean, '.quarry', 'index.db'));
      for (const k of ['files', 'chunks', 'symbols', 'fts'] as const)
        if (JSON.stringify(a[k]) !== JSON.stringify(b[k]))
          failures.push(`${label}: ${k} differ from a clean build`);
    }
    const queries = ['cache state', 'retry value', 'helper input field', 'socket parser token'];
    for (const q of queries) {
      const [sa, sb] = await Promise.all(
        [pa, pb].map(async (p) =>
          JSON.stringify(
            (await p.search(q, { mode: 'lexical', topK: 10 })).results.map((x) => [
              x.path,
              x.startLine,
              x.score,
            ]),
          ),
        ),
      );
      if (sa !== sb) failures.push(`${label}: search "${q}" differs from a clean build`);
    }
    if (EMBED) {
      // every vector: bit for bit in SQLite; elsewhere the embedding status and the nearest chunks of fixed
      // vectors, with their scores
      if (STORE === 'sqlite') {
        const [va, vb] = [
          vectorDigest(join(tree, '.quarry', 'index.db')),
          vectorDigest(join(clean, '.quarry', 'index.db')),
        ];
        if (va !== vb) failures.push(`${label}: vectors differ from a clean build: ${va} vs ${vb}`);
      }
      const [ea, eb] = await Promise.all([pa, pb].map((p) => p.store.vectors!.status()));
      if (JSON.stringify(ea) !== JSON.stringify(eb))
        failures.push(`${label}: embedding status differs: ${JSON.stringify(ea)} vs ${JSON.stringify(eb)}`);
      for (const q of ['cache state', 'retry the socket']) {
        const [da, db2] = await Promise.all(
          [pa, pb].map(async (p) =>
            JSON.stringify(
              (await p.search(q, { mode: 'dense', topK: 10 })).results.map((x) => [
                x.path,
                x.startLine,
                Math.round(x.score * 1e5),
              ]),
            ),
          ),
        );
        if (da !== db2) failures.push(`${label}: semantic search "${q}" differs from a clean build`);
      }
    }
  } finally {
    await pa.close();
    await pb.close();
  }
}

function vectorDigest(path: string): string {
  const d = new Database(path, { readonly: true });
  try {
    sqliteVec.load(d);
    const hash = createHash('sha256');
    for (const r of d
      .prepare(
        `SELECT f.path, c.ordinal, v.embedding FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id
         JOIN files f ON f.id = c.file_id ORDER BY f.path, c.ordinal`,
      )
      .iterate() as Iterable<{ path: string; ordinal: number; embedding: Buffer }>)
      hash.update(`${r.path}\0${r.ordinal}\0`).update(r.embedding);
    for (const r of d
      .prepare(
        `SELECT f.path, v.embedding FROM file_vectors v JOIN files f ON f.id = v.file_id ORDER BY f.path`,
      )
      .iterate() as Iterable<{ path: string; embedding: Buffer }>)
      hash.update(`${r.path}\0`).update(r.embedding);
    const embedder = d.prepare(`SELECT value FROM meta WHERE key = 'embedder_id'`).pluck().get();
    const count = d.prepare('SELECT count(*) FROM chunk_vectors').pluck().get();
    return `${embedder} ${count} ${hash.digest('hex')}`;
  } finally {
    d.close();
  }
}

await compareWithClean(root, REPO, 'resumed');

// power-loss copies: the database and its log as they are mid-write, opened, checked, resumed, compared
let copies = 0;
for (let n = 0; n < POWER_LOSS; n++) {
  const tree = join(work, `power-${n}`);
  cpSync(clean, tree, { recursive: true, filter: (src) => !src.endsWith('.quarry') });
  await dropIndex();
  const at = random() * span * 0.7;
  const copy = new Promise<void>((resolve) => {
    setTimeout(() => {
      try {
        mkdirSync(join(tree, '.quarry'), { recursive: true });
        if (existsSync(db)) {
          // a read transaction keeps the log from being restarted and the database from being checkpointed past
          // it while the two files are copied: database first, then the log with whatever frames it has by then
          const reader = new Database(db, { readonly: true });
          try {
            reader.prepare('BEGIN').run();
            reader.prepare('SELECT count(*) FROM meta').get();
            copyFileSync(db, join(tree, '.quarry', 'index.db'));
            if (existsSync(`${db}-wal`)) copyFileSync(`${db}-wal`, join(tree, '.quarry', 'index.db-wal'));
            reader.prepare('COMMIT').run();
            copies++;
          } finally {
            reader.close();
          }
        }
      } catch (err) {
        // the schema was not there yet: nothing to copy
        if (!/no such table/.test((err as Error).message))
          failures.push(`power-loss copy ${n}: ${(err as Error).message}`);
      }
      resolve();
    }, at);
  });
  const run = await runIndex(root, REPO);
  await copy;
  if (run.code !== 0) failures.push(`power-loss run ${n} exited ${run.code}`);
  if (!existsSync(join(tree, '.quarry', 'index.db'))) continue;
  const raw = rawCheck(join(tree, '.quarry', 'index.db'));
  if (raw) failures.push(`power-loss copy ${n} at ${at.toFixed(0)} ms: ${raw}`);
  for (const problem of await driverCheck(tree, REPO)) failures.push(`power-loss copy ${n}: ${problem}`);
  await compareWithClean(tree, REPO, `power-loss copy ${n}`);
}

const report = {
  store: STORE,
  kills,
  midRun,
  serverKills,
  powerLossCopies: copies,
  files: FILES,
  embed: EMBED,
  cleanBuildMs: Math.round(span),
  integrityFailures: failures.filter((f) => f.startsWith('after kill')).length,
  failures,
};
if (process.argv.includes('--json')) console.log(JSON.stringify(report));
else
  console.log(
    `${STORE}: ${kills} kills (${midRun} mid-run${serverKills ? `, ${serverKills} of the server` : ''})${copies ? `, ${copies} power-loss copies` : ''} over a ${Math.round(span)} ms run of ${FILES} files${EMBED ? ' with embeddings' : ''}: ${failures.length ? `${failures.length} failures\n  ${failures.join('\n  ')}` : 'every check passed, and every resumed index equals a clean build'}`,
  );
await server?.dispose();
rmSync(work, { recursive: true, force: true });
process.exitCode = failures.length ? 1 : 0;
