/**
 * What a one-shot `quarry` command costs as a whole process, beside Node's own start (`node -e ''`) measured in the
 * same run, so that the ratio holds on a noisy machine:
 *
 *   node --import tsx bench/startup-bench.ts <indexed repository>... [--runs 20] [--mode lexical]
 *   node --import tsx bench/startup-bench.ts <repository>=<its copy>... --baseline <other build>/bin/quarry.js
 *   node --import tsx bench/startup-bench.ts <indexed repository> --builds [--runs 20] [--mode lexical]
 *
 * Rows, run interleaved (one of each per round, so that every row sees the same machine): `node -e ''`,
 * `quarry --version` (start-up alone), and the one-shot commands that catch up with the working tree before they
 * answer: `search --no-server` over a fixed set of questions, `def` and `grep -F -w` of names the index defines (a
 * few definitions each). Each row: p50 / p95, and its p50 over node's. `--baseline` runs another build's CLI (a
 * checkout of the commit before, built) in the same rounds, each build in its own copy of a repository (`cp -a`,
 * then `quarry index` with that build: two builds may keep their walk caches differently). `--builds` instead
 * compares the CLI's bundle (bin/quarry.js → dist/bundle/) with the same build unbundled (dist/cli/run.js). Needs
 * `npm run build` first, and each repository indexed (`quarry index`). Prints markdown tables for docs/benchmarks.md.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    runs: { type: 'string', default: '20' },
    mode: { type: 'string', default: 'lexical' },
    builds: { type: 'boolean', default: false },
    baseline: { type: 'string' },
  },
});
// `tree` or `tree=copy`: the copy is the baseline build's
const pairs = (positionals.length ? positionals : ['.']).map((p) => {
  const [mine, theirs] = p.split('=');
  return { mine: resolve(mine!), theirs: resolve(theirs ?? mine!) };
});
const repos = pairs.map((p) => p.mine);
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

/**
 * Each process writes the CPU time it used (every thread, not the processes it starts) when it exits: on a machine
 * that other jobs share, a process's CPU time moves far less than its wall time.
 */
const cpuDir = mkdtempSync(join(tmpdir(), 'quarry-startup-'));
const preload = join(cpuDir, 'cpu.mjs');
writeFileSync(
  preload,
  `import { writeFileSync } from 'node:fs';
process.on('exit', () => {
  const u = process.cpuUsage();
  writeFileSync(process.env.QUARRY_BENCH_CPU, String((u.user + u.system) / 1000));
});
`,
);
process.on('exit', () => rmSync(cpuDir, { recursive: true, force: true }));

/** Wall time and CPU time (ms) of one process; exit 1 (no match) is still a whole command. */
function timed(cwd: string, args: string[]): { wall: number; cpu: number } {
  const cpuFile = join(cpuDir, 'cpu.txt');
  const t = performance.now();
  try {
    execFileSync(process.execPath, ['--import', preload, ...args], {
      cwd,
      stdio: 'ignore',
      env: { ...process.env, NO_COLOR: '1', QUARRY_BENCH_CPU: cpuFile },
    });
  } catch (err) {
    if ((err as { status?: number }).status !== 1) throw err;
  }
  const wall = performance.now() - t;
  return { wall, cpu: Number(readFileSync(cpuFile, 'utf8')) };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const fmt = (xs: number[]) => `${pct(xs, 50).toFixed(0)} / ${pct(xs, 95).toFixed(0)} ms`;

/** Names the index defines in one or two places, long enough to be a real name: what `def` is asked for. */
function namesOf(repo: string): string[] {
  const db = new Database(join(repo, '.quarry', 'index.db'), { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare(
        `SELECT name FROM symbols WHERE length(name) >= 8 GROUP BY name HAVING count(*) <= 2 ORDER BY name`,
      )
      .all() as Array<{ name: string }>;
    // spread over the alphabet, not the first eight
    const step = Math.max(1, Math.floor(rows.length / 8));
    return rows
      .filter((_, i) => i % step === 0)
      .slice(0, 8)
      .map((r) => r.name);
  } finally {
    db.close();
  }
}

if (values.builds) {
  const repo = repos[0]!;
  type Row = Record<keyof typeof entries, number[]>;
  const version: Row = { bundle: [], unbundled: [] };
  const search: Row = { bundle: [], unbundled: [] };
  // one warm-up of each, so that the file cache holds both builds
  for (const e of Object.values(entries)) timed(repo, [e, '--version']);
  for (let i = 0; i < runs; i++) {
    const q = QUESTIONS[i % QUESTIONS.length]!;
    for (const [name, e] of Object.entries(entries) as Array<[keyof Row, string]>) {
      version[name].push(timed(repo, [e, '--version']).wall);
      search[name].push(
        timed(repo, [e, 'search', q, '--no-server', '--mode', values.mode!, '-k', '10']).wall,
      );
    }
  }
  console.log(`\n${repo}, ${runs} runs each, interleaved; p50 / p95\n`);
  console.log('| command | unbundled (dist/cli) | bundle (dist/bundle) |');
  console.log('| --- | ---: | ---: |');
  console.log(`| \`quarry --version\` | ${fmt(version.unbundled)} | ${fmt(version.bundle)} |`);
  console.log(`| \`quarry search\` (${values.mode}) | ${fmt(search.unbundled)} | ${fmt(search.bundle)} |`);
} else {
  const builds = [
    ...(values.baseline ? [{ name: 'baseline', quarry: resolve(values.baseline), theirs: true }] : []),
    { name: 'this build', quarry: entries.bundle, theirs: false },
  ];
  type Row = { tree: string; label: string; build: string; repo: string; args: (i: number) => string[] };
  const rows: Array<Row & { wall: number[]; cpu: number[] }> = [];
  const row = (r: Row) => rows.push({ ...r, wall: [], cpu: [] });
  const node = { tree: '', label: "`node -e ''`", build: '', repo: repos[0]!, args: () => ['-e', ''] };
  row(node);
  for (const b of builds)
    row({
      tree: '',
      label: '`quarry --version`',
      build: b.name,
      repo: repos[0]!,
      args: () => [b.quarry, '--version'],
    });
  for (const pair of pairs) {
    const ns = namesOf(pair.mine);
    const name = (i: number) => ns[i % ns.length]!;
    const tree = pair.mine.split('/').pop()!;
    const q = (i: number) => QUESTIONS[i % QUESTIONS.length]!;
    const commands: Array<[string, (i: number) => string[]]> = [
      [
        `\`search --no-server --mode ${values.mode}\``,
        (i) => ['search', q(i), '--no-server', '--mode', values.mode!],
      ],
      ['`def`', (i) => ['def', name(i)]],
      ['`grep -F -w`', (i) => ['grep', '-F', '-w', name(i)]],
    ];
    for (const [label, args] of commands)
      for (const b of builds)
        row({
          tree,
          label,
          build: b.name,
          repo: b.theirs ? pair.theirs : pair.mine,
          args: (i) => [b.quarry, ...args(i)],
        });
  }
  // one warm-up of each, so that the file cache holds the builds, the indexes and the trees
  for (const r of rows) timed(r.repo, r.args(0));
  for (let i = 0; i < runs; i++)
    for (const r of rows) {
      const t = timed(r.repo, r.args(i));
      r.wall.push(t.wall);
      r.cpu.push(t.cpu);
    }
  const wallBase = pct(rows[0]!.wall, 50);
  const cpuBase = pct(rows[0]!.cpu, 50);
  console.log(
    `\n${runs} runs each, interleaved; wall time p50 / p95 and CPU time p50 (the process's own, every thread), each p50 over node's\n`,
  );
  const b = values.baseline ? ' build |' : '';
  console.log(`| tree | command |${b} wall p50 / p95 | × node | CPU p50 | × node |`);
  console.log(`| --- | --- |${values.baseline ? ' --- |' : ''} ---: | ---: | ---: | ---: |`);
  for (const r of rows)
    console.log(
      `| ${r.tree} | ${r.label} |${values.baseline ? ` ${r.build} |` : ''} ${fmt(r.wall)} | ${(pct(r.wall, 50) / wallBase).toFixed(1)}× | ${pct(r.cpu, 50).toFixed(0)} ms | ${(pct(r.cpu, 50) / cpuBase).toFixed(1)}× |`,
    );
}
