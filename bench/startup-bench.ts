/**
 * What a one-shot `quarry` command costs as a whole process, the CLI's bundle (bin/quarry.js → dist/bundle/) against
 * the same build unbundled (dist/cli/run.js), interleaved so that both see the same machine:
 *
 *   node --import tsx bench/startup-bench.ts <indexed repository> [--runs 20] [--mode lexical]
 *
 * Rows: `quarry --version` (start-up alone), and `quarry search` over a fixed set of questions (p50 / p95). Needs
 * `npm run build` first. Prints a markdown table for docs/benchmarks.md.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { runs: { type: 'string', default: '20' }, mode: { type: 'string', default: 'lexical' } },
});
const repo = resolve(positionals[0] ?? '.');
const runs = Number(values.runs);
const here = dirname(dirname(fileURLToPath(import.meta.url)));
const entries = { bundle: join(here, 'bin', 'quarry.js'), unbundled: join(here, 'dist', 'cli', 'run.js') };
for (const e of Object.values(entries))
  if (!existsSync(e) || !existsSync(join(here, 'dist', 'bundle', 'run.js')))
    throw new Error(`${e} is missing: run npm run build first`);

const QUESTIONS = [
  'where is the configuration file parsed',
  'error handling when a request fails',
  'parse command line arguments',
  'how are tests run',
  'cache invalidation',
  'read a file from disk',
  'logging setup',
  'connection retry with backoff',
];

function timed(entry: string, args: string[]): number {
  const t = performance.now();
  execFileSync(process.execPath, [entry, ...args], {
    cwd: repo,
    stdio: 'ignore',
    env: { ...process.env, NO_COLOR: '1' },
  });
  return performance.now() - t;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

type Row = Record<keyof typeof entries, number[]>;
const version: Row = { bundle: [], unbundled: [] };
const search: Row = { bundle: [], unbundled: [] };
// one warm-up of each, so that the file cache holds both builds
for (const e of Object.values(entries)) timed(e, ['--version']);
for (let i = 0; i < runs; i++) {
  const q = QUESTIONS[i % QUESTIONS.length]!;
  for (const [name, e] of Object.entries(entries) as Array<[keyof Row, string]>) {
    version[name].push(timed(e, ['--version']));
    try {
      search[name].push(timed(e, ['search', q, '--mode', values.mode!, '-k', '10']));
    } catch {
      // exit 1: no match; still a whole search
      search[name].push(Number.NaN);
    }
  }
}
const fmt = (xs: number[]) => {
  const ok = xs.filter((x) => !Number.isNaN(x));
  return `${pct(ok, 50).toFixed(0)} / ${pct(ok, 95).toFixed(0)} ms`;
};
console.log(`\n${repo}, ${runs} runs each, interleaved; p50 / p95\n`);
console.log('| command | unbundled (dist/cli) | bundle (dist/bundle) |');
console.log('| --- | ---: | ---: |');
console.log(`| \`quarry --version\` | ${fmt(version.unbundled)} | ${fmt(version.bundle)} |`);
console.log(`| \`quarry search\` (${values.mode}) | ${fmt(search.unbundled)} | ${fmt(search.bundle)} |`);
