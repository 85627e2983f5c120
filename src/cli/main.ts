import { createRequire } from 'node:module';
import { Command, CommanderError, Option } from 'commander';
import { checkRepoName, driverOfUrl } from '../config/config.ts';
import { isQuarryError, knownError, QuarryError } from '../errors.ts';
import { registerAsk } from './commands/ask.ts';
import { registerChat } from './commands/chat.ts';
import { registerCompletion } from './commands/completion.ts';
import { registerDoctor } from './commands/doctor.ts';
import { registerEditCommands } from './commands/edit.ts';
import { registerEval } from './commands/eval.ts';
import { registerFiles } from './commands/files.ts';
import { registerGrep } from './commands/grep.ts';
import { registerIndex } from './commands/index.ts';
import { registerMcp } from './commands/mcp.ts';
import { registerModel } from './commands/model.ts';
import { registerRepos } from './commands/repos.ts';
import { registerReset } from './commands/reset.ts';
import { registerSchema } from './commands/schema.ts';
import { registerSearch } from './commands/search.ts';
import { registerServe } from './commands/serve.ts';
import { registerStatus } from './commands/status.ts';
import { registerSymbolCommands } from './commands/symbols.ts';
import { registerToken } from './commands/token.ts';
import { registerWatch } from './commands/watch.ts';
import type { CliContext, Globals, Io } from './context.ts';
import { colorsFor } from './format.ts';

const VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

/** The commands, in the order help and completion list them. */
const COMMANDS = [
  registerIndex,
  registerStatus,
  registerSearch,
  registerGrep,
  registerEval,
  registerModel,
  registerAsk,
  registerSymbolCommands,
  registerEditCommands,
  registerChat,
  registerMcp,
  registerServe,
  registerWatch,
  registerRepos,
  registerToken,
  registerFiles,
  registerDoctor,
  registerReset,
  registerSchema,
  registerCompletion,
];

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
      // one prefix for every error, commander's own (unknown option, missing argument) included
      outputError: (s, write) => write(s.replace(/^error: /, 'quarry: ')),
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

/** An error as one line on stderr (a stack trace with --verbose), and the exit code it maps to. */
function reportError(raw: unknown, io: Io, globals: Globals): number {
  const err = knownError(raw);
  if (err instanceof CommanderError) {
    // commander already printed its message (unknown option, missing argument, --help, --version)
    return err.exitCode === 0 ? 0 : 2;
  }
  const verbose = globals.verbose;
  const c = colorsFor(io.stderr, globals.color);
  if (isQuarryError(err)) {
    io.stderr.write(`${c.red('quarry:')} ${err.message}\n`);
    if (verbose && err.cause) io.stderr.write(`${String((err.cause as Error).stack ?? err.cause)}\n`);
    return err.exitCode;
  }
  const e = err as Error;
  io.stderr.write(
    `${c.red('quarry:')} internal error: ${e.message.split('\n')[0]}${verbose ? '' : ' (run with --verbose for details)'}\n`,
  );
  if (verbose) io.stderr.write(`${e.stack}\n`);
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
  for (const register of COMMANDS) register(program, cli);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (err) {
    return reportError(err, io, globals());
  }
}
