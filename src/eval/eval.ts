import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { QuarryError } from '../errors.ts';
import { openProject, type LocalProject as Project, searchProject } from '../project/local/index.ts';
import type { SearchMode } from '../search/search.ts';
import { indexPaths, isDirectory } from '../workspace/root.ts';

/** One query of an evaluation set (the format of the practice sets in eval-dev). */
export interface EvalQuery {
  id: string;
  repo: string;
  snapshot?: string;
  query: string;
  gold: string[];
}

export interface Metrics {
  n: number;
  'hit@1': number;
  'hit@5': number;
  'hit@10': number;
  'recall@5': number;
  'recall@10': number;
  MRR: number;
}

export interface EvalResult {
  modes: SearchMode[];
  /** metrics[mode].ALL and metrics[mode][repo]. */
  metrics: Record<string, Record<string, Metrics>>;
  /** Ranked files per query and mode. */
  ranked: Array<{ id: string; mode: SearchMode; ranked: string[] }>;
  /** Milliseconds per query, per mode (what a re-ranker costs shows here). */
  msPerQuery: Record<string, number>;
  /** Queries where the re-ranker's answer could not be used and the fused order stood. */
  rerankFallbacks: number;
}

export function readQueries(file: string): EvalQuery[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new QuarryError('BAD_INPUT', `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? err}`);
  }
  return text
    .split('\n')
    .map((line, i) => [line.trim(), i + 1] as const)
    .filter(([line]) => line)
    .map(([line, n]) => {
      let q: EvalQuery;
      try {
        q = JSON.parse(line) as EvalQuery;
      } catch {
        throw new QuarryError('BAD_INPUT', `${file}:${n} is not JSON: each line must be one query object`);
      }
      if (typeof q.id !== 'string' || typeof q.query !== 'string' || !Array.isArray(q.gold))
        throw new QuarryError('BAD_INPUT', `${file}:${n} needs "id", "query" and "gold" (a list of paths)`);
      return q;
    });
}

/** Where a query's repository tree is: `root/<owner>+<name>@<sha12>`, `root/<owner>+<name>`, or `root` itself. */
export function treeFor(root: string, q: EvalQuery): string {
  const name = q.repo.replace('/', '+');
  const candidates = [
    q.snapshot ? join(root, `${name}@${q.snapshot.slice(0, 12)}`) : '',
    join(root, name),
    root,
  ];
  // a tree quarry indexed has `.quarry/` (whatever the store: SQLite's file, or the local side of a server's)
  for (const c of candidates) if (c && isDirectory(indexPaths(c).dir)) return c;
  throw new QuarryError(
    'NO_INDEX',
    `no index for ${q.repo} under ${root}: run \`quarry index ${join(root, name)}\` first`,
  );
}

export function score(ranked: string[], gold: string[]): Omit<Metrics, 'n'> {
  const g = new Set(gold);
  const first = ranked.findIndex((p) => g.has(p));
  const within = (k: number) => ranked.slice(0, k).filter((p) => g.has(p)).length;
  return {
    'hit@1': first === 0 ? 1 : 0,
    'hit@5': first >= 0 && first < 5 ? 1 : 0,
    'hit@10': first >= 0 && first < 10 ? 1 : 0,
    'recall@5': g.size ? within(5) / g.size : 0,
    'recall@10': g.size ? within(10) / g.size : 0,
    MRR: first >= 0 ? 1 / (first + 1) : 0,
  };
}

function average(rows: Array<Omit<Metrics, 'n'>>): Metrics {
  const keys = ['hit@1', 'hit@5', 'hit@10', 'recall@5', 'recall@10', 'MRR'] as const;
  const out = { n: rows.length } as Metrics;
  for (const k of keys) out[k] = rows.length ? rows.reduce((s, r) => s + r[k], 0) / rows.length : 0;
  return out;
}

export interface EvalOptions {
  root: string;
  modes: SearchMode[];
  /** Files ranked per query. Default 20. */
  topK?: number;
  /** Re-rank each query's first candidates with a chat model, listwise (`search.rerank.protocol = "llm"`). */
  rerank?: { model?: string; top?: number };
  onQuery?: (done: number, total: number) => void;
}

/** Runs every query against its repository's index, once per mode, and scores the file rankings. */
export async function runEval(queries: EvalQuery[], options: EvalOptions): Promise<EvalResult> {
  const root = resolve(options.root);
  const projects = new Map<string, Project>();
  const perMode = new Map<string, Map<string, Array<Omit<Metrics, 'n'>>>>();
  const ranked: EvalResult['ranked'] = [];
  const spent = new Map<string, number>();
  let fallbacks = 0;
  try {
    let done = 0;
    for (const q of queries) {
      const tree = treeFor(root, q);
      let project = projects.get(tree);
      if (!project) {
        project = await openProject({
          root: tree,
          ...(options.rerank
            ? {
                overrides: {
                  search: {
                    rerank: {
                      protocol: 'llm',
                      top: options.rerank.top ?? 20,
                      ...(options.rerank.model ? { model: options.rerank.model } : {}),
                    },
                  },
                },
              }
            : {}),
        });
        projects.set(tree, project);
      }
      for (const mode of options.modes) {
        const started = performance.now();
        const res = await searchProject(project, q.query, {
          mode,
          topK: options.topK ?? 20,
          topFiles: options.topK ?? 20,
          onNotice: (m) => {
            if (/fused order stands/.test(m)) fallbacks++;
          },
        });
        spent.set(mode, (spent.get(mode) ?? 0) + performance.now() - started);
        const files = res.files.map((f) => f.path);
        ranked.push({ id: q.id, mode, ranked: files });
        const s = score(files, q.gold);
        const byRepo = perMode.get(mode) ?? new Map<string, Array<Omit<Metrics, 'n'>>>();
        perMode.set(mode, byRepo);
        for (const key of ['ALL', q.repo]) byRepo.set(key, [...(byRepo.get(key) ?? []), s]);
      }
      options.onQuery?.(++done, queries.length);
    }
  } finally {
    for (const p of projects.values()) await p.close();
  }
  const metrics: EvalResult['metrics'] = {};
  for (const [mode, byRepo] of perMode) {
    metrics[mode] = {};
    for (const [repo, rows] of byRepo) metrics[mode]![repo] = average(rows);
  }
  const msPerQuery = Object.fromEntries(
    [...spent].map(([mode, ms]) => [mode, queries.length ? ms / queries.length : 0]),
  );
  return { modes: options.modes, metrics, ranked, msPerQuery, rerankFallbacks: fallbacks };
}
