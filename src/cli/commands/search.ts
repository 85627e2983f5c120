import { type Command, Option } from 'commander';
import { isQuarryError } from '../../errors.ts';
import { openedSet, type ProjectSet, searchFilter } from '../../host/set.ts';
import {
  analyzeQuery,
  resultJson,
  resultLabel,
  SEARCH_MODES,
  type SearchMode,
} from '../../host/vocabulary.ts';
import type { Project } from '../../project/local/index.ts';
import type { CliContext } from '../context.ts';
import { highlightTerms, safePath, visible } from '../format.ts';
import { openAnyProject, projectPath, remoteOf, repoList, shownPath, warmServerProject } from '../open.ts';
import { collect, nonNegativeInt, positiveInt } from '../options.ts';

interface SearchOptions {
  topK?: number;
  files?: boolean;
  mode?: SearchMode;
  path?: string[];
  lang?: string[];
  allRepos?: boolean;
  server?: boolean;
  vimgrep?: boolean;
  context?: number;
  json?: boolean;
}

type SearchResponse = Awaited<ReturnType<ProjectSet['search']>>;

export function registerSearch(program: Command, cli: CliContext): void {
  program
    .command('search')
    .description('search the index (exit 0: found, 1: no match, 2 and up: an error, as grep)')
    .argument('<query...>', 'what to look for')
    .option('-k, --top-k <n>', 'results to show', positiveInt)
    .option('--files', 'rank files by their best chunk')
    .addOption(new Option('--mode <mode>', 'retrieval mode').choices(SEARCH_MODES))
    .option(
      '--path <path>',
      'only files under this folder or file: absolute, from here, or from the project root (repeat, or a,b)',
      collect,
    )
    .option('--lang <language>', 'only this language (repeat, or typescript,python)', collect)
    .option('--all-repos', 'search every repository of the store (or of the --remote server)')
    .option(
      '--no-server',
      'do not ask a running `quarry serve` or `mcp --http` of this checkout (warm model)',
    )
    .option('--vimgrep', "one line per result, path:line:column:text (editors' quickfix format)")
    .option(
      '-C, --context <n>',
      'show n lines around the best-matching line instead of a snippet',
      nonNegativeInt,
    )
    .option(
      '--json',
      'JSON: {query, mode, results: [{path, startLine, endLine, symbol, kind, score, snippet, snippetLine, line, column}], files}',
    )
    .action((words: string[], opts: SearchOptions) => runSearch(cli, words, opts));
}

/** The project the search starts from: a running server's when it can answer (it is warm), else opened here. */
async function firstProject(
  cli: CliContext,
  opts: SearchOptions,
  many: boolean,
  names: string[],
): Promise<{ project: Project; viaServer: boolean }> {
  const g = cli.globals();
  // a search in a checkout that a running server keeps open goes to that server: its index is open and its caches
  // warm (a new process opening a large index pays more than the search), and its model is loaded (loading ONNX
  // again costs more than a hybrid search); if it does not answer, the search runs here
  // (not when another index is named: --remote or QUARRY_REMOTE, --store, which sets QUARRY_STORE_URL, or --repo)
  const warm =
    !many && opts.server !== false && !remoteOf(g) && !process.env.QUARRY_STORE_URL && !g.repo?.length
      ? await warmServerProject(g.root)
      : undefined;
  if (warm && g.verbose)
    cli.io.stderr.write(
      `${cli.colors(cli.io.stderr).dim(`asking the running server at ${warm.location}`)}\n`,
    );
  if (warm) return { project: warm, viaServer: true };
  return {
    project: await openAnyProject(many ? { ...g, repo: names.slice(0, 1), overlay: false } : g),
    viaServer: false,
  };
}

export async function runSearch(cli: CliContext, words: string[], opts: SearchOptions): Promise<void> {
  const g = cli.globals();
  const many = Boolean(opts.allRepos) || (g.repo?.length ?? 0) > 1;
  const names: string[] = many
    ? opts.allRepos
      ? (await repoList(g)).map((r) => r.name)
      : (g.repo ?? [])
    : [];
  const { project, viaServer } = await firstProject(cli, opts, many, names);
  const state = { printing: false };
  try {
    await searchWith(cli, project, words, opts, names, state);
  } catch (err) {
    // the server announced for this checkout stopped, or is not quarry: the index is here, search it here
    if (!viaServer || state.printing || !isQuarryError(err) || err.code !== 'REMOTE') throw err;
    if (g.verbose)
      cli.io.stderr.write(
        `${cli.colors(cli.io.stderr).dim(`${visible(err.message)}: searching here instead`)}\n`,
      );
    await searchWith(cli, await openAnyProject(g), words, opts, names, state);
  }
}

async function searchWith(
  cli: CliContext,
  project: Project,
  words: string[],
  opts: SearchOptions,
  names: string[],
  state: { printing: boolean },
): Promise<void> {
  const { io } = cli;
  const g = cli.globals();
  const opened: Project[] = [project];
  // the set of what this command opened: one search over it (several repositories interleaved), snippets and
  // file views redacted as on every face
  const set = openedSet(opened);
  try {
    const filter = searchFilter({
      pathPrefixes: opts.path?.map((p) => projectPath(project, p)).map((p) => (p === '.' ? '' : p)),
      languages: opts.lang,
    });
    const searchOptions = {
      onNotice: (m: string) => io.stderr.write(`${cli.colors(io.stderr).yellow('note')}: ${visible(m)}\n`),
      ...(opts.topK ? { topK: opts.topK, topFiles: opts.topK } : {}),
      ...(opts.mode ? { mode: opts.mode } : {}),
      ...(filter ? { filter } : {}),
    };
    for (const name of names)
      if (name !== project.name) opened.push(await openAnyProject({ ...g, repo: [name], overlay: false }));
    const res = await set.search(words.join(' '), { ...searchOptions, repos: names });
    if (res.stale) searchOptions.onNotice(res.stale);
    const found = opts.files ? res.files.length : res.results.length;
    if (!found) cli.setExitCode(1); // as grep and ripgrep: no match is not an error, and scripts can tell
    state.printing = true;
    await printSearch(cli, set, res, opts);
  } finally {
    await set.close();
  }
}

async function printSearch(
  cli: CliContext,
  set: ProjectSet,
  res: SearchResponse,
  opts: SearchOptions,
): Promise<void> {
  const { io } = cli;
  if (opts.json && opts.files) {
    // the file view of the contract: just the ranked files
    io.stdout.write(
      `${JSON.stringify({ query: res.query, mode: res.mode, files: res.files, ...(res.stale ? { stale: res.stale } : {}) })}\n`,
    );
    return;
  }
  if (opts.json) {
    const json = {
      query: res.query,
      mode: res.mode,
      results: res.results.map(resultJson),
      files: res.files,
      ...(res.stale ? { stale: res.stale } : {}),
    };
    io.stdout.write(`${JSON.stringify(json)}\n`);
    return;
  }
  const c = cli.colors(io.stdout);
  // text and --vimgrep name files as an editor standing here opens them; --json stays root-relative
  const shown = async (r: { repo?: string; path: string }) =>
    safePath(r.repo ? `${r.repo}:${r.path}` : shownPath(await set.get(undefined), r.path));
  if (opts.vimgrep) {
    for (const r of res.results) {
      const text = r.snippet.split('\n')[r.line - r.snippetLine] ?? '';
      io.stdout.write(`${await shown(r)}:${r.line}:${r.column}:${visible(text)}\n`);
    }
    return;
  }
  if (opts.files) {
    if (!res.files.length) io.stderr.write(`${c.dim('no matches')}\n`);
    for (const f of res.files)
      io.stdout.write(
        `${c.dim(f.score.toFixed(3))}  ${f.repo ? `${c.magenta(`${visible(f.repo)}:`)}${c.cyan(safePath(f.path))}` : c.cyan(await shown(f))}${localMark(f, c)}\n`,
      );
    return;
  }
  if (!res.results.length) {
    io.stderr.write(`${c.dim('no matches')} — try other words, or check \`quarry status\`\n`);
    return;
  }
  await printResults(cli, set, res, opts);
  if (cli.globals().verbose)
    io.stdout.write(c.dim(`${res.results.length} results in ${res.tookMs.toFixed(1)} ms\n`));
}

/** A file this checkout changed since the shared index's commit, searched as it is here (a local overlay). */
function localMark(r: { side?: 'local' | 'shared' }, c: ReturnType<CliContext['colors']>): string {
  return r.side === 'local' ? ` ${c.blue('(local)')}` : '';
}

/** Each result: its place, then its snippet (or `-C n` lines around its best line) with the query words marked. */
async function printResults(cli: CliContext, set: ProjectSet, res: SearchResponse, opts: SearchOptions) {
  const { io } = cli;
  const c = cli.colors(io.stdout);
  const terms = analyzeQuery(res.query).terms;
  const mark = (line: string) => highlightTerms(line, terms, (m) => c.bold(c.red(m)));
  for (const [i, r] of res.results.entries()) {
    const label = resultLabel(r);
    const sym = label ? ` ${c.green(visible(label))}${r.kind ? c.dim(` (${r.kind})`) : ''}` : '';
    const path = safePath(r.repo ? r.path : shownPath(await set.get(undefined), r.path));
    io.stdout.write(
      `${c.dim(`${i + 1}.`)} ${r.repo ? c.magenta(`${visible(r.repo)}:`) : ''}${c.cyan(path)}${c.dim(':')}${c.yellow(`${r.startLine}-${r.endLine}`)}${sym} ${c.dim(r.score.toFixed(3))}${localMark(r, c)}\n`,
    );
    let first = r.snippetLine;
    let lines = r.snippet.split('\n');
    if (opts.context !== undefined) {
      const slice = await (await set.get(r.repo)).readFile(r.path, {
        start: Math.max(1, r.line - opts.context),
        end: r.line + opts.context,
      });
      first = slice.start;
      lines = slice.lines;
    }
    const width = String(first + lines.length - 1).length;
    for (const [j, line] of lines.entries()) {
      const n = first + j;
      const num = String(n).padStart(width);
      io.stdout.write(
        `   ${n === r.line ? c.yellow(num) : c.dim(num)}${c.dim(n === r.line ? ':' : '│')} ${mark(visible(line))}\n`,
      );
    }
  }
}
