/**
 * The question-style practice set: questions a newcomer asks of a repository (how does X work, where is Y handled, a
 * bare symbol), each with its gold files and line spans (bench/questions/*.jsonl, written by reading the code of the
 * practice repositories). For each question and mode it reports what people and agents see:
 *   - NDCG@10 over the first 10 chunks `quarry search` prints: a chunk is relevant when it overlaps a gold span not
 *     already credited to a higher chunk (each span counts once; the ideal ranking puts one chunk on each span);
 *   - hit@1/5/10 and MRR over files, for the `--files` list and for the files of the chunk list in their order;
 *   - context recall: of what `ask --dry-run` would send at 2,000 and 8,000 tokens, the share of gold spans it reaches
 *     (`spans@B`: any line of the span) and the share of gold lines it holds (`lines@B`).
 * Also runs on any query set in the practice format (gold files, no spans): then only the file figures and the
 * share of gold files with a block in the context are reported.
 *
 *   node --import tsx bench/questions.ts --root /work/eval/trees [--mode lexical,hybrid] [--json out.json] \
 *     bench/questions/*.jsonl
 * The trees must be indexed (`quarry index TREE`). QUARRY_RANKER and the other QUARRY_* settings apply as usual;
 * `--user-config` also reads the user's config.toml (another embedding model, for example).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { assembleContext } from '../src/context/assemble.ts';
import { treeFor } from '../src/eval/eval.ts';
import { type LocalProject, openProject } from '../src/project/local/index.ts';
import type { SearchMode } from '../src/search/search.ts';

interface Span {
  path: string;
  start: number;
  end: number;
}
interface Question {
  id: string;
  repo: string;
  snapshot?: string;
  kind?: string;
  query: string;
  gold: string[];
  spans?: Span[];
}

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    root: { type: 'string' },
    mode: { type: 'string', default: 'lexical,hybrid' },
    json: { type: 'string' },
    // read the user's config.toml too (an embedding model other than the default, for example)
    'user-config': { type: 'boolean', default: false },
    budgets: { type: 'string', default: '2000,8000' },
    limit: { type: 'string' },
  },
});
if (!args.root || !positionals.length) {
  console.error('usage: questions.ts --root TREES [--mode lexical,hybrid] [--json FILE] questions.jsonl…');
  process.exit(2);
}
const modes = args.mode.split(',') as SearchMode[];
const budgets = args.budgets.split(',').map(Number);
let questions: Question[] = positionals.flatMap((f) =>
  readFileSync(f, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Question),
);
if (args.limit) questions = questions.slice(0, Number(args.limit));

const overlaps = (s: Span, path: string, a: number, b: number) =>
  s.path === path && a <= s.end && b >= s.start;

/** NDCG@10 over chunks: each gold span is credited to the first chunk that overlaps it. */
export function ndcg(
  results: Array<{ path: string; startLine: number; endLine: number }>,
  spans: Span[],
): number {
  const credited = new Set<number>();
  let dcg = 0;
  for (const [i, r] of results.slice(0, 10).entries()) {
    const j = spans.findIndex((s, k) => !credited.has(k) && overlaps(s, r.path, r.startLine, r.endLine));
    if (j < 0) continue;
    credited.add(j);
    dcg += 1 / Math.log2(i + 2);
  }
  let ideal = 0;
  for (let i = 0; i < Math.min(10, spans.length); i++) ideal += 1 / Math.log2(i + 2);
  return ideal ? dcg / ideal : 0;
}

function fileMetrics(ranked: string[], gold: string[]) {
  const g = new Set(gold);
  const first = ranked.findIndex((p) => g.has(p));
  return {
    'hit@1': first === 0 ? 1 : 0,
    'hit@5': first >= 0 && first < 5 ? 1 : 0,
    'hit@10': first >= 0 && first < 10 ? 1 : 0,
    MRR: first >= 0 ? 1 / (first + 1) : 0,
  };
}

type Block = { path: string; startLine: number; endLine: number };

/** Share of gold spans the context's blocks reach (any of their lines), or without spans, of gold files. */
function spanRecall(blocks: Block[], q: Question): number {
  if (!q.spans?.length) return q.gold.filter((p) => blocks.some((b) => b.path === p)).length / q.gold.length;
  return (
    q.spans.filter((s) => blocks.some((b) => overlaps(s, b.path, b.startLine, b.endLine))).length /
    q.spans.length
  );
}

/** Share of gold lines (or, without spans, of gold files) that the context's blocks hold. */
function contextRecall(blocks: Block[], q: Question): number {
  if (!q.spans?.length) return spanRecall(blocks, q);
  let total = 0;
  let inside = 0;
  for (const s of q.spans) {
    for (let line = s.start; line <= s.end; line++) {
      total++;
      if (blocks.some((b) => b.path === s.path && b.startLine <= line && b.endLine >= line)) inside++;
    }
  }
  return total ? inside / total : 0;
}

type Row = Record<string, number>;
const rows = new Map<string, Row[]>(); // `${mode}\t${slice}` → per-question figures
const push = (mode: string, slice: string, row: Row) => {
  const key = `${mode}\t${slice}`;
  rows.set(key, [...(rows.get(key) ?? []), row]);
};

const projects = new Map<string, LocalProject>();
const perQuestion: Array<Record<string, unknown>> = [];
for (const q of questions) {
  const tree = treeFor(args.root, { ...q, gold: q.gold });
  let project = projects.get(tree);
  if (!project) {
    project = await openProject({ root: tree, userConfig: args['user-config'] });
    projects.set(tree, project);
  }
  for (const mode of modes) {
    const t0 = performance.now();
    const res = await project.search(q.query, { mode, topK: 10, topFiles: 10 });
    const ms = performance.now() - t0;
    const chunkFiles = [...new Set(res.results.map((r) => r.path))];
    const row: Row = {
      ms,
      ...(q.spans?.length ? { 'NDCG@10': ndcg(res.results, q.spans) } : {}),
      ...Object.fromEntries(
        Object.entries(
          fileMetrics(
            res.files.map((f) => f.path),
            q.gold,
          ),
        ).map(([k, v]) => [`files ${k}`, v]),
      ),
      ...Object.fromEntries(
        Object.entries(fileMetrics(chunkFiles, q.gold)).map(([k, v]) => [`chunks ${k}`, v]),
      ),
    };
    for (const budget of budgets) {
      const ctx = await assembleContext(project, q.query, { budget, ...(mode ? { mode } : {}), noMap: true });
      row[`spans@${budget}`] = spanRecall(ctx.blocks, q);
      row[`lines@${budget}`] = contextRecall(ctx.blocks, q);
      row[`blocks@${budget}`] = ctx.blocks.length;
    }
    push(mode, 'ALL', row);
    push(mode, `kind=${q.kind ?? 'commit'}`, row);
    push(mode, q.repo, row);
    perQuestion.push({
      id: q.id,
      mode,
      ...row,
      files: res.files.map((f) => f.path),
      chunks: res.results.map((r) => `${r.path}:${r.startLine}-${r.endLine}`),
    });
  }
}
for (const p of projects.values()) await p.close();

const mean = (rs: Row[], k: string) => rs.reduce((s, r) => s + (r[k] ?? 0), 0) / rs.length;
const keys = [...new Set([...rows.values()].flat().flatMap((r) => Object.keys(r)))].filter((k) => k !== 'ms');
const table: Array<Record<string, string | number>> = [];
for (const [key, rs] of [...rows.entries()].sort()) {
  const [mode, slice] = key.split('\t');
  table.push({
    mode: mode!,
    slice: slice!,
    n: rs.length,
    ...Object.fromEntries(keys.map((k) => [k, Number(mean(rs, k).toFixed(3))])),
    'ms/q': Number(mean(rs, 'ms').toFixed(1)),
  });
}
const cols = ['mode', 'slice', 'n', ...keys, 'ms/q'];
console.log(`| ${cols.join(' | ')} |`);
console.log(`| ${cols.map(() => '---').join(' | ')} |`);
for (const t of table) console.log(`| ${cols.map((c) => t[c] ?? '').join(' | ')} |`);
if (args.json) writeFileSync(args.json, JSON.stringify({ table, perQuestion }, null, 1));
