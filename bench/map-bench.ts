/**
 * The repository map, measured: for each query of a practice set, which of its gold files (the files the real change
 * touched) does a map of `--budget` tokens (1,000 by default) built for that question name? Reports, per repository
 * and in all, the share of a question's gold files the map names (averaged over the questions: `gold share`) and the
 * share of questions with at least one gold file named (`any gold`), for the map as `ask` builds it (personalised by
 * the question's words) and for the plain map (no question). Numbers go to docs/context.md; not a test.
 *
 *   node --import tsx bench/map-bench.ts QUERIES.jsonl... --root TREES [--root TREES2] [--budget 1000]
 *     [--signatures false] [--defs N] [--json FILE]
 *
 * TREES holds one indexed folder per repository (`owner+name`), as the practice sets' preparation makes them; a
 * repository is read from the first --root that holds its index, and one that none holds is left out (and named).
 * `--json` writes every question's gold files and the files its map named, for comparing two runs question by
 * question.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildRepoMap, questionMentions } from '../src/context/repomap.ts';
import { openProject } from '../src/project/local/index.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    root: { type: 'string', multiple: true },
    budget: { type: 'string', default: '1000' },
    signatures: { type: 'string', default: 'true' },
    defs: { type: 'string' },
    json: { type: 'string' },
  },
});
if (!positionals.length || !values.root?.length) {
  console.error(
    'usage: map-bench.ts QUERIES.jsonl... --root TREES [--budget 1000] [--signatures false] [--json FILE]',
  );
  process.exit(2);
}
interface Query {
  id: string;
  repo: string;
  query: string;
  gold: string[];
}
const queries = positionals.flatMap((file) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Query),
);
const budget = Number(values.budget);
const signatures = values.signatures !== 'false';
const defs = values.defs ? { defsPerFile: Number(values.defs) } : {};
const byRepo = new Map<string, Query[]>();
for (const q of queries) byRepo.set(q.repo, [...(byRepo.get(q.repo) ?? []), q]);

/** The share of `gold` among `shown`'s paths (a twin named in "also in" counts), and whether any is. */
function score(gold: string[], shown: Set<string>): { share: number; any: boolean } {
  const hit = gold.filter((g) => shown.has(g)).length;
  return { share: hit / gold.length, any: hit > 0 };
}

interface Tally {
  n: number;
  share: number;
  any: number;
  plainShare: number;
  plainAny: number;
  files: number;
  ms: number;
}
const blank = (): Tally => ({ n: 0, share: 0, any: 0, plainShare: 0, plainAny: 0, files: 0, ms: 0 });
const row = (repo: string, t: Tally) => ({
  repo,
  queries: t.n,
  'gold share': (t.share / t.n).toFixed(3),
  'any gold': (t.any / t.n).toFixed(3),
  'plain: gold share': (t.plainShare / t.n).toFixed(3),
  'plain: any gold': (t.plainAny / t.n).toFixed(3),
  'files shown': (t.files / t.n).toFixed(1),
  'ms / map': (t.ms / t.n).toFixed(0),
});
const rows: Array<ReturnType<typeof row>> = [];
const total = blank();
const detail: Array<{ id: string; gold: string[]; shown: string[]; plain: string[] }> = [];
const roots = values.root;
for (const [repo, qs] of byRepo) {
  const root = roots
    .map((r) => join(r, repo.replace('/', '+')))
    .find((r) => existsSync(join(r, '.quarry', 'index.db')));
  if (!root) {
    console.error(`${repo}: no indexed tree under ${roots.join(', ')}, left out`);
    continue;
  }
  const project = await openProject({ root, userConfig: false });
  const t = blank();
  try {
    const plain = await buildRepoMap(project.store, { budget, signatures, ...defs });
    const plainFiles = new Set(plain.entries.flatMap((e) => [e.path, ...(e.twins ?? [])]));
    for (const q of qs) {
      const started = performance.now();
      const map = await buildRepoMap(project.store, {
        budget,
        signatures,
        ...defs,
        mentions: questionMentions(q.query),
      });
      t.ms += performance.now() - started;
      const shown = new Set(map.entries.flatMap((e) => [e.path, ...(e.twins ?? [])]));
      const s = score(q.gold, shown);
      const p = score(q.gold, plainFiles);
      t.n++;
      t.files += map.entries.length;
      t.share += s.share;
      t.any += s.any ? 1 : 0;
      t.plainShare += p.share;
      t.plainAny += p.any ? 1 : 0;
      detail.push({ id: q.id, gold: q.gold, shown: [...shown], plain: [...plainFiles] });
    }
  } finally {
    await project.close();
  }
  rows.push(row(repo, t));
  for (const k of Object.keys(total) as Array<keyof Tally>) total[k] += t[k];
}
rows.push(row('all', total));
console.log(
  `map of ${budget} tokens, signatures ${signatures ? 'on' : 'off'}: the share of a question's gold files it names`,
);
console.table(rows);
if (values.json) writeFileSync(values.json, `${JSON.stringify(detail, null, 1)}\n`);
