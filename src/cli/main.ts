import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve as resolvePath } from 'node:path';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import pc from 'picocolors';
import { driverOfUrl, resolveConfig, type UserConfig } from '../config/config.ts';
import { verifiedWeights } from '../embed/local.ts';
import { bundledModelDir, cacheModelDir, findWeights, installWeights } from '../embed/models.ts';
import { isQuarryError, QuarryError } from '../errors.ts';
import { readQueries, runEval } from '../eval/eval.ts';
import { openedSet } from '../host/set.ts';
import {
  indexProject,
  type LocalProject,
  openProject,
  type Project,
  projectStatus,
  type StatusReport,
} from '../project/local.ts';
import { analyzeQuery } from '../search/query.ts';
import { resultJson, SEARCH_MODES, type SearchMode } from '../search/search.ts';
import { DATA_CHUNK_VECTORS } from '../workspace/roles.ts';
import { SKIP_REASONS } from '../workspace/walk.ts';
import {
  openAnyProject,
  projectPath,
  registerAnswerCommands,
  registerChatCommand,
  registerEditCommands,
  repoList,
} from './answer-commands.ts';
import { spawnBackgroundIndex } from './background.ts';
import { formatBytes, formatDuration, Progress } from './progress.ts';
import { registerServeCommands } from './serve-commands.ts';
import { registerTeamCommands } from './team-commands.ts';
import { registerToolCommands } from './tool-commands.ts';

const VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

interface Io {
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive whole number');
  return n;
}

function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number, 0 or more');
  return n;
}

/** `--color always|never|auto` (`--no-color` is never); auto: a terminal, unless NO_COLOR is set. */
function colorsFor(stream: NodeJS.WriteStream, flag: boolean | string | undefined) {
  const enabled =
    flag === 'always' ||
    (flag !== false &&
      flag !== 'never' &&
      !process.env.NO_COLOR &&
      (Boolean(stream.isTTY) || Boolean(process.env.FORCE_COLOR)));
  return pc.createColors(enabled);
}

/** Repeatable, comma-separated option values: `--lang ts --lang py` or `--lang ts,py`. */
function collect(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean),
  ];
}

/** The project as a running local server of this checkout serves it, when there is one that answers. */
async function warmServerProject(rootOption: string | undefined): Promise<Project | undefined> {
  const { findProjectRoot } = await import('../workspace/root.ts');
  const { findServer } = await import('../host/discovery.ts');
  const root = rootOption ? resolvePath(rootOption) : findProjectRoot(process.cwd());
  const note = root ? findServer(root) : undefined;
  if (!note) return undefined;
  try {
    const { openRemoteProject } = await import('../project/remote.ts');
    // opening asks the server for its status once: it answers, and is quarry
    return await openRemoteProject({ url: note.url });
  } catch {
    return undefined;
  }
}

/** Query words in a line, marked the way grep marks matches. */
function highlightTerms(line: string, terms: readonly string[], mark: (s: string) => string): string {
  if (!terms.length) return line;
  const escaped = terms
    .filter((t) => t.length > 1)
    .sort((a, b) => b.length - a.length)
    .map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  if (!escaped.length) return line;
  return line.replace(new RegExp(escaped.join('|'), 'gi'), (m) => mark(m));
}

/** Runs the quarry CLI; resolves to the process exit code. */
export async function main(
  argv: string[],
  io: Io = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  let exitCode = 0;
  const program = new Command('quarry')
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
    })
    .exitOverride()
    .showSuggestionAfterError()
    .hook('preAction', (cmd) => {
      // through the environment, so that every command, and the processes they start, open the same store
      const { store, repo, remote } = cmd.opts() as { store?: string; repo?: string[]; remote?: string };
      if (store) {
        driverOfUrl(store); // a bad scheme is a one-line error here, before anything starts
        process.env.QUARRY_STORE_URL = store;
      }
      if (store && remote)
        throw new QuarryError('BAD_INPUT', '--store and --remote both name where the index is: pass one');
      if (repo?.length === 1) process.env.QUARRY_REPO = repo[0];
    });

  program
    .command('index')
    .description('index a folder (default: the current project), or bring its index up to date')
    .argument('[dir]', 'folder to index')
    .option('--wait', 'wait for another running `quarry index` instead of exiting')
    .option('--workers <n>', 'parse workers (0 = in the main thread)', nonNegativeInt)
    .option('--max-file-size <bytes>', 'skip files larger than this (default 1048576)', positiveInt)
    .option('--include-secrets', 'also index files that look like secrets (.env, keys, credentials)')
    .option('--no-embed', 'lexical only: no vectors this run')
    .option('--background', 'index lexically now, then keep embedding in a background process and return')
    .option('--json', 'print the report as JSON')
    .option('--quiet', 'no progress display')
    .action(async (dir: string | undefined, opts) => {
      const g = program.opts();
      const err = colorsFor(io.stderr, g.color);
      const overrides: UserConfig = {};
      if (opts.maxFileSize) overrides.maxFileBytes = opts.maxFileSize;
      if (opts.includeSecrets) overrides.includeSecrets = true;
      const project = await openProject({ root: dir ?? g.root, create: true, overrides });
      const progress = new Progress(io.stderr, err, !opts.quiet && !opts.json);
      const controller = new AbortController();
      let interrupts = 0;
      const onSigint = () => {
        interrupts++;
        if (interrupts > 1) process.exit(130);
        io.stderr.write(`\n${err.yellow('stopping')}: committing what is done (Ctrl-C again to quit now)\n`);
        controller.abort();
      };
      process.on('SIGINT', onSigint);
      process.on('SIGTERM', onSigint);
      try {
        const report = await indexProject(project, {
          embed: opts.embed !== false && !opts.background,
          onNotice: (m) => {
            progress.end();
            io.stderr.write(`${err.yellow('note')}: ${m}\n`);
          },
          onDistill: (done, total) =>
            progress.update('distilling the static table', done, total, 0, undefined, ''),
          signal: controller.signal,
          lockWaitMs: opts.wait ? 24 * 3600 * 1000 : 0,
          ...(opts.workers !== undefined ? { workers: opts.workers } : {}),
          onWarning: (m) => {
            progress.end();
            io.stderr.write(`${err.yellow('warning')}: ${m}\n`);
          },
          onProgress: (p) => {
            if (p.phase === 'lexical') progress.update('indexing', p.done, p.total, p.filesPerSec, p.etaMs);
            else if (p.phase === 'coarse')
              progress.update('vectors 1/2 (files)', p.done, p.total, p.textsPerSec ?? 0, p.etaMs, 'texts/s');
            else if (p.phase === 'refine')
              progress.update(
                'vectors 2/2 (chunks)',
                p.done,
                p.total,
                p.textsPerSec ?? 0,
                p.etaMs,
                'texts/s',
              );
          },
        });
        progress.end();
        const stats = await project.store.stats();
        if (opts.json) {
          io.stdout.write(
            `${JSON.stringify({ ...report, skipped: report.skipped.length, stats }, null, 2)}\n`,
          );
        } else {
          const out = colorsFor(io.stdout, g.color);
          const changed = report.added + report.updated + report.deleted + (report.embedding?.embedded ?? 0);
          io.stdout.write(
            `${out.green(report.interrupted ? 'interrupted' : 'indexed')} ${project.root} in ${formatDuration(report.durationMs)}: ` +
              `${report.files} files (${report.added} added, ${report.updated} updated, ${report.deleted} deleted` +
              `${changed === 0 ? ', nothing changed' : ''}), ${stats.chunks} chunks${stats.bytes !== undefined ? `, ${formatBytes(stats.bytes)}` : ''}\n`,
          );
          // name what was left out (a few per reason; `quarry files --skipped` lists them all)
          const named = (paths: string[]) =>
            `${paths.slice(0, 3).join(', ')}${paths.length > 3 ? ` and ${paths.length - 3} more` : ''}`;
          const notes: string[] = [];
          const byReason = new Map<string, string[]>();
          for (const s of report.skipped) byReason.set(s.reason, [...(byReason.get(s.reason) ?? []), s.path]);
          for (const [reason, paths] of byReason)
            notes.push(
              `${paths.length} left out, ${SKIP_REASONS[reason as keyof typeof SKIP_REASONS] ?? reason}: ${named(paths)}`,
            );
          const noChunks = new Map<string, string[]>();
          for (const s of report.skippedByContent)
            noChunks.set(s.reason, [...(noChunks.get(s.reason) ?? []), s.path]);
          for (const [reason, paths] of noChunks)
            notes.push(`${paths.length} recorded without chunks (${reason}): ${named(paths)}`);
          if (byReason.size || noChunks.size) notes.push('`quarry files --skipped` lists every one and why');
          if (report.embedding) {
            const e = report.embedding;
            notes.push(
              `vectors: ${e.embedded} embedded, ${e.fromCache} from cache (${e.embedder})${e.reset ? '; vectors of another model were dropped' : ''}`,
            );
          }
          for (const n of notes) io.stdout.write(`  ${out.dim(n)}\n`);
          if (report.interrupted)
            io.stdout.write(`  ${out.dim('run `quarry index` again to finish; committed work is kept')}\n`);
        }
        if (report.interrupted) exitCode = 130;
        else if (opts.background && opts.embed !== false) {
          const child = spawnBackgroundIndex(project.root);
          if (!opts.json)
            io.stdout.write(
              `  embedding in the background (pid ${child}); \`quarry status\` shows its progress\n`,
            );
        }
      } finally {
        process.off('SIGINT', onSigint);
        process.off('SIGTERM', onSigint);
        progress.end();
        await project.close();
      }
    });

  program
    .command('status')
    .description('what the index holds and what is pending')
    .option('--json', 'print as JSON')
    .action(async (opts) => {
      const g = program.opts();
      const project = await openAnyProject(g);
      try {
        // the checkout here: what is pending on disk too; elsewhere (a remote, another repository) the index alone
        const s: StatusReport =
          !project.remote && project.location === (project as LocalProject).root
            ? await projectStatus(project as LocalProject)
            : { ...(await project.status()), pending: { added: 0, modified: 0, deleted: 0 } };
        if (opts.json) {
          io.stdout.write(`${JSON.stringify(s, null, 2)}\n`);
          return;
        }
        const c = colorsFor(io.stdout, g.color);
        const pending = s.pending.added + s.pending.modified + s.pending.deleted;
        const langs = Object.entries(s.languages)
          .slice(0, 8)
          .map(([l, n]) => `${l} ${n}`)
          .join(', ');
        const lines = [
          `${c.bold('repository')} ${s.repo}`,
          `${c.bold('root')}       ${s.root}`,
          `${c.bold('index')}      ${s.index}${s.bytes !== undefined ? ` (${formatBytes(s.bytes)})` : ''}`,
          `${c.bold('files')}      ${s.files} (${s.skippedFiles} without chunks)`,
          `${c.bold('chunks')}     ${s.chunks}`,
          `${c.bold('symbols')}    ${s.symbols}`,
          `${c.bold('languages')}  ${langs || '-'}`,
          `${c.bold('updated')}    ${s.lastIndexedAt ?? 'never'}`,
          `${c.bold('vectors')}    ${
            s.embedding.embedder
              ? `${s.embedding.coarse}/${s.embedding.files} files (phase 1), ${s.embedding.refined}/${s.embedding.files} refined (phase 2), ` +
                `${s.embedding.chunkVectors} chunk vectors${
                  s.embedding.refined === s.embedding.files && s.embedding.chunkVectors < s.chunks
                    ? ` (data files: their first ${DATA_CHUNK_VECTORS} chunks)`
                    : ''
                } · ${s.embedding.embedder.id}`
              : 'none (lexical only)'
          }`,
          `${c.bold('pending')}    ${
            pending === 0
              ? c.green('up to date')
              : c.yellow(
                  `${s.pending.added} new, ${s.pending.modified} modified, ${s.pending.deleted} deleted`,
                ) + ' (run `quarry index`)'
          }`,
          `${c.bold('indexer')}    ${
            s.run.state === 'running'
              ? `running (pid ${s.run.pid})`
              : s.run.state === 'interrupted'
                ? c.yellow('last run interrupted (run `quarry index` to resume)')
                : 'idle'
          }`,
        ];
        io.stdout.write(`${lines.join('\n')}\n`);
      } finally {
        await project.close();
      }
    });

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
    .action(async (words: string[], opts) => {
      const g = program.opts();
      const many = opts.allRepos || (g.repo?.length ?? 0) > 1;
      const names: string[] = many ? (opts.allRepos ? (await repoList(g)).map((r) => r.name) : g.repo) : [];
      // a hybrid search in a checkout that a running server keeps open goes to that server: its model is loaded
      // (loading ONNX again costs more than the search); if it does not answer, the search runs here
      const viaServer =
        !many && opts.server !== false && opts.mode !== 'lexical' && !g.remote && !g.store && !g.repo?.length
          ? await warmServerProject(g.root)
          : undefined;
      const project = viaServer ?? (await openAnyProject(many ? { ...g, repo: names.slice(0, 1) } : g));
      if (viaServer && g.verbose)
        io.stderr.write(
          `${colorsFor(io.stderr, g.color).dim(`asking the running server at ${viaServer.location}`)}\n`,
        );
      const opened: Project[] = [project];
      // the set of what this command opened: one search over it (several repositories interleaved), snippets and
      // file views redacted as on every face
      const set = openedSet(opened);
      try {
        const filter = {
          ...(opts.path
            ? {
                pathPrefixes: (opts.path as string[])
                  .map((p) => projectPath(project, p))
                  .map((p) => (p === '.' ? '' : p)),
              }
            : {}),
          ...(opts.lang ? { languages: opts.lang as string[] } : {}),
        };
        const searchOptions = {
          onNotice: (m: string) => io.stderr.write(`${colorsFor(io.stderr, g.color).yellow('note')}: ${m}\n`),
          ...(opts.topK ? { topK: opts.topK, topFiles: opts.topK } : {}),
          ...(opts.mode ? { mode: opts.mode as SearchMode } : {}),
          ...(Object.keys(filter).length ? { filter } : {}),
        };
        for (const name of names)
          if (name !== project.name) opened.push(await openAnyProject({ ...g, repo: [name] }));
        const res = await set.search(words.join(' '), { ...searchOptions, repos: names });
        const found = opts.files ? res.files.length : res.results.length;
        if (!found) exitCode = 1; // as grep and ripgrep: no match is not an error, and scripts can tell
        if (opts.json && opts.files) {
          // the file view of the contract: just the ranked files
          io.stdout.write(`${JSON.stringify({ query: res.query, mode: res.mode, files: res.files })}\n`);
          return;
        }
        if (opts.json) {
          const json = {
            query: res.query,
            mode: res.mode,
            results: res.results.map(resultJson),
            files: res.files,
          };
          io.stdout.write(`${JSON.stringify(json)}\n`);
          return;
        }
        const c = colorsFor(io.stdout, g.color);
        const terms = analyzeQuery(res.query).terms;
        const mark = (line: string) => highlightTerms(line, terms, (m) => c.bold(c.red(m)));
        if (opts.vimgrep) {
          for (const r of res.results) {
            const text = r.snippet.split('\n')[r.line - r.snippetLine] ?? '';
            io.stdout.write(`${r.repo ? `${r.repo}:` : ''}${r.path}:${r.line}:${r.column}:${text}\n`);
          }
          return;
        }
        if (opts.files) {
          if (!res.files.length) io.stderr.write(`${c.dim('no matches')}\n`);
          for (const f of res.files)
            io.stdout.write(
              `${c.dim(f.score.toFixed(3))}  ${f.repo ? c.magenta(`${f.repo}:`) : ''}${c.cyan(f.path)}\n`,
            );
          return;
        }
        if (!res.results.length) {
          io.stderr.write(`${c.dim('no matches')} — try other words, or check \`quarry status\`\n`);
          return;
        }
        for (const [i, r] of res.results.entries()) {
          const sym = r.symbol ? ` ${c.green(r.symbol)}${r.kind ? c.dim(` (${r.kind})`) : ''}` : '';
          io.stdout.write(
            `${c.dim(`${i + 1}.`)} ${r.repo ? c.magenta(`${r.repo}:`) : ''}${c.cyan(r.path)}${c.dim(':')}${c.yellow(`${r.startLine}-${r.endLine}`)}${sym} ${c.dim(r.score.toFixed(3))}\n`,
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
              `   ${n === r.line ? c.yellow(num) : c.dim(num)}${c.dim(n === r.line ? ':' : '│')} ${mark(line)}\n`,
            );
          }
        }
        if (g.verbose)
          io.stdout.write(c.dim(`${res.results.length} results in ${res.tookMs.toFixed(1)} ms\n`));
      } finally {
        await set.close();
      }
    });

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
    .action(async (file: string, opts) => {
      const g = program.opts();
      const modes = String(opts.mode)
        .split(',')
        .map((m) => m.trim())
        .filter(Boolean);
      for (const m of modes)
        if (!(SEARCH_MODES as readonly string[]).includes(m))
          throw new QuarryError('BAD_INPUT', `unknown mode "${m}": use lexical, dense or hybrid`);
      const queries = readQueries(file);
      const progress = new Progress(io.stderr, colorsFor(io.stderr, g.color), !opts.json);
      const result = await runEval(queries, {
        root: opts.root ?? g.root ?? process.cwd(),
        modes: modes as SearchMode[],
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
      if (opts.out) {
        for (const mode of result.modes) {
          const path =
            result.modes.length > 1 ? String(opts.out).replace(/(\.jsonl)?$/, `.${mode}.jsonl`) : opts.out;
          const lines = result.ranked
            .filter((r) => r.mode === mode)
            .map((r) => JSON.stringify({ id: r.id, ranked: r.ranked }));
          writeFileSync(path, `${lines.join('\n')}\n`);
        }
      }
      if (opts.json) {
        io.stdout.write(`${JSON.stringify(result.metrics, null, 2)}\n`);
        return;
      }
      const timing = result.modes
        .map((m) => `${m} ${(result.msPerQuery[m] ?? 0).toFixed(0)} ms/query`)
        .join(', ');
      io.stderr.write(
        `${timing}${opts.rerank ? `; re-ranking fell back to the fused order on ${result.rerankFallbacks} queries` : ''}\n`,
      );
      const c = colorsFor(io.stdout, g.color);
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
    });

  const model = program
    .command('model')
    .description('the local embedding model: what is installed, and installing it');
  model
    .command('status', { isDefault: true })
    .description('where the weights are and whether they check out')
    .option('--json', 'print as JSON')
    .action(async (opts) => {
      const g = program.opts();
      const config = resolveConfig({ ...(g.root ? { root: g.root } : {}) });
      const path = findWeights({ modelDir: config.embed.modelDir });
      const info = path ? await verifiedWeights(path) : undefined;
      const status = {
        provider: config.embed.provider,
        model: 'all-MiniLM-L6-v2',
        weights: info ?? null,
        cache: cacheModelDir(),
        tokenizer: bundledModelDir(),
      };
      if (opts.json) {
        io.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
        return;
      }
      const c = colorsFor(io.stdout, g.color);
      io.stdout.write(
        info
          ? `${c.green('installed')} all-MiniLM-L6-v2 (${info.variant}) at ${info.path}\n  sha256 ${info.sha256}\n  from ${info.source}\n`
          : `${c.yellow('not installed')}: no weights in ${config.embed.modelDir ?? cacheModelDir()}; run \`quarry model install <model.onnx>\`` +
              `${config.embed.download ? ' (or quarry downloads them at the next index run)' : ''}\n`,
      );
    });
  model
    .command('install')
    .description(
      'install weights from a local .onnx file or a folder holding one (checked against pinned hashes)',
    )
    .argument('<path>', 'model.onnx, or a folder with model.onnx or onnx/model_quantized.onnx')
    .action(async (path: string) => {
      const info = await installWeights(path);
      io.stdout.write(`installed all-MiniLM-L6-v2 (${info.variant}) at ${info.path}\n`);
    });

  const cli = {
    io,
    colors: (stream: NodeJS.WriteStream) => colorsFor(stream, program.opts().color),
    positiveInt,
    globals: () => program.opts(),
  };
  registerAnswerCommands(program, cli);
  registerEditCommands(program, cli);
  registerChatCommand(program, cli);
  registerServeCommands(program, cli);
  registerTeamCommands(program, cli);
  registerToolCommands(program, cli);

  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander already printed its message (unknown option, missing argument, --help, --version)
      return err.exitCode === 0 ? 0 : 2;
    }
    const verbose = program.opts().verbose;
    const c = colorsFor(io.stderr, program.opts().color);
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
}
