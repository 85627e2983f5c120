import { existsSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';
import type { Command } from 'commander';
import { QuarryError } from '../../errors.ts';
import { redacting, searchFilter } from '../../host/set.ts';
import { type GrepMatch, type GrepResponse, grepRows } from '../../host/vocabulary.ts';
import type { Project } from '../../project/types.ts';
import type { CliContext } from '../context.ts';
import { safePath, visible } from '../format.ts';
import { checkoutRoot, projectPath, shownPath, withProject } from '../open.ts';
import { collect, nonNegativeInt, positiveInt } from '../options.ts';

interface GrepOptions {
  fixedStrings?: boolean;
  count?: boolean;
  onlyMatching?: boolean;
  afterContext?: number;
  beforeContext?: number;
  files?: boolean;
  hidden?: boolean;
  /** false with --no-ignore */
  ignore?: boolean;
  projectWide?: boolean;
  text?: boolean;
  ignoreCase?: boolean;
  wordRegexp?: boolean;
  glob?: string[];
  type?: string[];
  path?: string[];
  context?: number;
  maxCount?: number;
  limit?: number;
  filesWithMatches?: boolean;
  vimgrep?: boolean;
  json?: boolean;
}

export function registerGrep(program: Command, cli: CliContext): void {
  program
    .command('grep')
    .description(
      'lines matching a regular expression (or -F text), from the index, as ripgrep prints them (exit 0: found, 1: none, 2: an error)',
    )
    .argument('[pattern]', "RE2 syntax (ripgrep's, less backreferences and lookarounds)")
    .argument(
      '[paths...]',
      'only files under these folders or files (default: the folder you stand in, as ripgrep)',
    )
    .option('-F, --fixed-strings', 'the pattern is text, not a regular expression')
    .option('-i, --ignore-case', 'match without regard to case')
    .option('-w, --word-regexp', 'only matches with a word boundary on each side')
    .option(
      '-g, --glob <glob>',
      'only files matching this glob (gitignore syntax; !glob excludes; repeat)',
      collect,
    )
    .option('-t, --type <type>', 'only this language (python, ts, rust, …; repeat, or py,ts)', collect)
    .option('--path <path>', 'only files under this folder or file (repeat, or a,b)', collect)
    .option('-C, --context <n>', 'lines of context around each match', nonNegativeInt)
    .option('-A, --after-context <n>', 'lines of context after each match', nonNegativeInt)
    .option('-B, --before-context <n>', 'lines of context before each match', nonNegativeInt)
    .option('-c, --count', 'the number of matching lines of each file with a match, path:count')
    .option('-o, --only-matching', 'each match on its own line, without the rest of its line')
    .option('--files', 'list the files a search would read, and search nothing (no pattern)')
    .option('--hidden', 'search hidden files and folders too (names starting with a dot)')
    .option('--no-ignore', 'search files that ignore rules leave out of the index too (read from disk)')
    .option('--project-wide', 'search the whole project, wherever you stand')
    .option('-m, --max-count <n>', 'at most n matching lines per file', positiveInt)
    .option('--limit <n>', 'at most n matching lines in all (default 10000)', positiveInt)
    .option('-l, --files-with-matches', 'only the paths of files with a match')
    .option('-a, --text', 'search binary files too, as text')
    .option('--vimgrep', 'one line per match, path:line:column:text')
    .option(
      '--json',
      'JSON: {pattern, matches: [{path, line, column, text, ranges, before, after}], files, scanned, indexed, truncated}',
    )
    .action((pattern: string | undefined, paths: string[], opts: GrepOptions) => {
      // `quarry grep --files [path…]` takes no pattern, as `rg --files` takes none
      if (opts.files) return runGrep(cli, '', [...(pattern ? [pattern] : []), ...paths], opts);
      if (pattern === undefined)
        throw new QuarryError('BAD_INPUT', 'grep needs a pattern: quarry grep PATTERN [PATH…]');
      return runGrep(cli, pattern, paths, opts);
    });
}

/**
 * Where a grep looks, as ripgrep decides it: the paths given (on the command line or with --path), else the folder
 * you stand in when it is inside the project (--project-wide: the whole project).
 */
function scopeOf(opened: Project, typed: string[], projectWide: boolean): string[] | undefined {
  const root = checkoutRoot(opened);
  const prefix = (rel: string) => {
    if (rel === '.') return '';
    // a folder is a prefix ending in a slash, so that `src` does not also take `src2/`
    return root && existsSync(join(root, rel)) && statSync(join(root, rel)).isDirectory() ? `${rel}/` : rel;
  };
  if (typed.length) return typed.map((p) => prefix(projectPath(opened, p)));
  if (projectWide || !root) return undefined;
  const here = relative(root, process.cwd()).split(sep).join('/');
  if (!here || here.startsWith('..') || isAbsolute(here)) return undefined;
  return [`${here}/`];
}

export async function runGrep(
  cli: CliContext,
  pattern: string,
  paths: string[],
  opts: GrepOptions,
): Promise<void> {
  const { io } = cli;
  const started = performance.now();
  await withProject(cli.globals(), async (opened) => {
    const project = redacting(opened); // secrets in matched lines are shown as on every face
    const scope = scopeOf(opened, [...paths, ...(opts.path ?? [])], Boolean(opts.projectWide));
    const filter = searchFilter({ pathPrefixes: scope?.includes('') ? undefined : scope });
    const res = await project.grep({
      pattern,
      ...(opts.files ? { listFiles: true } : {}),
      ...(opts.count ? { count: true } : {}),
      ...(opts.filesWithMatches && !opts.count ? { filesWithMatches: true } : {}),
      ...(opts.hidden ? { hidden: true } : {}),
      ...(opts.ignore === false ? { noIgnore: true } : {}),
      ...(opts.afterContext !== undefined ? { after: opts.afterContext } : {}),
      ...(opts.beforeContext !== undefined ? { before: opts.beforeContext } : {}),
      ...(opts.fixedStrings ? { fixed: true } : {}),
      ...(opts.ignoreCase ? { ignoreCase: true } : {}),
      ...(opts.wordRegexp ? { word: true } : {}),
      ...(opts.glob ? { globs: opts.glob } : {}),
      ...(opts.type ? { types: opts.type } : {}),
      ...(filter ? { filter } : {}),
      ...(opts.context ? { context: opts.context } : {}),
      ...(opts.maxCount ? { maxPerFile: opts.maxCount } : {}),
      ...(opts.limit ? { limit: opts.limit } : {}),
      ...(opts.text ? { binary: true } : {}),
    });
    const found = (res.paths ?? res.counts ?? res.matches).length > 0;
    if (!found) cli.setExitCode(1);
    if (opts.json) io.stdout.write(`${JSON.stringify(res)}\n`);
    else printGrep(cli, res, opts, (rel) => shownPath(opened, rel));
    const note = cli.colors(io.stderr);
    if (res.truncated)
      io.stderr.write(
        `${note.yellow('note')}: more matches than shown: narrow the pattern, or raise --limit\n`,
      );
    // what was not searched, and why: a grep that finds nothing must not look like a file without the text (one that
    // finds something says it with --verbose, as ripgrep passes binary files by without a word; --json always)
    const { binary = 0, secret = 0 } = found && !cli.globals().verbose ? {} : (res.notSearched ?? {});
    if (binary)
      io.stderr.write(
        `${note.yellow('note')}: ${binary} binary file${binary === 1 ? '' : 's'} not searched (-a/--text searches ${binary === 1 ? 'it' : 'them'})\n`,
      );
    if (secret)
      io.stderr.write(
        `${note.yellow('note')}: ${secret} file${secret === 1 ? '' : 's'} holding a private key not searched (quarry index --include-secrets indexes ${secret === 1 ? 'it' : 'them'})\n`,
      );
    if (cli.globals().verbose)
      io.stderr.write(
        note.dim(
          `${res.matches.length} matching lines in ${res.files} files; ${res.scanned} files read (${res.indexed ? 'trigram index' : 'no literal to look up: every file'}; ${res.fromDisk?.changed ?? 0} changed since the index read from disk, ${res.fromDisk?.deleted ?? 0} gone left out) in ${(performance.now() - started).toFixed(0)} ms\n`,
        ),
      );
  });
}

/** ripgrep's plain output: path:line:text, context as path-line-text, `--` between groups that do not touch. */
function printGrep(
  cli: CliContext,
  res: GrepResponse,
  opts: GrepOptions,
  showRaw: (p: string) => string,
): void {
  const { io } = cli;
  const c = cli.colors(io.stdout);
  // control characters in a path or a line are shown escaped, never sent to the terminal (format.ts `visible`)
  const show = (p: string) => safePath(showRaw(p));
  const mark = (m: GrepMatch) => {
    let out = '';
    let at = 0;
    for (const [s, e] of m.ranges) {
      if (s < at || e > m.text.length) continue;
      out += visible(m.text.slice(at, s)) + c.bold(c.red(visible(m.text.slice(s, e))));
      at = e;
    }
    return out + visible(m.text.slice(at));
  };
  if (res.paths) {
    // -l's paths in ripgrep's colour for a path; --files' plain, as ripgrep prints them
    const colour = opts.filesWithMatches ? (p: string) => c.magenta(p) : (p: string) => p;
    for (const p of res.paths) io.stdout.write(`${colour(show(p))}\n`);
    return;
  }
  if (res.counts) {
    for (const { path, count } of res.counts) io.stdout.write(`${c.magenta(show(path))}:${count}\n`);
    return;
  }
  if (opts.filesWithMatches) {
    // an answer of lines (a quarry from before -l had its own mode): their files
    for (const p of new Set(res.matches.map((m) => m.path))) io.stdout.write(`${c.magenta(show(p))}\n`);
    return;
  }
  if (opts.vimgrep) {
    for (const m of res.matches) {
      // columns in the line as it is on disk, even where a long line is shown cut around its match
      const offset = m.column - 1 - (m.ranges[0]?.[0] ?? 0);
      for (const [s] of m.ranges)
        io.stdout.write(`${show(m.path)}:${m.line}:${s + offset + 1}:${visible(m.text)}\n`);
    }
    return;
  }
  if (opts.onlyMatching) {
    // ripgrep -o: each match alone, path:line:match (a line with two matches prints two lines)
    for (const m of res.matches)
      for (const [s, e] of m.ranges)
        io.stdout.write(
          `${c.magenta(show(m.path))}:${c.green(String(m.line))}:${c.bold(c.red(visible(m.text.slice(s, e))))}\n`,
        );
    return;
  }
  const contextual = Boolean(opts.context || opts.afterContext || opts.beforeContext);
  for (const row of grepRows(res.matches)) {
    if (row.kind === 'gap') {
      if (contextual) io.stdout.write('--\n');
    } else if (row.kind === 'context')
      io.stdout.write(
        `${c.magenta(show(row.path))}-${c.green(String(row.line.line))}-${visible(row.line.text)}\n`,
      );
    else
      io.stdout.write(
        `${c.magenta(show(row.match.path))}:${c.green(String(row.match.line))}:${mark(row.match)}\n`,
      );
  }
}
