import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { QuarryError } from '../../errors.ts';
import { readQueries, runEval } from '../../eval/eval.ts';
import { SEARCH_MODES, type SearchMode } from '../../search/search.ts';
import type { CliContext } from '../context.ts';
import { positiveInt } from '../options.ts';
import { Progress } from '../progress.ts';

interface EvalOptions {
  root?: string;
  mode: string;
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
    .argument('<queries>', 'JSONL: {"id", "repo", "snapshot", "query", "gold": [paths]} per line')
    .option('--root <dir>', 'folder holding the indexed trees (<owner>+<name>[@sha12]), or one indexed tree')
    .option('--mode <modes>', 'comma-separated: lexical, dense, hybrid', 'lexical,hybrid')
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
    .action((file: string, opts: EvalOptions) => runEvaluation(cli, file, opts));
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

export async function runEvaluation(cli: CliContext, file: string, opts: EvalOptions): Promise<void> {
  const { io } = cli;
  const g = cli.globals();
  const modes = parseModes(opts.mode);
  const queries = readQueries(file);
  const progress = new Progress(io.stderr, cli.colors(io.stderr), !opts.json);
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
