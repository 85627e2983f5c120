import type { Command } from 'commander';
import type { CliContext } from '../context.ts';
import { visible } from '../format.ts';
import { projectPath, withProject } from '../open.ts';
import { positiveInt } from '../options.ts';

/** The symbol lists' formatters: a light module, loaded when a command prints one. */
const lazyRouter = () => import('../../host/symbols.ts');

export function registerSymbolCommands(program: Command, cli: CliContext): void {
  program
    .command('symbols')
    .description('list the definitions of a file (and, with --variables, its top-level variables)')
    .argument('<file>', 'a path as indexed (src/api.ts)')
    .option('--variables', 'top-level variables and constants instead')
    .option('--json', 'print JSON')
    .action((file: string, opts: { variables?: boolean; json?: boolean }) => runSymbols(cli, file, opts));

  program
    .command('def')
    .description('where a name is defined')
    .argument('<name>', 'a symbol (parseConfig, Indexer.run)')
    .option('--limit <n>', 'list at most this many definitions', positiveInt, 200)
    .option('--json', 'print JSON')
    .action((name: string, opts: ListOptions) => runDef(cli, name, opts));

  program
    .command('refs')
    .description('where a name is used (identifier occurrences)')
    .argument('<name>', 'a symbol (parseConfig, Indexer.run)')
    .option('--limit <n>', 'list at most this many files', positiveInt, 500)
    .option('--json', 'print JSON')
    .action((name: string, opts: ListOptions) => runRefs(cli, name, opts));

  program
    .command('map')
    .description('the repository map: files and their most-used definitions, ranked by references (PageRank)')
    .argument('[question...]', 'lean the map towards what a question names (its identifiers and file names)')
    .option('--tokens <n>', 'token budget', positiveInt, 2048)
    .option('--focus <file...>', 'lean the ranking towards these files')
    .option('--json', 'print JSON')
    .action((question: string[], opts: MapOptions) => runMap(cli, { ...opts, question: question.join(' ') }));
}

export async function runSymbols(
  cli: CliContext,
  file: string,
  opts: { variables?: boolean; json?: boolean },
): Promise<void> {
  const { io } = cli;
  const { formatSymbols } = await lazyRouter();
  await withProject(cli.globals(), async (project) => {
    const outline = await project.outline(projectPath(project, file));
    const path = outline.path;
    if (opts.variables) {
      const vars = outline.variables;
      if (opts.json) io.stdout.write(`${JSON.stringify({ path, variables: vars })}\n`);
      else
        io.stdout.write(
          `${lines(`${path}\n${vars.map((v) => `  ${v.line}  ${v.kind} ${v.name}`).join('\n')}`)}\n`,
        );
      return;
    }
    const symbols = outline.symbols;
    if (opts.json) io.stdout.write(`${JSON.stringify({ path, symbols })}\n`);
    else io.stdout.write(`${lines(formatSymbols(path, symbols))}\n`);
  });
}

interface ListOptions {
  limit?: number;
  json?: boolean;
}

/** What a cut list says, in the text and in `--json` (`truncated`). */
const moreNote = (limit: number, what: string) => `more ${what}: raise --limit (now ${limit})`;

export async function runDef(cli: CliContext, name: string, opts: ListOptions): Promise<void> {
  const { io } = cli;
  const { formatDefinitions } = await lazyRouter();
  const limit = opts.limit ?? 200;
  await withProject(cli.globals(), async (project) => {
    // one past the limit says whether the list was cut
    const found = await project.definitions(name, { limit: limit + 1 });
    const defs = found.slice(0, limit);
    const truncated = found.length > limit;
    if (!defs.length) cli.setExitCode(1); // as grep: nothing found is not an error, and scripts can tell
    if (opts.json) io.stdout.write(`${JSON.stringify({ name, definitions: defs, truncated })}\n`);
    else if (!defs.length) io.stdout.write(`no definition named ${name} — try \`quarry search ${name}\`\n`);
    else
      io.stdout.write(
        `${lines(formatDefinitions(name, defs, truncated ? moreNote(limit, 'exist') : undefined))}\n`,
      );
  });
}

export async function runRefs(cli: CliContext, name: string, opts: ListOptions): Promise<void> {
  const { io } = cli;
  const { formatReferences } = await lazyRouter();
  const limit = opts.limit ?? 500;
  await withProject(cli.globals(), async (project) => {
    const found = await project.references(name, { limit: limit + 1 });
    const refs = found.slice(0, limit);
    const truncated = found.length > limit;
    if (!refs.length) cli.setExitCode(1);
    if (opts.json) io.stdout.write(`${JSON.stringify({ name, references: refs, truncated })}\n`);
    else if (!refs.length) io.stdout.write(`nothing in the index uses ${name}\n`);
    else
      io.stdout.write(
        `${lines(formatReferences(name, refs, truncated ? moreNote(limit, 'files use it') : undefined))}\n`,
      );
  });
}

interface MapOptions {
  tokens: number;
  question?: string;
  focus?: string[];
  json?: boolean;
}

export async function runMap(cli: CliContext, opts: MapOptions): Promise<void> {
  const { io } = cli;
  await withProject(cli.globals(), async (project) => {
    const map = await project.repoMap({
      budget: opts.tokens,
      ...(opts.focus ? { focus: opts.focus } : {}),
      ...(opts.question ? { question: opts.question } : {}),
    });
    if (opts.json) io.stdout.write(`${JSON.stringify(map)}\n`);
    else {
      io.stdout.write(map.text ? lines(map.text) : 'no definitions in the index\n');
      if (map.omitted)
        io.stdout.write(cli.colors(io.stdout).dim(`… ${map.omitted} more files (raise --tokens)\n`));
    }
  });
}

/** Plain text lines with any control character in a path or a name shown escaped (format.ts `visible`). */
function lines(text: string): string {
  return text
    .split('\n')
    .map((l) => visible(l))
    .join('\n');
}
