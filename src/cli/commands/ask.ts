import { type Command, Option } from 'commander';
import type { Packing } from '../../config/config.ts';
import { SEARCH_MODES, type SearchMode } from '../../host/vocabulary.ts';
import type { Project } from '../../project/local/index.ts';
import type { CliContext } from '../context.ts';
import { formatSources, sources, visible } from '../format.ts';
import { withProject } from '../open.ts';
import { positiveInt } from '../options.ts';

/**
 * Heavy modules (the AI SDK, the tokenizer's tables, tree-sitter) load when a command needs them, not every time
 * quarry starts: `quarry search` stays a fast process.
 */
const lazyAsk = () => import('../../host/answers.ts');

interface AskOptions {
  model?: string;
  topK?: number;
  budget?: number;
  mode?: SearchMode;
  packing?: Packing;
  all?: boolean | string;
  map?: boolean;
  showSources?: boolean;
  dryRun?: boolean;
  json?: boolean;
}

export function registerAsk(program: Command, cli: CliContext): void {
  program
    .command('ask')
    .description('answer a question about the code from retrieved context (streams, with citations)')
    .argument('<question...>', 'the question')
    .option(
      '--model <provider:name>',
      'the model (ollama:qwen2.5-coder, openai:gpt-4o-mini, gguf:/path/model.gguf, …)',
    )
    .option('-k, --top-k <n>', 'chunks (or files) retrieval offers', positiveInt)
    .option(
      '--budget <tokens>',
      'tokens of context (default: from the model’s window, at most 32k)',
      positiveInt,
    )
    .addOption(new Option('--mode <mode>', 'retrieval mode').choices(SEARCH_MODES))
    .addOption(
      new Option('--packing <how>', 'whole files or chunks with context').choices(['files', 'chunks']),
    )
    .option('--all [mask]', 'send every indexed file (or those matching a mask such as "src/**"), or refuse')
    .option('--no-map', 'leave out the repository map')
    .option('--show-sources', 'list what was sent: paths, line ranges, tokens')
    .option('--dry-run', 'print the assembled prompt and its token count; call no model')
    .option('--json', 'print one JSON object (answer, sources, tokens)')
    .action((words: string[], opts: AskOptions) => runAsk(cli, words, opts));
}

function contextOptions(opts: AskOptions) {
  return {
    ...(opts.topK ? { topK: opts.topK } : {}),
    ...(opts.budget ? { budget: opts.budget } : {}),
    ...(opts.mode ? { mode: opts.mode } : {}),
    ...(opts.packing ? { packing: opts.packing } : {}),
    ...(opts.all !== undefined ? { all: opts.all } : {}),
    ...(opts.map === false ? { noMap: true } : {}),
    ...(opts.model ? { model: opts.model } : {}),
  };
}

export async function runAsk(cli: CliContext, words: string[], opts: AskOptions): Promise<void> {
  const { ask } = await lazyAsk();
  const { io } = cli;
  const g = cli.globals();
  const question = words.join(' ');
  await withProject(g, async (project) => {
    if (opts.dryRun) return printDryRun(cli, project, question, opts);
    const c = cli.colors(io.stdout);
    const e = cli.colors(io.stderr);
    const res = await ask(project, question, contextOptions(opts));
    if (res.routed) {
      if (opts.json) io.stdout.write(`${JSON.stringify({ routed: res.routed })}\n`);
      else
        io.stdout.write(
          `${visible(res.routed.text, { lines: true })}\n${c.dim('(answered from the symbol index)')}\n`,
        );
      return;
    }
    if (res.fallback) io.stderr.write(`${e.yellow('note')}: ${visible(res.fallback)}\n`);
    if (res.note) io.stderr.write(`${e.yellow('note')}: ${visible(res.note)}\n`);
    const ctx = res.context!;
    if (g.verbose)
      io.stderr.write(
        e.dim(
          `${res.model}: ${ctx.tokens.prompt} prompt tokens, answer up to ${res.maxOutputTokens} tokens\n`,
        ),
      );
    let answer = '';
    for await (const piece of res.stream!) {
      answer += piece;
      // a model repeats what it read (a clipboard write, a screen clear): shown, never acted on; --json keeps it
      if (!opts.json) io.stdout.write(visible(piece, { lines: true }));
    }
    if (opts.json) {
      io.stdout.write(
        `${JSON.stringify({ question, model: res.model, answer, sources: sources(ctx), tokens: ctx.tokens })}\n`,
      );
      return;
    }
    if (!answer.endsWith('\n')) io.stdout.write('\n');
    if (opts.showSources) io.stdout.write(`${c.dim('sources:')}\n${formatSources(ctx)}`);
  });
}

/** `--dry-run`: the assembled prompt and its token count; no model is called. */
async function printDryRun(
  cli: CliContext,
  project: Project,
  question: string,
  opts: AskOptions,
): Promise<void> {
  const { io } = cli;
  const c = cli.colors(io.stdout);
  const ctx = await project.context(question, contextOptions(opts));
  if (opts.json) {
    io.stdout.write(
      `${JSON.stringify({ system: ctx.system, user: ctx.user, tokens: ctx.tokens, budget: ctx.budget, sources: sources(ctx) })}\n`,
    );
    return;
  }
  // the prompt holds file names and their text as they are: a terminal shows their control characters escaped
  const text = (s: string) => visible(s, { lines: true });
  io.stdout.write(
    `${c.dim('--- system ---')}\n${text(ctx.system)}\n${c.dim('--- user ---')}\n${text(ctx.user)}\n`,
  );
  io.stdout.write(
    c.dim(
      `--- ${ctx.tokens.prompt} prompt tokens (${ctx.blocks.length} blocks, budget ${ctx.budget.hard}) ---\n`,
    ),
  );
  if (opts.showSources) io.stdout.write(formatSources(ctx));
}
