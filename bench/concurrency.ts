// Concurrency soak: for a while, one process keeps re-indexing a changing tree, a `quarry watch` follows the same
// files, a second `quarry index` tries to write now and then, and 8 processes search in loops.
//   node --import tsx bench/concurrency.ts [--seconds N] [--readers N] [--files N]
// Counted: searches answered, errors a user would see (any exit but 0 and 1, SQLITE_BUSY or "locked" in a
// reader's output), the second writer's answers (exit 4 naming the holder, or 0 when it got the lock), the slowest
// search, and an integrity check at the end.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { CLI } from '../test/helpers.ts';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const SECONDS = arg('seconds', 60);
const READERS = arg('readers', 8);
const FILES = arg('files', 400);
const TSX = import.meta.resolve('tsx');
const ENV = { ...process.env, QUARRY_EMBED: 'none', QUARRY_SHARED_CACHE: 'off', NO_COLOR: '1' };

const root = mkdtempSync(join(tmpdir(), 'quarry-soak-'));
mkdirSync(join(root, '.git'));
writeFileSync(join(root, '.git', 'HEAD'), 'ref: refs/heads/main\n');
const write = (i: number, round: number) => {
  const dir = join(root, 'src', `pkg${i % 10}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, `mod${i}.ts`),
    `export function worker${i}(round: number): number {\n  // revision ${round}: cache retry token socket\n  return round * ${i};\n}\n`,
  );
};
for (let i = 0; i < FILES; i++) write(i, 0);

function run(args: string[]): Promise<{ code: number | null; out: string; ms: number }> {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--import', TSX, CLI, ...args], { cwd: root, env: ENV });
    let out = '';
    const append = (d: Buffer) => {
      out += d;
    };
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    child.on('close', (code) => resolve({ code, out, ms: performance.now() - started }));
  });
}

const first = await run(['index', '--quiet']);
if (first.code !== 0) throw new Error(`the first index failed: ${first.out}`);
const watcher = spawn(process.execPath, ['--import', TSX, CLI, 'watch'], {
  cwd: root,
  env: ENV,
  stdio: 'ignore',
});

const end = Date.now() + SECONDS * 1000;
const errors: string[] = [];
let searches = 0;
let slowest = 0;
let writes = 0;
const second = { refused: 0, wrote: 0, other: 0 };

const writer = (async () => {
  for (let round = 1; Date.now() < end; round++) {
    for (let k = 0; k < 20; k++) write(Math.floor(Math.random() * FILES), round);
    const r = await run(['index', '--quiet', '--wait']);
    if (r.code === 0) writes++;
    else errors.push(`writer exit ${r.code}: ${r.out.trim().split('\n')[0]}`);
  }
})();
const intruder = (async () => {
  while (Date.now() < end) {
    await new Promise((r) => setTimeout(r, 3000));
    const r = await run(['index', '--quiet']);
    if (r.code === 0) second.wrote++;
    else if (r.code === 4 && /pid \d+/.test(r.out)) second.refused++;
    else {
      second.other++;
      errors.push(`second writer exit ${r.code}: ${r.out.trim().split('\n')[0]}`);
    }
  }
})();
const readers = Array.from({ length: READERS }, async (_, n) => {
  const words = ['cache retry', 'worker round', 'token socket', `worker${n}`];
  for (let i = 0; Date.now() < end; i++) {
    const r = await run(['search', '--json', words[i % words.length]!]);
    slowest = Math.max(slowest, r.ms);
    if (r.code === 0 || r.code === 1) searches++;
    if ((r.code !== 0 && r.code !== 1) || /SQLITE_BUSY|database is locked/i.test(r.out))
      errors.push(`reader ${n} exit ${r.code}: ${r.out.trim().split('\n')[0]}`);
  }
});
await Promise.all([writer, intruder, ...readers]);
watcher.kill('SIGTERM');
await new Promise((r) => watcher.on('close', r));

const db = new Database(join(root, '.quarry', 'index.db'), { readonly: true });
const integrity = db.pragma('integrity_check', { simple: true });
db.close();
rmSync(root, { recursive: true, force: true });
const report = {
  seconds: SECONDS,
  readers: READERS,
  files: FILES,
  searches,
  writes,
  secondWriter: second,
  slowestSearchMs: Math.round(slowest),
  errors: errors.length,
  integrity,
};
console.log(JSON.stringify(report));
for (const e of errors.slice(0, 10)) console.log(`  ${e}`);
process.exitCode = errors.length || integrity !== 'ok' ? 1 : 0;
