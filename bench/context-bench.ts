/**
 * How often the gold files of a query end up inside the assembled context, per budget and packing (numbers go to
 * docs/context.md; not a test). The SWE-bench paper reports, for BM25, all gold files inside the context in
 * 26% / 40% / 46% of instances at 13k / 27k / 50k tokens.
 *
 *   node --import tsx bench/context-bench.ts <queries.jsonl> --root <indexed trees> [--budgets 8000,32000,100000]
 *     [--mode hybrid] [--limit N]
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Packing } from '../src/config/config.ts';
import { assembleContext } from '../src/context/assemble.ts';
import { readQueries, treeFor } from '../src/eval/eval.ts';
import { openProject, type LocalProject as Project } from '../src/project/local/index.ts';
import type { SearchMode } from '../src/search/search.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    root: { type: 'string' },
    budgets: { type: 'string', default: '8000,32000,100000' },
    mode: { type: 'string', default: 'hybrid' },
    limit: { type: 'string' },
  },
});
if (!positionals[0] || !values.root)
  throw new Error('usage: context-bench.ts <queries.jsonl> --root <trees>');
const queries = readQueries(resolve(positionals[0])).slice(
  0,
  values.limit ? Number(values.limit) : undefined,
);
const budgets = values.budgets.split(',').map(Number);
const packings: Packing[] = ['files', 'chunks'];
const projects = new Map<string, Project>();
// per (packing, budget): instances with every gold file inside, gold files inside, gold files, tokens used
const tally = new Map<string, { all: number; inside: number; gold: number; tokens: number; n: number }>();
const started = performance.now();
for (const [i, q] of queries.entries()) {
  const tree = treeFor(resolve(values.root), q);
  let project = projects.get(tree);
  if (!project) {
    project = await openProject({ root: tree, userConfig: false });
    projects.set(tree, project);
  }
  for (const packing of packings)
    for (const budget of budgets) {
      const ctx = await assembleContext(project, q.query, {
        packing,
        budget,
        mode: values.mode as SearchMode,
      });
      const inside = new Set(ctx.blocks.map((b) => b.path));
      const hit = q.gold.filter((g) => inside.has(g)).length;
      const key = `${packing}\t${budget}`;
      const t = tally.get(key) ?? { all: 0, inside: 0, gold: 0, tokens: 0, n: 0 };
      t.all += hit === q.gold.length ? 1 : 0;
      t.inside += hit;
      t.gold += q.gold.length;
      t.tokens += ctx.tokens.prompt;
      t.n += 1;
      tally.set(key, t);
    }
  process.stderr.write(`\r${i + 1}/${queries.length}`);
}
process.stderr.write('\n');
for (const p of projects.values()) await p.close();
console.log(
  `${queries.length} queries, mode ${values.mode}, ${((performance.now() - started) / 1000).toFixed(0)} s`,
);
console.log('packing  budget   all gold inside   gold files inside   mean prompt tokens');
for (const [key, t] of tally) {
  const [packing, budget] = key.split('\t');
  console.log(
    `${packing!.padEnd(8)} ${budget!.padStart(6)}   ${((100 * t.all) / t.n).toFixed(1).padStart(14)}%   ${((100 * t.inside) / t.gold).toFixed(1).padStart(16)}%   ${Math.round(
      t.tokens / t.n,
    )
      .toString()
      .padStart(18)}`,
  );
}
