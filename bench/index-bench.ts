/**
 * Indexing and search benchmark (not a test: numbers go to docs/benchmarks.md).
 *
 *   npm run build && node --import tsx bench/index-bench.ts <corpus-dir> [--queries 100] [--cli-queries 30]
 *
 * Works on a copy of nothing: it deletes <corpus-dir>/.quarry first. Runs the built CLI (dist/) in child processes
 * for indexing and whole-process search, and the library in this process for search latency.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { openProject, searchProject } from '../src/project/local/index.ts';
import { benchQueries } from './queries.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { queries: { type: 'string', default: '100' }, 'cli-queries': { type: 'string', default: '30' } },
});
const corpus = resolve(positionals[0] ?? '');
if (!positionals[0]) {
  console.error('usage: bench/index-bench.ts <corpus-dir>');
  process.exit(2);
}
const repo = resolve(import.meta.dirname, '..');
const mainJs = join(repo, 'dist', 'cli', 'main.js');

/** Runs the real CLI in a child node process and reports its wall time and peak RSS. */
function cli(args: string[]): { ms: number; rssMiB: number; stdout: string; code: number } {
  const script = `const { main } = await import(${JSON.stringify(mainJs)});
const t = performance.now();
const code = await main(${JSON.stringify(args)});
const ms = performance.now() - t;
process.stderr.write('\\n@@' + JSON.stringify({ ms, rss: process.resourceUsage().maxRSS }) + '\\n');
process.exitCode = code;`;
  const started = performance.now();
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    // the lexical core: vectors have their own benchmarks (embed-bench, phases-bench)
    env: { ...process.env, NO_COLOR: '1', QUARRY_EMBED: 'none' },
  });
  const wall = performance.now() - started;
  const m = /@@(.*)/.exec(r.stderr);
  if (!m || r.status !== 0) throw new Error(`quarry ${args.join(' ')} failed: ${r.stderr}`);
  const inner = JSON.parse(m[1]!) as { ms: number; rss: number };
  return { ms: wall, rssMiB: inner.rss / 1024, stdout: r.stdout, code: r.status ?? -1 };
}

/** `quarry search` exactly as a user runs it: a whole process through bin/quarry.js. */
function cliProcess(args: string[]): number {
  const t = performance.now();
  execFileSync(process.execPath, [join(repo, 'bin', 'quarry.js'), ...args], { stdio: 'ignore' });
  return performance.now() - t;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

rmSync(join(corpus, '.quarry'), { recursive: true, force: true });

const full = cli(['index', corpus, '--json', '--quiet']);
const report = JSON.parse(full.stdout) as {
  files: number;
  chunks: number;
  durationMs: number;
  quickPass?: { files: number; searchableMs: number };
  stats: { chunks: number; bytes: number };
};
// a large run is searchable after its first pass: the process's start, then the run's own time to that point
const searchableMs = report.quickPass ? full.ms - report.durationMs + report.quickPass.searchableMs : full.ms;
const noop = cli(['index', corpus, '--json', '--quiet']);
const noopReport = JSON.parse(noop.stdout) as { added: number; updated: number };

// one changed file: a typical (median-sized) parsed source file, and the largest one
const project = await openProject({ root: corpus });
const files = await project.store.listFiles();
const parsed = files.filter((f) => f.method === 'tree-sitter').sort((a, b) => a.size - b.size);
function editOne(path: string): number {
  const abs = join(corpus, path);
  const original = readFileSync(abs);
  appendFileSync(abs, '\n// quarry benchmark edit\n');
  const ms = cli(['index', corpus, '--json', '--quiet']).ms;
  writeFileSync(abs, original);
  cli(['index', corpus, '--quiet']);
  return ms;
}
const target = parsed[Math.floor(parsed.length / 2)]!;
const largest = parsed[parsed.length - 1]!;
const one = { ms: editOne(target.path) };
const oneLargest = editOne(largest.path);

const queries = await benchQueries(project, files, Number(values.queries));
await searchProject(project, 'warm up the caches'); // first query pays for statement preparation
const inProcess: number[] = [];
for (const q of queries) {
  const t = performance.now();
  await searchProject(project, q);
  inProcess.push(performance.now() - t);
}
await project.close();

const cliTimes: number[] = [];
for (const q of queries.slice(0, Number(values['cli-queries'])))
  cliTimes.push(cliProcess(['search', '--root', corpus, '--json', q]));

const dbBytes = ['index.db', 'index.db-wal'].reduce((n, f) => {
  try {
    return n + statSync(join(corpus, '.quarry', f)).size;
  } catch {
    return n;
  }
}, 0);

const result = {
  date: new Date().toISOString(),
  machine: `${cpus()[0]?.model ?? 'cpu'} · ${availableParallelism()} cores · ${(totalmem() / 2 ** 30).toFixed(0)} GiB · Node ${process.version}`,
  corpus,
  files: report.files,
  chunks: report.stats.chunks,
  fullIndexMs: full.ms,
  searchableMs,
  quickPassFiles: report.quickPass?.files ?? 0,
  filesPerSec: report.files / (full.ms / 1000),
  chunksPerSec: report.stats.chunks / (full.ms / 1000),
  peakRssMiB: full.rssMiB,
  noopReindexMs: noop.ms,
  noopChanged: noopReport.added + noopReport.updated,
  oneFileChangeMs: one.ms,
  oneFile: `${target.path} (${target.size} bytes)`,
  oneLargestFileMs: oneLargest,
  oneLargestFile: `${largest.path} (${largest.size} bytes)`,
  searchInProcessP50Ms: pct(inProcess, 50),
  searchInProcessP95Ms: pct(inProcess, 95),
  searchCliP50Ms: pct(cliTimes, 50),
  searchCliP95Ms: pct(cliTimes, 95),
  queries: queries.length,
  cliQueries: cliTimes.length,
  indexMiB: dbBytes / 2 ** 20,
};
mkdirSync(join(repo, 'bench', 'out'), { recursive: true });
writeFileSync(join(repo, 'bench', 'out', 'index-bench.json'), `${JSON.stringify(result, null, 2)}\n`);
const f1 = (n: number) => n.toFixed(1);
console.log(`| measure | value |
| --- | --- |
| corpus | ${result.files} files, ${result.chunks} chunks |
| searchable (lexical and grep), whole process | ${f1(result.searchableMs / 1000)} s${result.quickPassFiles ? ` (a first pass; ${result.quickPassFiles} files by line windows until parsed)` : ''} |
| full index (lexical), whole process | ${f1(result.fullIndexMs / 1000)} s (${result.filesPerSec.toFixed(0)} files/s, ${result.chunksPerSec.toFixed(0)} chunks/s) |
| peak RSS while indexing | ${result.peakRssMiB.toFixed(0)} MiB |
| no-op re-index, whole process | ${result.noopReindexMs.toFixed(0)} ms |
| one changed file (median size), whole process | ${result.oneFileChangeMs.toFixed(0)} ms |
| one changed file (largest, ${(largest.size / 1024).toFixed(0)} KiB), whole process | ${result.oneLargestFileMs.toFixed(0)} ms |
| search in process, p50 / p95 (${result.queries} queries) | ${f1(result.searchInProcessP50Ms)} / ${f1(result.searchInProcessP95Ms)} ms |
| \`quarry search\` whole process, p50 / p95 (${result.cliQueries} queries) | ${result.searchCliP50Ms.toFixed(0)} / ${result.searchCliP95Ms.toFixed(0)} ms |
| index size | ${result.indexMiB.toFixed(0)} MiB |
| machine | ${result.machine} |`);
