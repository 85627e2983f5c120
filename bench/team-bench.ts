// A team's index, measured: (1) search latency in process against the same searches through `quarry serve` over
// loopback (HTTP API and MCP), same queries, same index; (2) the time a second clone needs to become searchable
// (lexical + every vector) with the shared embedding cache and without it.
//
//   node --import tsx bench/team-bench.ts --tree DIR --queries FILE [--repo owner/name] [--files N] [--store URL]
//
// DIR is an indexed tree (prepare.sh's layout); the queries are those of its repository. Part 2 copies the first N
// source files of DIR (default 400) to fresh folders: clone 1 fills the cache, clone 2 reuses it, clone 3 runs with
// the cache off. With --store (PostgreSQL) the clones go to that store as repositories of their own, and the cache
// they share is the store's.
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { readQueries } from '../src/eval/eval.ts';
import { indexProject, openProject } from '../src/project/local/index.ts';
import { openRemoteProject } from '../src/project/remote.ts';
import type { Project } from '../src/project/types.ts';
import { walk } from '../src/workspace/walk.ts';

const { values } = parseArgs({
  options: {
    tree: { type: 'string' },
    queries: { type: 'string' },
    repo: { type: 'string' },
    files: { type: 'string', default: '400' },
    store: { type: 'string' },
    mode: { type: 'string', default: 'lexical' },
    'skip-latency': { type: 'boolean', default: false },
    'skip-clone': { type: 'boolean', default: false },
  },
});
if (!values.tree || !values.queries) throw new Error('pass --tree DIR --queries FILE');
const tree = values.tree;
const mode = values.mode as 'lexical' | 'hybrid';
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const fmt = (xs: number[]) =>
  `p50 ${pct(xs, 50).toFixed(1)} ms, p95 ${pct(xs, 95).toFixed(1)} ms, mean ${(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(1)} ms`;

async function latency(): Promise<void> {
  const queries = readQueries(values.queries!).filter((q) => !values.repo || q.repo === values.repo);
  const local = await openProject({ root: tree });
  const cli = join(dirname(new URL(import.meta.url).pathname), '..', 'bin', 'quarry.js');
  const child = spawn(process.execPath, [cli, 'serve', '--no-watch', '--port', '0', '--root', tree], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /quarry panel: (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
  });
  const http = await openRemoteProject({ url });
  const mcp = await openRemoteProject({ url: `${url}mcp` });
  const sides: Array<[string, Project]> = [
    ['in process', local],
    ['HTTP API (loopback)', http],
    ['MCP (loopback)', mcp],
  ];
  // one warm-up pass each, then interleaved rounds so that noise falls on every side alike
  for (const [, p] of sides) for (const q of queries.slice(0, 5)) await p.search(q.query, { topK: 10, mode });
  const times = new Map<string, number[]>(sides.map(([n]) => [n, []]));
  const same = { equal: 0, total: 0 };
  for (const q of queries) {
    const tops: string[] = [];
    for (const [name, p] of sides) {
      const t = performance.now();
      const res = await p.search(q.query, { topK: 10, mode });
      times.get(name)!.push(performance.now() - t);
      tops.push(res.results.map((r) => `${r.path}:${r.startLine}`).join(','));
    }
    same.total++;
    if (tops.every((t) => t === tops[0])) same.equal++;
  }
  console.log(`\n## search latency, ${queries.length} queries, ${mode}, top 10 (${tree})`);
  for (const [name] of sides) console.log(`${name.padEnd(22)} ${fmt(times.get(name)!)}`);
  const base = pct(times.get('in process')!, 50);
  for (const [name] of sides.slice(1))
    console.log(`${name} adds ${(pct(times.get(name)!, 50) - base).toFixed(1)} ms at the median`);
  console.log(`identical top-10 lists on every side: ${same.equal}/${same.total}`);
  await http.close();
  await mcp.close();
  await local.close();
  child.kill('SIGTERM');
}

async function clones(): Promise<void> {
  const n = Number(values.files);
  const { files } = walk(tree, (await openProject({ root: tree })).config);
  const chosen = files.slice(0, n);
  const base = mkdtempSync(join(tmpdir(), 'quarry-clones-'));
  const cache = join(base, 'shared-embeddings.db');
  const makeClone = (i: number) => {
    const dir = join(base, `clone${i}`);
    for (const f of chosen) {
      mkdirSync(dirname(join(dir, f.path)), { recursive: true });
      cpSync(join(tree, f.path), join(dir, f.path));
    }
    return dir;
  };
  const run = async (i: number, shared: boolean) => {
    const root = makeClone(i);
    const env = {
      ...process.env,
      QUARRY_SHARED_CACHE: shared ? 'on' : 'off',
      QUARRY_SHARED_CACHE_PATH: cache,
      ...(values.store
        ? { QUARRY_STORE_URL: values.store, QUARRY_REPO: `bench/clone${i}-${Date.now()}` }
        : {}),
    };
    Object.assign(process.env, env);
    const t = performance.now();
    const project = await openProject({ root, create: true, env });
    const report = await indexProject(project);
    const secs = (performance.now() - t) / 1000;
    if (values.store && 'dropRepository' in project.store)
      await (project.store as unknown as { dropRepository(): Promise<void> }).dropRepository();
    await project.close();
    return { secs, embedded: report.embedding?.embedded ?? 0, cached: report.embedding?.fromCache ?? 0 };
  };
  console.log(
    `\n## a second clone becomes searchable (${chosen.length} files of ${tree}${values.store ? ', PostgreSQL store' : ''})`,
  );
  const first = await run(1, true);
  console.log(`clone 1 (fills the cache)   ${first.secs.toFixed(1)} s, ${first.embedded} texts embedded`);
  const second = await run(2, true);
  console.log(
    `clone 2, shared cache       ${second.secs.toFixed(1)} s, ${second.embedded} embedded, ${second.cached} from the cache`,
  );
  const third = await run(3, false);
  console.log(`clone 3, no shared cache    ${third.secs.toFixed(1)} s, ${third.embedded} embedded`);
  console.log(`saving: ${(third.secs / second.secs).toFixed(1)}× faster to searchable with the cache`);
  rmSync(base, { recursive: true, force: true });
}

if (!values['skip-latency']) await latency();
if (!values['skip-clone']) await clones();
process.exit(0);
