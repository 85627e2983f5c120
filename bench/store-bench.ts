// One driver, the same corpus and queries: index throughput (lexical rows), search latency in process, and file-ranking
// quality on a practice set (hit@1/5/10, MRR), for comparing stores as ratios within one run.
//
//   node --import tsx bench/store-bench.ts --trees DIR --queries FILE [--store URL] [--mode lexical] [--no-index]
//
// Without --store it measures the SQLite default. Each tree under DIR (prepare.sh's layout) is indexed with
// `--no-embed` unless the mode needs vectors (then the configured embedder runs, and its cache is used).
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readQueries, runEval, treeFor } from '../src/eval/eval.ts';
import { indexProject, openProject, searchProject } from '../src/project/local/index.ts';
import type { SearchMode } from '../src/search/search.ts';

const { values } = parseArgs({
  options: {
    trees: { type: 'string' },
    queries: { type: 'string' },
    store: { type: 'string' },
    mode: { type: 'string', default: 'lexical' },
    'no-index': { type: 'boolean', default: false },
  },
});
if (!values.trees || !values.queries) throw new Error('pass --trees DIR --queries FILE');
// the store for every project this process opens, `quarry eval`'s included
if (values.store) process.env.QUARRY_STORE_URL = values.store;
const env = process.env;
const modes = values.mode!.split(',') as SearchMode[];
const embed = modes.some((m) => m !== 'lexical');
// queries whose repository tree is there (prepare.sh leaves out what it could not extract)
const queries = readQueries(values.queries).filter((q) =>
  readdirSync(values.trees!).some((d) => d.startsWith(q.repo.replace('/', '+')) && !d.endsWith('.snapshot')),
);
const trees = [...new Set(queries.map((q) => q.repo))].flatMap((repo) =>
  readdirSync(values.trees!)
    .filter((d) => d.startsWith(repo.replace('/', '+')) && !d.endsWith('.snapshot'))
    .map((d) => join(values.trees!, d))
    .filter((p) => statSync(p).isDirectory()),
);

let files = 0;
let chunks = 0;
let indexMs = 0;
if (!values['no-index'])
  for (const tree of trees) {
    const project = await openProject({ root: tree, create: true, env, userConfig: false });
    const t = performance.now();
    const r = await indexProject(project, { embed });
    indexMs += performance.now() - t;
    files += r.added + r.updated;
    chunks += r.chunksWritten;
    await project.close();
  }

// latency: every query once per mode, in process, after one warm-up query per tree
const latency: number[] = [];
const opened = new Map<string, Awaited<ReturnType<typeof openProject>>>();
for (const q of queries) {
  const tree = treeFor(values.trees, q);
  let p = opened.get(tree);
  if (!p) {
    p = await openProject({ root: tree, env, userConfig: false });
    opened.set(tree, p);
    await searchProject(p, 'warm up the connection and the caches', { mode: modes[0]! });
  }
  for (const mode of modes) {
    const t = performance.now();
    await searchProject(p, q.query, { mode, topK: 20, topFiles: 20 });
    latency.push(performance.now() - t);
  }
}
for (const p of opened.values()) await p.close();
latency.sort((a, b) => a - b);
const pct = (p: number) => latency[Math.min(latency.length - 1, Math.floor((p / 100) * latency.length))]!;

const result = await runEval(queries, { root: values.trees, modes });
const f = (n: number) => n.toFixed(3);
console.log(
  JSON.stringify({
    store: values.store ? values.store.replace(/:[^:@/]*@/, '@') : 'sqlite',
    trees: trees.length,
    index: values['no-index']
      ? null
      : { files, chunks, seconds: indexMs / 1000, filesPerSec: files / (indexMs / 1000) },
    search: { queries: latency.length, p50ms: pct(50), p95ms: pct(95) },
    quality: Object.fromEntries(
      modes.map((m) => {
        const a = result.metrics[m]!.ALL!;
        return [
          m,
          { n: a.n, hit1: f(a['hit@1']), hit5: f(a['hit@5']), hit10: f(a['hit@10']), MRR: f(a.MRR) },
        ];
      }),
    ),
  }),
);
