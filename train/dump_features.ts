/**
 * Turns a mined corpus into training rows for the learned ranker: each tree is indexed lexically (once; the index is
 * kept beside it), each query is searched the way quarry searches (lexical mode, today's weights), and the features
 * of its first candidate files are written with their labels (1 for a file the change touched).
 *
 *   node --import tsx train/dump_features.ts --corpus /work/train-data/corpus.jsonl \
 *     --trees /work/train-data/trees --out /work/train-data/features.jsonl [--top 60] [--repos a/b,c/d]
 *
 * One output line per query: {id, repo, language, kind, gold, files, X}, X[i] being files[i]'s FEATURE_NAMES vector,
 * files in today's order (so the baseline is their order).
 */
import { appendFileSync, createReadStream, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { indexProject, openProject, searchProject } from '../src/project/local.ts';
import { FEATURE_NAMES } from '../src/search/features.ts';

const { values: args } = parseArgs({
  options: {
    corpus: { type: 'string' },
    trees: { type: 'string' },
    out: { type: 'string' },
    top: { type: 'string', default: '60' },
    repos: { type: 'string' },
    layout: { type: 'string', default: 'plain' },
    'max-commit': { type: 'string', default: '100000' },
    'max-docstring': { type: 'string', default: '100000' }, // plain: trees/<owner>+<name>; sha: trees/<owner>+<name>@<sha12>
  },
});
if (!args.corpus || !args.trees || !args.out) {
  console.error('usage: dump_features.ts --corpus FILE --trees DIR --out FILE [--top N] [--repos a/b,…] [--layout plain|sha]');
  process.exit(2);
}
const top = Number(args.top);
const only = args.repos ? new Set(args.repos.split(',')) : undefined;

interface Row {
  id: string;
  repo: string;
  snapshot: string;
  query: string;
  gold: string[];
  kind?: string;
  language?: string;
}
const byTree = new Map<string, Row[]>();
const lines = createInterface({ input: createReadStream(args.corpus) });
for await (const line of lines) {
  if (!line.trim()) continue;
  const r = JSON.parse(line) as Row;
  if (only && !only.has(r.repo)) continue;
  const dir = r.repo.replace('/', '+') + (args.layout === 'sha' ? `@${r.snapshot.slice(0, 12)}` : '');
  byTree.set(dir, [...(byTree.get(dir) ?? []), r]);
}

/** Up to `k` of each kind per tree, evenly spaced (deterministic). */
function capped(rows: Row[]): Row[] {
  const out: Row[] = [];
  for (const kind of ['commit', 'docstring']) {
    const of = rows.filter((r) => (r.kind ?? 'commit') === kind);
    const k = Number(args[kind === 'commit' ? 'max-commit' : 'max-docstring']);
    if (of.length <= k) out.push(...of);
    else for (let i = 0; i < k; i++) out.push(of[Math.floor(((i + 0.5) * of.length) / k)]!);
  }
  return out;
}

writeFileSync(args.out, '');
writeFileSync(`${args.out}.features.json`, JSON.stringify(FEATURE_NAMES));
for (const [dir, all] of byTree) {
  const rows = capped(all);
  const root = join(args.trees, dir);
  if (!existsSync(root)) {
    console.error(`skip ${dir}: no tree`);
    continue;
  }
  const t0 = performance.now();
  const project = await openProject({
    root,
    create: true,
    userConfig: false,
    overrides: { embed: { provider: 'none' } },
  });
  await indexProject(project, { embed: false });
  const t1 = performance.now();
  let out = '';
  for (const r of rows) {
    let features = new Map<string, number[]>();
    const res = await searchProject(project, r.query, {
      mode: 'lexical',
      topFiles: top,
      topK: 10,
      onFeatures: (f) => {
        features = f;
      },
    });
    const files = res.files.map((f) => f.path).filter((p) => features.has(p));
    out += `${JSON.stringify({ id: r.id, repo: r.repo, language: r.language ?? '', kind: r.kind ?? 'commit', gold: r.gold, files, X: files.map((p) => features.get(p)) })}\n`;
  }
  appendFileSync(args.out, out);
  await project.close();
  console.error(
    `${dir}: ${rows.length} queries, index ${((t1 - t0) / 1000).toFixed(1)} s, search ${((performance.now() - t1) / rows.length).toFixed(1)} ms/query`,
  );
}
