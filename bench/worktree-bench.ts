/**
 * Every worktree, one index: N linked worktrees of a repository at different commits, each indexed as an overlay on
 * the main tree's index (`quarry index` in the worktree), against a full index of each (`quarry index --own`): time,
 * disk, and whether the answers are the same (top-10 files and chunks of each query). Numbers go to docs/benchmarks.md;
 * not a test.
 *
 *   node --import tsx bench/worktree-bench.ts --mirror BARE_GIT_DIR --work DIR [--count 10] [--spacing 25]
 *
 * The embedder is whatever QUARRY_EMBED says (the static table keeps a full index cheap enough to run ten times;
 * with a transformer the overlay's saving is larger still: it embeds only the files that differ).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';

const { values } = parseArgs({
  options: {
    mirror: { type: 'string' },
    work: { type: 'string' },
    count: { type: 'string', default: '10' },
    spacing: { type: 'string', default: '25' },
    queries: { type: 'string', default: '12' },
  },
});
if (!values.mirror || !values.work) {
  console.error('usage: worktree-bench.ts --mirror BARE_GIT_DIR --work DIR [--count 10] [--spacing 25]');
  process.exit(2);
}
const CLI = resolve(import.meta.dirname, '..', 'bin', 'quarry.js');
const work = resolve(values.work);
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
const main = join(work, 'main');
const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'advice.detachedHead=false', ...args], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
git(work, 'clone', '-q', values.mirror, main);

function quarry(cwd: string, args: string[]): { ms: number; out: string } {
  const started = performance.now();
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0 && r.status !== 1) throw new Error(`quarry ${args.join(' ')} in ${cwd}: ${r.stderr}`);
  return { ms: performance.now() - started, out: r.stdout };
}

function du(path: string): number {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.size;
  let total = 0;
  for (const e of readdirSync(path)) total += du(join(path, e));
  return total;
}

const mainIndex = quarry(main, ['index', '--quiet']);
const mainBytes = du(join(main, '.quarry'));
// queries: definition names spread over the index, and commit subjects
const db = new Database(join(main, '.quarry', 'index.db'), { readonly: true });
const names = (
  db.prepare('SELECT DISTINCT name FROM symbols WHERE length(name) >= 6 ORDER BY name').all() as Array<{
    name: string;
  }>
).map((r) => r.name);
db.close();
const n = Number(values.queries);
const queries = [
  ...Array.from({ length: n / 2 }, (_, i) => names[Math.floor(((i + 0.5) * names.length) / (n / 2))]!),
  ...git(main, 'log', '--format=%s', '-n', String(n / 2), '--no-merges')
    .trim()
    .split('\n'),
];

const answer = (cwd: string) =>
  queries.map((q) => {
    const res = JSON.parse(quarry(cwd, ['search', '--json', '-k', '10', q]).out) as {
      results: Array<{ path: string; startLine: number }>;
      files: Array<{ path: string }>;
    };
    return JSON.stringify([
      res.files.slice(0, 10).map((f) => f.path),
      res.results.map((r) => `${r.path}:${r.startLine}`),
    ]);
  });

const rows: Array<Record<string, string | number>> = [];
const totals = { overlayMs: 0, ownMs: 0, overlayBytes: 0, ownBytes: 0, same: 0, asked: 0 };
for (let i = 1; i <= Number(values.count); i++) {
  const wt = join(work, `wt${i}`);
  git(main, 'worktree', 'add', '-q', wt, `HEAD~${i * Number(values.spacing)}`);
  const overlay = quarry(wt, ['index', '--json']);
  const info = JSON.parse(overlay.out) as { changed: number };
  const overlayBytes = du(join(wt, '.quarry'));
  const viaOverlay = answer(wt);
  const own = quarry(wt, ['index', '--own', '--quiet']);
  const ownBytes = du(join(wt, '.quarry', 'index.db')) + du(join(wt, '.quarry', 'index.db-wal'));
  const viaOwn = answer(wt);
  const same = viaOverlay.filter((a, k) => a === viaOwn[k]).length;
  rows.push({
    worktree: `HEAD~${i * Number(values.spacing)}`,
    'files differ': info.changed,
    'overlay s': (overlay.ms / 1000).toFixed(1),
    'overlay MB': (overlayBytes / 2 ** 20).toFixed(1),
    'full s': (own.ms / 1000).toFixed(1),
    'full MB': (ownBytes / 2 ** 20).toFixed(1),
    'same answers': `${same}/${queries.length}`,
  });
  totals.overlayMs += overlay.ms;
  totals.ownMs += own.ms;
  totals.overlayBytes += overlayBytes;
  totals.ownBytes += ownBytes;
  totals.same += same;
  totals.asked += queries.length;
}
rows.push({
  worktree: 'all',
  'files differ': '',
  'overlay s': (totals.overlayMs / 1000).toFixed(1),
  'overlay MB': (totals.overlayBytes / 2 ** 20).toFixed(1),
  'full s': (totals.ownMs / 1000).toFixed(1),
  'full MB': (totals.ownBytes / 2 ** 20).toFixed(1),
  'same answers': `${totals.same}/${totals.asked}`,
});
console.log(
  `main tree: indexed in ${(mainIndex.ms / 1000).toFixed(1)} s, ${(mainBytes / 2 ** 20).toFixed(1)} MB; embedder ${process.env.QUARRY_EMBED ?? 'default'}`,
);
console.table(rows);
