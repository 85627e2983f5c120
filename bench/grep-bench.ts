/**
 * `quarry grep` against ripgrep over the same tree (not a test: numbers go to docs/benchmarks.md).
 *
 *   node --import tsx bench/grep-bench.ts <corpus-dir> [--queries 50] [--cli-queries 15] [--rg PATH]
 *   node --import tsx bench/grep-bench.ts --make <corpus-dir> --from <folder of checkouts> [--files 10000]
 *
 * `--make` copies whole checkouts (in name order) into one folder until it holds --files files. The run indexes the
 * corpus lexically if it has no index, draws literal queries from its files (fixed seed: an identifier-like piece of a
 * random line, 6–24 characters, and regular expressions built from them), and times each engine on every query:
 * quarry in this process (the library call the CLI, HTTP and MCP make), quarry as a whole process, and ripgrep
 * (`pip install ripgrep`, or --rg). Matching lines are compared on files both engines read.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { indexProject, openProject } from '../src/project/local/index.ts';
import { seededRandom } from '../test/helpers.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    queries: { type: 'string', default: '50' },
    'cli-queries': { type: 'string', default: '15' },
    rg: { type: 'string', default: 'rg' },
    make: { type: 'boolean', default: false },
    from: { type: 'string' },
    files: { type: 'string', default: '10000' },
  },
});
const corpus = resolve(positionals[0] ?? '');
if (!positionals[0]) {
  console.error('usage: bench/grep-bench.ts <corpus-dir> | --make <corpus-dir> --from <checkouts>');
  process.exit(2);
}

function countFiles(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === '.git' || e.name === '.quarry') continue;
    if (e.isDirectory()) n += countFiles(join(dir, e.name));
    else if (e.isFile()) n++;
  }
  return n;
}

if (values.make) {
  const from = resolve(values.from ?? '');
  const want = Number(values.files);
  mkdirSync(corpus, { recursive: true });
  let have = countFiles(corpus);
  for (const name of readdirSync(from).sort()) {
    if (have >= want) break;
    const src = join(from, name);
    if (!statSync(src).isDirectory() || existsSync(join(corpus, name))) continue;
    cpSync(src, join(corpus, name), {
      recursive: true,
      filter: (p) => !/\/\.(git|quarry)(\/|$)/.test(p),
    });
    have = countFiles(corpus);
    console.log(`${name}: ${have} files`);
  }
  process.exit(0);
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};
const ms = (x: number) => `${x.toFixed(1)} ms`;

const project = await openProject({ root: corpus, create: true, overrides: { embed: { provider: 'none' } } });
const started = performance.now();
if (!(await project.store.getMeta('last_indexed_at'))) {
  await indexProject(project);
  console.log(`indexed lexically in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
const files = (await project.store.listFiles()).filter((f) => f.method !== 'skipped');
const random = seededRandom(7);
const literals: string[] = [];
while (literals.length < Number(values.queries)) {
  const f = files[Math.floor(random() * files.length)]!;
  const lines = readFileSync(join(corpus, f.path), 'utf8').split('\n');
  const line = lines[Math.floor(random() * lines.length)] ?? '';
  const words = line.match(/[A-Za-z_][A-Za-z0-9_.]{5,23}/g);
  if (words?.length) literals.push(words[Math.floor(random() * words.length)]!);
}
// regular expressions from the same words: an identifier followed by a call or an assignment
const regexes = literals.slice(0, 15).map((w) => `${w.replace(/\./g, '\\.')}\\s*[(=:]`);

const rgBin = values.rg;
const haveRg = spawnSync(rgBin, ['--version']).status === 0;
const lineCount = (out: string) => (out ? out.trimEnd().split('\n').length : 0);

async function timeQuarry(patterns: string[], fixed: boolean) {
  const times: number[] = [];
  const counts: number[] = [];
  const scanned: number[] = [];
  for (const pattern of patterns) {
    const t = performance.now();
    const res = await project.grep({ pattern, fixed, limit: 10_000 });
    times.push(performance.now() - t);
    counts.push(res.matches.length);
    scanned.push(res.scanned);
  }
  return { times, counts, scanned };
}

function timeRg(patterns: string[], fixed: boolean) {
  const times: number[] = [];
  const counts: number[] = [];
  for (const pattern of patterns) {
    const t = performance.now();
    const r = spawnSync(rgBin, [...(fixed ? ['-F'] : []), '--no-heading', '-n', '--', pattern, corpus], {
      encoding: 'utf8',
      maxBuffer: 1 << 28,
    });
    times.push(performance.now() - t);
    counts.push(lineCount(r.stdout));
  }
  return { times, counts };
}

const cliJs = join(resolve(import.meta.dirname, '..'), 'dist', 'cli', 'run.js');
function timeCli(patterns: string[]) {
  const times: number[] = [];
  for (const pattern of patterns) {
    const t = performance.now();
    spawnSync(process.execPath, [cliJs, 'grep', '-F', pattern], {
      cwd: corpus,
      encoding: 'utf8',
      maxBuffer: 1 << 28,
    });
    times.push(performance.now() - t);
  }
  return times;
}

await timeQuarry(literals.slice(0, 3), true); // warm: the database pages and the first compile
if (haveRg) timeRg(literals.slice(0, 3), true); // warm: the file cache
const q = await timeQuarry(literals, true);
const qr = await timeQuarry(regexes, false);
const rg = haveRg ? timeRg(literals, true) : undefined;
const rgr = haveRg ? timeRg(regexes, false) : undefined;
const cli = existsSync(cliJs) ? timeCli(literals.slice(0, Number(values['cli-queries']))) : [];

// the MCP tool `grep`, as an agent calls it (an in-memory transport: the tool's own work, not a network)
const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
const { InMemoryTransport } = await import('@modelcontextprotocol/sdk/inMemory.js');
const { createMcpServer } = await import('../src/mcp/server.ts');
const { openedSet } = await import('../src/host/set.ts');
const mcpServer = createMcpServer(openedSet([project]));
const [ta, tb] = InMemoryTransport.createLinkedPair();
await mcpServer.connect(ta);
const client = new Client({ name: 'grep-bench', version: '1' });
await client.connect(tb);
const mcp: number[] = [];
for (const pattern of literals) {
  const t = performance.now();
  await client.callTool({ name: 'grep', arguments: { pattern, fixed: true } });
  mcp.push(performance.now() - t);
}
await client.close();

const dbBytes = statSync(join(corpus, '.quarry', 'index.db')).size;
console.log(
  `corpus: ${files.length} indexed files, index ${(dbBytes / 2 ** 20).toFixed(0)} MiB; ${availableParallelism()} cores`,
);
console.log(
  `literal queries: ${literals.length} (e.g. ${literals.slice(0, 3).join(', ')}); regex: ${regexes.length}`,
);
const row = (name: string, t: number[]) =>
  console.log(`${name.padEnd(34)} p50 ${ms(pct(t, 50)).padStart(10)}  p95 ${ms(pct(t, 95)).padStart(10)}`);
row('quarry grep -F, in process', q.times);
row('quarry grep regex, in process', qr.times);
row('MCP tool grep (fixed), in process', mcp);
if (cli.length) row('quarry grep -F, whole process', cli);
if (rg && rgr) {
  row('ripgrep -F', rg.times);
  row('ripgrep regex', rgr.times);
  const agree = q.counts.filter((c, i) => c === rg.counts[i]).length;
  console.log(
    `matching lines equal to ripgrep's on ${agree}/${literals.length} literal queries (ripgrep also reads files quarry does not index: ignored by quarry's rules, or over its size limit)`,
  );
} else console.log('ripgrep not found: pip install ripgrep, or pass --rg PATH');
console.log(
  `files read per literal query: p50 ${pct(q.scanned, 50)}, p95 ${pct(q.scanned, 95)} of ${files.length}`,
);
await project.close();
