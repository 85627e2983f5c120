// Kill loop: `kill -9` quarry at random instants while it indexes, check the index after every kill, resume, and
// compare the final index with a clean build of the same tree.
//   node --import tsx bench/kill-loop.ts [--kills N] [--files N] [--embed] [--seed S] [--json]
// Lexical by default (walk, chunking, the lexical writes); --embed adds both embedding phases with the real model
// (weights from scripts/fetch-test-weights.sh). The tree is generated (TypeScript, `--files` of them) in a
// temporary folder. After each kill: `PRAGMA integrity_check` and FTS5's own integrity check; the next kill hits the
// resumed run. At the end the run is let finish, and files, chunks, symbols, references, FTS answers and (with
// --embed) the vectors' count are compared with a clean build, and the same fixed queries are searched in both.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { openProject } from '../src/api.ts';
import { CLI, dumpIndex } from '../test/helpers.ts';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const KILLS = arg('kills', 100);
const FILES = arg('files', 600);
const EMBED = process.argv.includes('--embed');
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
const ENV = {
  ...process.env,
  QUARRY_EMBED: EMBED ? 'local' : 'none',
  QUARRY_SHARED_CACHE: 'off',
  NO_COLOR: '1',
};

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

/** `quarry index` as a child; resolves with its exit code (or the signal that ended it). */
function runIndex(
  root: string,
  killAfterMs?: number,
): Promise<{ code: number | null; signal: string | null; ms: number }> {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(
      process.execPath,
      ['--import', TSX, CLI, 'index', root, '--quiet', ...(EMBED ? [] : ['--no-embed'])],
      {
        env: ENV,
        stdio: 'ignore',
      },
    );
    let timer: NodeJS.Timeout | undefined;
    if (killAfterMs !== undefined) timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, ms: performance.now() - started });
    });
  });
}

function check(dbPath: string): string | null {
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
    // a kill before the database was created is not a failure
    if (/unable to open|no such table|directory does not exist/.test((err as Error).message)) return null;
    return (err as Error).message;
  }
}

const work = mkdtempSync(join(tmpdir(), 'quarry-kill-'));
const root = join(work, 'tree');
const clean = join(work, 'clean');
makeCorpus(root);
cpSync(root, clean, { recursive: true });

// how long an uninterrupted run takes: kills are spread over it
const full = await runIndex(clean);
if (full.code !== 0) throw new Error(`the clean build failed (${full.code})`);
const span = full.ms;

let kills = 0;
let midRun = 0;
const failures: string[] = [];
const db = join(root, '.quarry', 'index.db');
while (kills < KILLS) {
  // the first instants matter most (start-up, migrations, the walk): half the kills land in the first fifth
  const at = random() < 0.5 ? random() * span * 0.2 : random() * span;
  const r = await runIndex(root, at);
  if (r.signal === 'SIGKILL') {
    kills++;
    midRun++;
  } else if (r.code === 0) {
    // the run finished before the kill: start over from an empty index so that kills keep landing mid-run
    kills++;
    rmSync(join(root, '.quarry'), { recursive: true, force: true });
  } else failures.push(`run ${kills}: exit ${r.code}`);
  const problem = check(db);
  if (problem) failures.push(`after kill ${kills} at ${at.toFixed(0)} ms: ${problem}`);
}
// let it finish, then compare with the clean build
const last = await runIndex(root);
if (last.code !== 0) failures.push(`the final resume exited ${last.code}`);
const a = dumpIndex(db);
const b = dumpIndex(join(clean, '.quarry', 'index.db'));
for (const k of ['files', 'chunks', 'symbols', 'fts'] as const)
  if (JSON.stringify(a[k]) !== JSON.stringify(b[k])) failures.push(`${k} differ from a clean build`);
// with --embed: every vector (by file and chunk) and the embedder record, bit for bit
const vectorDigest = (path: string) => {
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
};
if (EMBED) {
  const [va, vb] = [vectorDigest(db), vectorDigest(join(clean, '.quarry', 'index.db'))];
  if (va !== vb) failures.push(`vectors differ from a clean build: ${va} vs ${vb}`);
}
const queries = ['cache state', 'retry value', 'helper input field', 'socket parser token'];
const searchAll = async (r: string) => {
  const p = await openProject({ root: r, env: ENV });
  try {
    const out: string[] = [];
    for (const q of queries)
      out.push(
        JSON.stringify(
          (await p.search(q, { mode: 'lexical', topK: 10 })).results.map((x) => [
            x.path,
            x.startLine,
            x.score,
          ]),
        ),
      );
    return out;
  } finally {
    await p.close();
  }
};
const [sa, sb] = [await searchAll(root), await searchAll(clean)];
queries.forEach((q, i) => {
  if (sa[i] !== sb[i]) failures.push(`search "${q}" differs from a clean build`);
});
const report = {
  kills,
  midRun,
  files: FILES,
  embed: EMBED,
  cleanBuildMs: Math.round(span),
  integrityFailures: failures.filter((f) => f.startsWith('after kill')).length,
  failures,
};
if (process.argv.includes('--json')) console.log(JSON.stringify(report));
else
  console.log(
    `${kills} kills (${midRun} mid-run) over a ${Math.round(span)} ms run of ${FILES} files${EMBED ? ' with embeddings' : ''}: ${failures.length ? `${failures.length} failures\n  ${failures.join('\n  ')}` : 'every check passed, and the resumed index equals a clean build'}`,
  );
rmSync(work, { recursive: true, force: true });
process.exitCode = failures.length ? 1 : 0;
