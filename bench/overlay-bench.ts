// A local overlay on a shared index against a full local index of the same working tree (docs/team.md).
//
//   node --import tsx bench/overlay-bench.ts --git <repository or bare git dir> [--changed 20] [--queries 30]
//        [--base store|serve] [--store postgres://…] [--embed local|static] [--json]
//
// Clones the repository at its HEAD, indexes it as a team would (--base store: into a shared PostgreSQL, a fresh
// test server unless --store, searched directly; --base serve: a clone indexed with SQLite and served by `quarry
// serve`, asked over HTTP), then changes files as a developer does (edits, one deletion, one new file: --changed in
// all), and measures on the same checkout:
//   - the overlay's set-up (`openOverlay`: the git diff, a lexical index of the working tree, vectors for the
//     changed files only), cold and again with nothing changed (what each later command pays);
//   - a full local index of the working tree (lexical + every vector), the alternative;
//   - whether the overlay's results equal the full index's: top-10 files and chunks with scores to 6 decimals, over
//     the repository's own latest commit subjects as queries.
// Each index runs with the machine-wide embedding cache off, so neither side is paid for by the other.

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { indexProject, openProject } from '../src/project/local/index.ts';
import { openOverlay } from '../src/project/overlay.ts';
import { openRemoteProject } from '../src/project/remote.ts';
import type { Project } from '../src/project/types.ts';
import type { SearchResponse } from '../src/search/search.ts';
import { CLI, waitForOutput } from '../test/helpers.ts';
import { startServer, type TestServer } from '../test/store-servers.ts';

process.env.QUARRY_SHARED_CACHE = 'off';
const args = process.argv.slice(2);
const arg = (name: string, fallback?: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const source = arg('git');
if (!source) {
  console.error(
    'usage: overlay-bench.ts --git <repository> [--changed 20] [--queries 30] [--store URL] [--json]',
  );
  process.exit(2);
}
const CHANGED = Number(arg('changed', '20'));
const QUERIES = Number(arg('queries', '30'));
const EMBED = arg('embed', 'local')!;
const json = args.includes('--json');
const BASE = arg('base', 'store') as 'store' | 'serve';
let servedUrl = '';
const log = (m: string) => {
  if (!json) console.error(m);
};

const work = mkdtempSync(join(tmpdir(), 'quarry-overlay-bench-'));
const root = join(work, 'checkout');
const git = (...a: string[]) =>
  execFileSync('git', ['-C', root, ...a], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
execFileSync('git', ['clone', '-q', source, root]);
const files = git('ls-files').split('\n').filter(Boolean);
const subjects = git('log', `-${QUERIES}`, '--no-merges', '--format=%s').split('\n').filter(Boolean);
writeFileSync(join(root, 'quarry.toml'), `[embed]\nprovider = "${EMBED}"\n`);
git('add', 'quarry.toml');
git('-c', 'user.email=b@example.com', '-c', 'user.name=bench', 'commit', '-q', '-m', 'bench settings');

const ms = (t: number) => Math.round(performance.now() - t);
let server: TestServer | undefined;
let served: ChildProcess | undefined;
const key = 'bench/overlay';
const overrides = BASE === 'store' ? { store: { url: '', repo: key } } : undefined;
let t = performance.now();
let chunks = 0;
if (BASE === 'store') {
  // the team's PostgreSQL (HNSW over its vectors), indexed from this checkout as CI would
  if (!arg('store')) server = await startServer('postgres');
  overrides!.store.url = arg('store') ?? server!.url;
  const team = await openProject({ root, create: true, userConfig: false, overrides });
  chunks = (await indexProject(team, { replace: true })).chunksWritten;
  await team.close();
} else {
  // a team's `quarry serve` of its own checkout at the commit (SQLite: exact vectors)
  const shared = join(work, 'shared');
  execFileSync('git', ['clone', '-q', root, shared]);
  const team = await openProject({ root: shared, create: true, userConfig: false });
  chunks = (await indexProject(team)).chunksWritten;
  await team.close();
  served = spawn(
    process.execPath,
    ['--import', import.meta.resolve('tsx'), CLI, 'serve', '--no-watch', '--port', '0'],
    {
      cwd: shared,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  servedUrl = (await waitForOutput(served, /quarry panel: (\S+)/))[1]!;
}
const sharedMs = ms(t);
log(`shared index (${BASE}): ${files.length} files in ${(sharedMs / 1000).toFixed(1)} s`);

// the developer's changes: source files spread over the tree, edited; one deleted; one added
const sources = files.filter((f) => /\.(rs|go|ts|js|py|java|kt|c|cc|cpp|h|rb|php|cs|swift|scala)$/.test(f));
const step = Math.max(1, Math.floor(sources.length / CHANGED));
const picked = sources.filter((_, i) => i % step === 0).slice(0, CHANGED - 1);
const [deleted, ...edited] = picked;
for (const [i, f] of edited.entries()) {
  const text = readFileSync(join(root, f), 'utf8');
  // an edit a developer makes: a renamed word through the file, and a new comment at its end
  writeFileSync(join(root, f), text.replace(/\berror\b/g, 'failure'));
  appendFileSync(
    join(root, f),
    `\n// overlay bench edit ${i}: retry the request when the connection resets\n`,
  );
}
rmSync(join(root, deleted!));
const added = `${edited[0]!.replace(/[^/]+$/, '')}overlay_bench_new.${edited[0]!.split('.').pop()}`;
writeFileSync(
  join(root, added),
  '// a file added in the working tree: merges nearest vectors of two indexes\n',
);

t = performance.now();
const base: Project =
  BASE === 'store'
    ? await openProject({ root, userConfig: false, overrides })
    : await openRemoteProject({ url: servedUrl });
const overlay = await openOverlay(base, { root, onNotice: log });
const overlayMs = ms(t);
if (!overlay) throw new Error('no overlay was made');
t = performance.now();
await overlay.sync();
const overlayNoopMs = ms(t);
log(
  `overlay: ${overlay.overlay.changed.length} files differ; set up in ${overlayMs} ms, again in ${overlayNoopMs} ms`,
);

t = performance.now();
const full = await openProject({ root, create: true, userConfig: false });
await indexProject(full);
const fullMs = ms(t);
log(`full local index: ${(fullMs / 1000).toFixed(1)} s`);

const shape = (r: SearchResponse) => ({
  files: r.files.map((f) => `${f.path} ${f.score.toFixed(6)}`),
  results: r.results.map((c) => `${c.path}:${c.startLine}-${c.endLine} ${c.score.toFixed(6)}`),
});
let sameFiles = 0;
let sameResults = 0;
let sameTop1 = 0;
let maxDelta = 0;
const differing: string[] = [];
for (const q of subjects) {
  const [a, b] = await Promise.all([full.search(q), overlay.search(q)]);
  const [sa, sb] = [shape(a), shape(b)];
  if (JSON.stringify(sa.files) === JSON.stringify(sb.files)) sameFiles++;
  else {
    differing.push(q);
    const i = sa.files.findIndex((f, k) => f !== sb.files[k]);
    log(
      `differs: ${q}\n  full:    ${sa.files.slice(i, i + 3).join(' | ')}\n  overlay: ${sb.files.slice(i, i + 3).join(' | ')}`,
    );
  }
  if (JSON.stringify(sa.results) === JSON.stringify(sb.results)) sameResults++;
  if (a.files[0]?.path === b.files[0]?.path) sameTop1++;
  for (const [i, f] of a.files.entries())
    if (b.files[i]?.path === f.path) maxDelta = Math.max(maxDelta, Math.abs(b.files[i]!.score - f.score));
}
const out = {
  repository: source,
  files: files.length,
  base: BASE,
  chunks,
  changed: overlay.overlay.changed.length,
  embedder: (await full.store.vectors?.embedder())?.id ?? null,
  sharedIndexMs: sharedMs,
  overlaySetupMs: overlayMs,
  overlayNoopMs,
  fullLocalIndexMs: fullMs,
  speedup: Number((fullMs / overlayMs).toFixed(1)),
  queries: subjects.length,
  sameTop10Files: sameFiles,
  sameTop10Chunks: sameResults,
  sameTop1File: sameTop1,
  maxFileScoreDelta: maxDelta,
  differing,
};
await overlay.close();
await full.close();
await server?.dispose();
served?.kill('SIGTERM');
rmSync(work, { recursive: true, force: true });
console.log(json ? JSON.stringify(out) : out);
