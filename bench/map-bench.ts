/**
 * The repository map, measured: for each query of a practice set, does a map of `--budget` tokens (1,000 by default)
 * built for that question show a gold file (the file the real change touched) with its definitions? Reports the
 * share of queries, per repository and in all, for the map as `ask` builds it (personalised by the question) and
 * unpersonalised. Numbers go to docs/context.md; not a test.
 *
 *   node --import tsx bench/map-bench.ts QUERIES.jsonl --root TREES [--budget 1000] [--signatures false] [--defs N]
 *
 * TREES holds one indexed folder per repository (`owner+name`), as the practice sets' preparation makes them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildRepoMap, questionMentions } from '../src/context/repomap.ts';
import { openProject } from '../src/project/local.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    root: { type: 'string' },
    budget: { type: 'string', default: '1000' },
    signatures: { type: 'string', default: 'true' },
    defs: { type: 'string' },
  },
});
const file = positionals[0];
if (!file || !values.root) {
  console.error('usage: map-bench.ts QUERIES.jsonl --root TREES [--budget 1000] [--signatures false]');
  process.exit(2);
}
interface Query {
  id: string;
  repo: string;
  query: string;
  gold: string[];
}
const queries = readFileSync(file, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as Query);
const budget = Number(values.budget);
const signatures = values.signatures !== 'false';
const defs = values.defs ? { defsPerFile: Number(values.defs) } : {};
const byRepo = new Map<string, Query[]>();
for (const q of queries) byRepo.set(q.repo, [...(byRepo.get(q.repo) ?? []), q]);

const rows: Array<Record<string, string | number>> = [];
const total = { n: 0, personal: 0, plain: 0, files: 0, ms: 0 };
for (const [repo, qs] of byRepo) {
  const project = await openProject({ root: join(values.root, repo.replace('/', '+')), userConfig: false });
  try {
    const plain = await buildRepoMap(project.store, { budget, signatures, ...defs });
    const plainFiles = new Set(plain.entries.map((e) => e.path));
    let personal = 0;
    let unpersonal = 0;
    let files = 0;
    let ms = 0;
    for (const q of qs) {
      const started = performance.now();
      const map = await buildRepoMap(project.store, {
        budget,
        signatures,
        ...defs,
        mentions: questionMentions(q.query),
      });
      ms += performance.now() - started;
      const shown = new Set(map.entries.map((e) => e.path));
      files += shown.size;
      if (q.gold.some((g) => shown.has(g))) personal++;
      if (q.gold.some((g) => plainFiles.has(g))) unpersonal++;
    }
    rows.push({
      repo,
      queries: qs.length,
      personalised: (personal / qs.length).toFixed(3),
      plain: (unpersonal / qs.length).toFixed(3),
      'files shown': (files / qs.length).toFixed(1),
      'ms / map': (ms / qs.length).toFixed(0),
    });
    total.n += qs.length;
    total.personal += personal;
    total.plain += unpersonal;
    total.files += files;
    total.ms += ms;
  } finally {
    await project.close();
  }
}
rows.push({
  repo: 'all',
  queries: total.n,
  personalised: (total.personal / total.n).toFixed(3),
  plain: (total.plain / total.n).toFixed(3),
  'files shown': (total.files / total.n).toFixed(1),
  'ms / map': (total.ms / total.n).toFixed(0),
});
console.log(
  `map of ${budget} tokens, signatures ${signatures ? 'on' : 'off'}: share of queries whose gold file it shows`,
);
console.table(rows);
