/**
 * Search latency on an index that already exists (bench/index-bench.ts builds one and measures the same way):
 *
 *   node --import tsx bench/search-latency.ts <indexed corpus> [--queries 100] [--cli-queries 20] [--mode lexical]
 *
 * In process: `searchProject` over the benchmark queries (bench/queries.ts), after one warm-up. Whole process:
 * `quarry search` through bin/quarry.js (needs `npm run build`), opening the index itself (`--no-server`), then the
 * same queries again with a `quarry serve --no-watch` of the corpus running, which each search asks (the two
 * alternate, query by query). Prints p50 / p95 of each.
 */
import { execFileSync, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { openProject, searchProject } from '../src/project/local/index.ts';
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
const cliSearch = (q: string, extra: string[]) => {
  const t = performance.now();
  try {
    execFileSync(process.execPath, [bin, 'search', '--root', corpus, '--mode', mode, '--json', ...extra, q], {
      stdio: 'ignore',
    });
  } catch {
    // exit 1: no match, still a whole search
  }
  return performance.now() - t;
};
// a server of the corpus, announced in its .quarry/server.json, as `quarry serve` runs for a user
const server = spawn(process.execPath, [bin, 'serve', '--root', corpus, '--port', '0', '--no-watch'], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, QUARRY_EMBED: process.env.QUARRY_EMBED ?? 'none' },
});
await new Promise<void>((resolve, reject) => {
  server.stdout!.on('data', (b: Buffer) => {
    if (b.toString().includes('http://')) resolve();
  });
  server.once('exit', (code) => reject(new Error(`quarry serve exited with ${code}`)));
});
const whole: number[] = [];
const viaServer: number[] = [];
try {
  for (const q of queries.slice(0, Number(values['cli-queries']))) {
    whole.push(cliSearch(q, ['--no-server']));
    viaServer.push(cliSearch(q, []));
  }
} finally {
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('exit', resolve));
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
console.log(
  `| \`quarry search\` whole process, asking a running \`quarry serve\` (${viaServer.length}) | ${pct(viaServer, 50)} ms | ${pct(viaServer, 95)} ms |`,
);
