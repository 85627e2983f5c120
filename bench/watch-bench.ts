/**
 * Freshness: how long from saving a file until `search` finds what was saved, with auto-sync running (numbers go to
 * docs/benchmarks.md; not a test).
 *
 *   node --import tsx bench/watch-bench.ts <indexed corpus> [--saves 20]
 *
 * Appends a unique identifier to an existing source file (then restores it), and polls lexical search every 10 ms.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { openProject, searchProject } from '../src/project/local/index.ts';
import { startAutoSync } from '../src/watch/autosync.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { saves: { type: 'string', default: '20' } },
});
const root = resolve(positionals[0] ?? '.');
const project = await openProject({ root, overrides: { embed: { provider: 'none' } } });
const sync = await startAutoSync(project, { embed: false, sweepMs: 0 });
await sync.syncNow();
const files = (await project.store.listFiles()).filter(
  (f) => /\.(java|ts|py|go|js)$/.test(f.path) && f.method === 'tree-sitter',
);
const times: number[] = [];
const missed: string[] = [];
/** How long a save may take to rank first before it counts as missed. */
const DEADLINE_MS = 20_000;
for (let i = 0; i < Number(values.saves); i++) {
  const f = files[(i * 7919) % files.length]!;
  const abs = join(root, f.path);
  const before = readFileSync(abs);
  const word = `zzfresh${Date.now().toString(36)}q${i}`;
  const t0 = performance.now();
  writeFileSync(abs, `${before.toString('utf8')}\n// ${word}\n`);
  // a save that search does not rank first within the deadline is counted as missed, not waited on for ever
  let found = false;
  while (performance.now() - t0 < DEADLINE_MS) {
    const r = await searchProject(project, word, { mode: 'lexical', topK: 1 });
    if (r.results[0]?.path === f.path) {
      found = true;
      break;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  if (found) times.push(performance.now() - t0);
  else missed.push(f.path);
  writeFileSync(abs, before);
  await new Promise((r) => setTimeout(r, 300));
}
await sync.stop();
await project.close();
times.sort((a, b) => a - b);
const q = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!;
console.log(
  `${files.length} source files; ${times.length} saves: save → searchable p50 ${q(0.5).toFixed(0)} ms, p95 ${q(0.95).toFixed(0)} ms, max ${q(1).toFixed(0)} ms`,
);
if (missed.length)
  console.log(`${missed.length} saves not ranked first within ${DEADLINE_MS / 1000} s: ${missed.join(', ')}`);
