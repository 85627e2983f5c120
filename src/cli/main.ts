import { createRequire } from 'node:module';
import { Command, CommanderError, Option } from 'commander';
import { checkRepoName, driverOfUrl } from '../config/config.ts';
import { isQuarryError, knownError, QuarryError } from '../errors.ts';
import type { CliContext, Globals, Io } from './context.ts';
import { colorsFor, visible } from './format.ts';

const VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

type Register = (program: Command, cli: CliContext) => void;

/**
 * The commands, in the order help and completion list them: the names each module registers, and the module. A
 * command's module is loaded when that command runs, and every module only for help, completion or a word that names
 * none: `quarry search` loads search's code, not the indexer's, the chat's or the server's (docs/benchmarks.md, "A
 * search that loads only search").
 */
const COMMANDS: Array<[names: string[], load: () => Promise<Register>]> = [
  [['index'], async () => (await import('./commands/index.ts')).registerIndex],
  [['status'], async () => (await import('./commands/status.ts')).registerStatus],
  [['search'], async () => (await import('./commands/search.ts')).registerSearch],
  [['grep'], async () => (await import('./commands/grep.ts')).registerGrep],
  [['eval'], async () => (await import('./commands/eval.ts')).registerEval],
  [['model'], async () => (await import('./commands/model.ts')).registerModel],
  [['ask'], async () => (await import('./commands/ask.ts')).registerAsk],
  [
    ['symbols', 'def', 'refs', 'map'],
    async () => (await import('./commands/symbols.ts')).registerSymbolCommands,
  ],
  [
    ['edit', 'apply', 'undo', 'history'],
    async () => (await import('./commands/edit.ts')).registerEditCommands,
  ],
  [['chat'], async () => (await import('./commands/chat.ts')).registerChat],
  [['mcp'], async () => (await import('./commands/mcp.ts')).registerMcp],
  [['serve'], async () => (await import('./commands/serve.ts')).registerServe],
  [['watch'], async () => (await import('./commands/watch.ts')).registerWatch],
  [['repos'], async () => (await import('./commands/repos.ts')).registerRepos],
  [['token'], async () => (await import('./commands/token.ts')).registerToken],
  [['trust'], async () => (await import('./commands/trust.ts')).registerTrust],
  [['files'], async () => (await import('./commands/files.ts')).registerFiles],
  [['doctor'], async () => (await import('./commands/doctor.ts')).registerDoctor],
  [['reset'], async () => (await import('./commands/reset.ts')).registerReset],
  [['schema'], async () => (await import('./commands/schema.ts')).registerSchema],
  [['completion'], async () => (await import('./commands/completion.ts')).registerCompletion],
];

type CommandEntry = (typeof COMMANDS)[number];

/**
 * The table's entries a command line needs: the one whose module registers its command; none for `--version` alone;
 * every one for help (asked before any command word), completion, no command or a misspelt one (commander then names
 * its nearest match). `valued`: the global options that take a value, so that the word after one is not the command.
 */
export function entriesFor(argv: readonly string[], valued: ReadonlySet<string>): CommandEntry[] {
  let word: string | undefined;
  for (let i = 0; i < argv.length && word === undefined; i++) {
    const arg = argv[i]!;
    if (arg === '-h' || arg === '--help') return COMMANDS;
    if (valued.has(arg)) i++;
    else if (!arg.startsWith('-')) word = arg;
  }
  // `quarry --version` prints a line and needs no command
  if (word === undefined && argv.some((a) => a === '-V' || a === '--version')) return [];
  const one = word === 'completion' ? undefined : COMMANDS.find(([names]) => names.includes(word ?? ''));
  return one ? [one] : COMMANDS;
}

/** The global options of `program` that take a value, by each of their flags. */
function valuedOptions(program: Command): Set<string> {
  return new Set(
    program.options
      .filter((o) => o.required || o.optional)
      .flatMap((o) => [o.long, o.short])
      .filter((flag): flag is string => Boolean(flag)),
  );
}

/** The program with its global options; commands are registered on it. */
function buildProgram(io: Io): Command {
  return new Command('quarry')
    .description(
      'Local-first retrieval for source code: index a repository, search it, and answer, edit or chat over it; serve it to agents (MCP) and people (a web panel).',
    )
    .version(VERSION)
    .option('--root <dir>', 'project root (default: walk up to .quarry/ or .git)')
    .option(
      '--store <url>',
      'where the index lives: postgres://user@host:5432/db, chroma://host:8000, or a SQLite file (default: .quarry/index.db; env QUARRY_STORE_URL)',
    )
    .option(
      '--repo <name>',
      "the repository's key in a shared store (default: origin's owner/name, or the folder's name); search takes several",
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option(
      '--remote <url>',
      'ask another quarry (the URL `quarry serve` printed; token as ?token= or QUARRY_TOKEN; env QUARRY_REMOTE)',
    )
    .option(
      '--no-overlay',
      "with --remote or --repo: search the shared index as it was built, not this checkout's changes over it (env QUARRY_OVERLAY=off)",
    )
    .addOption(
      new Option('--color <when>', 'colour: always, never or auto (a terminal)').choices([
        'always',
        'never',
        'auto',
      ]),
    )
    .option('--no-color', 'plain output, even on a terminal (as --color never)')
    .option('--verbose', 'more detail, and stack traces on errors')
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
      outputError: usageError('quarry'),
    })
    .exitOverride()
    .showSuggestionAfterError()
    .hook('preAction', (cmd) => {
      // through the environment, so that every command, and the processes they start, open the same store
      const { store, repo, remote } = cmd.opts() as Globals;
      if (store) {
        driverOfUrl(store); // a bad scheme is a one-line error here, before anything starts
        process.env.QUARRY_STORE_URL = store;
      }
      if (store && remote)
        throw new QuarryError('BAD_INPUT', '--store and --remote both name where the index is: pass one');
      for (const name of repo ?? []) checkRepoName(name); // one rule, before anything opens (`--all-repos` is "every")
      if (repo?.length === 1) process.env.QUARRY_REPO = repo[0];
    });
}

/**
 * Commander's own errors (an unknown option, a missing argument) with quarry's one prefix, the argument they echo shown
 * terminal-safe, and, on the same line, where the command's usage is (issue 65: an unknown option named no help).
 */
function usageError(command: string): (message: string, write: (s: string) => void) => void {
  return (s, write) =>
    write(
      visible(s.replace(/^error: (.*?)\.?(\n|$)/, `quarry: $1: see \`${command} --help\`$2`), {
        lines: true,
      }),
    );
}

/** Each command's usage errors point to its own help (`quarry search --help`), a subcommand's to its own. */
function pointToHelp(command: Command, path: string): void {
  command.configureOutput({ outputError: usageError(path) });
  for (const sub of command.commands) pointToHelp(sub, `${path} ${sub.name()}`);
}

/**
 * An error as one line on stderr (a stack trace with --verbose), and the exit code it maps to. A message echoes what
 * it was given (an argument, a file name, a server's answer): its control characters are shown escaped (`visible`),
 * on a terminal or off it, as search and grep print text.
 */
function reportError(raw: unknown, io: Io, globals: Globals): number {
  const err = knownError(raw);
  if (err instanceof CommanderError) {
    // commander already printed its message (unknown option, missing argument, --help, --version)
    return err.exitCode === 0 ? 0 : 2;
  }
  const verbose = globals.verbose;
  const c = colorsFor(io.stderr, globals.color);
  if (isQuarryError(err)) {
    io.stderr.write(`${c.red('quarry:')} ${visible(err.message, { lines: true })}\n`);
    if (verbose && err.cause)
      io.stderr.write(`${visible(String((err.cause as Error).stack ?? err.cause), { lines: true })}\n`);
    return err.exitCode;
  }
  const e = err as Error;
  io.stderr.write(
    `${c.red('quarry:')} internal error: ${visible(e.message.split('\n')[0]!)}${verbose ? '' : ' (run with --verbose for details)'}\n`,
  );
  if (verbose) io.stderr.write(`${visible(String(e.stack), { lines: true })}\n`);
  return new QuarryError('INTERNAL', e.message).exitCode;
}

/** Runs the quarry CLI; resolves to the process exit code. */
export async function main(
  argv: string[],
  io: Io = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  let exitCode = 0;
  const program = buildProgram(io);
  const globals = () => program.opts() as Globals;
  const cli: CliContext = {
    io,
    colors: (stream) => colorsFor(stream, globals().color),
    globals,
    setExitCode: (code) => {
      exitCode = code;
    },
  };
  try {
    const modules = await Promise.all(entriesFor(argv, valuedOptions(program)).map(([, load]) => load()));
    for (const register of modules) register(program, cli);
    pointToHelp(program, 'quarry');
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (err) {
    return reportError(err, io, globals());
  }
}
