/**
 * Search latency on an index that already exists (bench/index-bench.ts builds one and measures the same way):
 *
 *   node --import tsx bench/search-latency.ts <indexed corpus> [--queries 100] [--cli-queries 20] [--mode lexical]
 *
 * In process: `searchProject` over the benchmark queries (bench/queries.ts), after one warm-up. Whole process:
 * `quarry search` through bin/quarry.js (needs `npm run build`). Prints p50 / p95 of each.
 */
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { openProject, searchProject } from '../src/project/local.ts';
import type { SearchMode } from '../src/search/search.ts';
import { benchQueries } from './queries.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    queries: { type: 'string', default: '100' },
    'cli-queries': { type: 'string', default: '20' },
    mode: { type: 'string', default: 'lexical' },
  },
});
if (!positionals[0]) {
  console.error('usage: bench/search-latency.ts <indexed corpus> [--queries 100] [--mode lexical]');
  process.exit(2);
}
const corpus = resolve(positionals[0]);
const mode = values.mode as SearchMode;
const project = await openProject({ root: corpus });
const queries = await benchQueries(project, await project.store.listFiles(), Number(values.queries));
await searchProject(project, 'warm up the caches', { mode });
const inProcess: number[] = [];
for (const q of queries) {
  const t = performance.now();
  await searchProject(project, q, { mode });
  inProcess.push(performance.now() - t);
}
await project.close();

const bin = join(import.meta.dirname, '..', 'bin', 'quarry.js');
const whole: number[] = [];
for (const q of queries.slice(0, Number(values['cli-queries']))) {
  const t = performance.now();
  try {
    execFileSync(process.execPath, [bin, 'search', '--root', corpus, '--mode', mode, '--json', q], {
      stdio: 'ignore',
    });
  } catch {
    // exit 1: no match, still a whole search
  }
  whole.push(performance.now() - t);
}
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!.toFixed(1);
};
console.log(`\n${corpus}, ${mode}\n`);
console.log('| search | p50 | p95 |');
console.log('| --- | ---: | ---: |');
console.log(
  `| in process (${inProcess.length} queries) | ${pct(inProcess, 50)} ms | ${pct(inProcess, 95)} ms |`,
);
console.log(
  `| \`quarry search\` whole process (${whole.length}) | ${pct(whole, 50)} ms | ${pct(whole, 95)} ms |`,
);
