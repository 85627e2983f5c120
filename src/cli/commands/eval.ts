import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { QuarryError } from '../../errors.ts';
import { projectRootFor } from '../../host/checkout.ts';
import { evalGitHistory, readQueries, runEval } from '../../host/eval.ts';
import { SEARCH_MODES, type SearchMode } from '../../host/vocabulary.ts';
import type { CliContext } from '../context.ts';
import { positiveInt } from '../options.ts';
import { Progress } from '../progress.ts';

interface EvalOptions {
  root?: string;
  mode?: string;
  git?: boolean;
  commits: number;
  topK: number;
  out?: string;
  rerank?: boolean | string;
  rerankTop: number;
  json?: boolean;
}

type EvalResult = Awaited<ReturnType<typeof runEval>>;

export function registerEval(program: Command, cli: CliContext): void {
  program
    .command('eval')
    .description('score retrieval on a JSONL query set (hit@k, recall@k, MRR), per mode and per repository')
    .argument('[queries]', 'JSONL: {"id", "repo", "snapshot", "query", "gold": [paths]} per line')
    .option(
      '--git',
      "ask this repository's own history: a snapshot N commits back, the commits after it as queries",
    )
    .option('--commits <n>', 'with --git: first-parent commits to go back', positiveInt, 100)
    .option('--root <dir>', 'folder holding the indexed trees (<owner>+<name>[@sha12]), or one indexed tree')
    .option(
      '--mode <modes>',
      'comma-separated: lexical, dense, hybrid (default lexical,hybrid; lexical with --git)',
    )
    .option('-k, --top-k <n>', 'files ranked per query', positiveInt, 20)
    .option(
      '--out <file>',
      'write the ranked files as JSONL ({"id", "ranked"}; one file per mode when several)',
    )
    .option(
      '--rerank [model]',
      're-rank the first candidates with a chat model, listwise (default model: llm.model / QUARRY_MODEL)',
    )
    .option('--rerank-top <n>', 'candidates the re-ranking model reads', positiveInt, 20)
    .option('--json', 'print the metrics as JSON')
    .action((file: string | undefined, opts: EvalOptions) =>
      opts.git ? runGitEvaluation(cli, file, opts) : runEvaluation(cli, file, opts),
    );
}

function parseModes(value: string): SearchMode[] {
  const modes = String(value)
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean);
  for (const m of modes)
    if (!(SEARCH_MODES as readonly string[]).includes(m))
      throw new QuarryError('BAD_INPUT', `unknown mode "${m}": use lexical, dense or hybrid`);
  return modes as SearchMode[];
}

export async function runEvaluation(
  cli: CliContext,
  file: string | undefined,
  opts: EvalOptions,
): Promise<void> {
  const { io } = cli;
  const g = cli.globals();
  if (!file)
    throw new QuarryError(
      'BAD_INPUT',
      "name a query set (queries.jsonl), or pass --git to ask this repository's history",
    );
  const modes = parseModes(opts.mode ?? 'lexical,hybrid');
  const queries = readQueries(file);
  const progress = await Progress.open(io.stderr, cli.colors(io.stderr), !opts.json);
  const result = await runEval(queries, {
    root: opts.root ?? g.root ?? process.cwd(),
    modes,
    topK: opts.topK,
    ...(opts.rerank
      ? {
          rerank: {
            top: opts.rerankTop,
            ...(typeof opts.rerank === 'string' ? { model: opts.rerank } : {}),
          },
        }
      : {}),
    onQuery: (done, total) => progress.update('queries', done, total, 0, undefined, ''),
  });
  progress.end();
  if (opts.out) writeRanked(result, opts.out);
  if (opts.json) {
    io.stdout.write(`${JSON.stringify(result.metrics, null, 2)}\n`);
    return;
  }
  printMetrics(cli, result, opts);
}

/** `quarry eval --git`: the repository's own history as the query set. */
export async function runGitEvaluation(
  cli: CliContext,
  file: string | undefined,
  opts: EvalOptions,
): Promise<void> {
  const { io } = cli;
  if (file)
    throw new QuarryError('BAD_INPUT', "--git asks the repository's history: give no query file with it");
  const root = projectRootFor(undefined, resolve(opts.root ?? cli.globals().root ?? process.cwd()));
  if (!root)
    throw new QuarryError('NO_ROOT', 'eval --git runs in a git checkout: cd into one, or pass --root');
  const progress = await Progress.open(io.stderr, cli.colors(io.stderr), !opts.json);
  const result = await evalGitHistory({
    root,
    commits: opts.commits,
    modes: parseModes(opts.mode ?? 'lexical'),
    topK: opts.topK,
    onStage: (m) => {
      if (!opts.json) io.stderr.write(`${m}\n`);
    },
    onQuery: (done, total) => progress.update('queries', done, total, 0, undefined, ''),
  });
  progress.end();
  if (opts.out) writeRanked(result, opts.out);
  if (opts.json) {
    const { snapshot, considered, rejected, metrics, msPerQuery } = result;
    io.stdout.write(`${JSON.stringify({ snapshot, considered, rejected, metrics, msPerQuery }, null, 2)}\n`);
    return;
  }
  const asked = result.metrics[result.modes[0]!]?.ALL?.n ?? 0;
  io.stderr.write(
    `${asked} of the ${result.considered} commits after ${result.snapshot.slice(0, 12)} make queries (${Object.entries(
      result.rejected,
    )
      .map(([why, n]) => `${n} ${why}`)
      .join('; ')})\n`,
  );
  printMetrics(cli, result, opts);
}

function writeRanked(result: EvalResult, out: string): void {
  for (const mode of result.modes) {
    const path = result.modes.length > 1 ? String(out).replace(/(\.jsonl)?$/, `.${mode}.jsonl`) : out;
    const lines = result.ranked
      .filter((r) => r.mode === mode)
      .map((r) => JSON.stringify({ id: r.id, ranked: r.ranked }));
    writeFileSync(path, `${lines.join('\n')}\n`);
  }
}

function printMetrics(cli: CliContext, result: EvalResult, opts: EvalOptions): void {
  const { io } = cli;
  const timing = result.modes
    .map((m) => `${m} ${(result.msPerQuery[m] ?? 0).toFixed(0)} ms/query`)
    .join(', ');
  io.stderr.write(
    `${timing}${opts.rerank ? `; re-ranking fell back to the fused order on ${result.rerankFallbacks} queries` : ''}\n`,
  );
  const c = cli.colors(io.stdout);
  const cols = ['hit@1', 'hit@5', 'hit@10', 'recall@5', 'recall@10', 'MRR'] as const;
  const head = `${'repository'.padEnd(30)}${'mode'.padEnd(9)}${'n'.padStart(5)}${cols.map((k) => k.padStart(10)).join('')}`;
  io.stdout.write(`${c.bold(head)}\n`);
  const first = result.metrics[result.modes[0]!] ?? {};
  const repos = [
    'ALL',
    ...Object.keys(first)
      .filter((r) => r !== 'ALL')
      .sort(),
  ];
  for (const repo of repos)
    result.modes.forEach((mode, i) => {
      const m = result.metrics[mode]?.[repo];
      if (!m) return;
      const values = cols.map((k) => m[k].toFixed(3).padStart(10)).join('');
      io.stdout.write(
        `${(i === 0 ? repo : '').padEnd(30)}${mode.padEnd(9)}${String(m.n).padStart(5)}${values}\n`,
      );
    });
}
