import { existsSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { type Command, Option } from 'commander';
import type pc from 'picocolors';
import type { Packing } from '../config/config.ts';
import type { AssembledContext } from '../context/assemble.ts';
import { QuarryError } from '../errors.ts';
import { type LocalProject, openProject, type Project } from '../project/local.ts';
import { SEARCH_MODES, type SearchMode } from '../search/search.ts';
import { storeTarget, storeTraits } from '../store/open.ts';
import type { RepoInfo } from '../store/types.ts';
import { findProjectRoot } from '../workspace/root.ts';

/**
 * Heavy modules (the AI SDK, the tokenizer's tables, tree-sitter) load when a command needs them, not every time
 * quarry starts: `quarry search` stays a fast process.
 */
const lazy = {
  ask: () => import('../answer/ask.ts'),
  edit: () => import('../answer/edit.ts'),
  router: () => import('../answer/router.ts'),
};

export interface CliContext {
  io: { stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream };
  colors(stream: NodeJS.WriteStream): ReturnType<typeof pc.createColors>;
  positiveInt(value: string): number;
  /** Global options (--root, --remote, --repo, --verbose, --color). */
  globals(): { root?: string; remote?: string; repo?: string[]; verbose?: boolean };
}

/**
 * A path as the user typed it, as the index names it (root-relative, POSIX): absolute, relative to where the command
 * runs, or already root-relative all work. A path outside the project is a one-line error.
 */
export function projectPath(project: Project, typed: string, cwd = process.cwd()): string {
  const local = (project as Partial<LocalProject>).root;
  // a remote or store-only project has no folder here: a checkout of it around cwd tells where its root is
  const root = local && !project.remote && project.location === local ? local : findProjectRoot(cwd);
  const clean = typed.replace(/\\/g, '/');
  if (root) {
    const abs = resolve(cwd, clean);
    const rel = relative(root, abs).split(sep).join('/');
    const inside = rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
    if (isAbsolute(clean)) {
      if (!inside)
        throw new QuarryError(
          'BAD_INPUT',
          `${typed} is outside the project (${root}): give a path inside it`,
        );
      return rel || '.';
    }
    // from here when that names something here; else as given, from the root
    if (inside && existsSync(abs)) return rel || '.';
  }
  return clean.replace(/^\.\//, '').replace(/\/+$/, '') || '.';
}

/** The remote quarry the command talks to (`--remote`, else `QUARRY_REMOTE`), if any. */
export function remoteOf(g: { remote?: string }): string | undefined {
  return g.remote ?? (process.env.QUARRY_REMOTE || undefined);
}

/**
 * The project a command reads: a remote quarry's repository (`--remote`), a repository of a shared store named with
 * `--repo` (read from the store), or the checkout here.
 */
export async function openAnyProject(g: ReturnType<CliContext['globals']>): Promise<Project> {
  const repos = g.repo ?? [];
  if (repos.length > 1)
    throw new QuarryError(
      'BAD_INPUT',
      'this command reads one repository: pass --repo once (search takes several)',
    );
  const remote = remoteOf(g);
  if (remote) {
    const { openRemoteProject } = await import('../project/remote.ts');
    return openRemoteProject({ url: remote, ...(repos[0] ? { repo: repos[0] } : {}) });
  }
  if (repos[0]) {
    // a named repository: through this checkout's settings when there is one (a store that keeps file text serves
    // it from there), else from the store alone
    const here = g.root ?? findProjectRoot(process.cwd());
    if (!here) return openProject({ repo: repos[0] });
    const project = await openProject({ root: here, overrides: { store: { repo: repos[0] } } });
    if (!storeTraits(storeTarget(project.config, here)).keyed && project.name !== repos[0]) {
      await project.close();
      throw new QuarryError(
        'BAD_INPUT',
        `a SQLite index holds one repository: pass --store postgres://… to open "${repos[0]}"`,
      );
    }
    return project;
  }
  return openProject({ ...(g.root ? { root: g.root } : {}) });
}

/** The repositories next to this one: the remote's, this checkout's store's, or the configured store's. */
export async function repoList(g: ReturnType<CliContext['globals']>): Promise<RepoInfo[]> {
  const remote = remoteOf(g);
  if (remote) {
    const { remoteRepos } = await import('../project/remote.ts');
    return remoteRepos(remote);
  }
  const here = g.root ?? findProjectRoot(process.cwd());
  if (here) {
    const project = await openProject({ root: here });
    try {
      return await project.repos();
    } finally {
      await project.close();
    }
  }
  const { openRegistry } = await import('../store/open.ts');
  const { resolveConfig } = await import('../config/config.ts');
  const registry = await openRegistry(resolveConfig({ root: process.cwd() }), process.cwd());
  if (!registry)
    throw new QuarryError(
      'NO_ROOT',
      `no quarry project in ${process.cwd()}: run this in one, or pass --store postgres://… or --remote URL`,
    );
  try {
    return await registry.list();
  } finally {
    await registry.close();
  }
}

export async function withProject<T>(
  g: ReturnType<CliContext['globals']>,
  fn: (p: Project) => Promise<T>,
): Promise<T> {
  const project = await openAnyProject(g);
  try {
    return await fn(project);
  } finally {
    await project.close();
  }
}

/** For commands that change files here (edit, undo, history): the checkout, never a remote. */
export async function withLocalProject<T>(
  g: ReturnType<CliContext['globals']>,
  fn: (p: LocalProject) => Promise<T>,
): Promise<T> {
  if (remoteOf(g))
    throw new QuarryError('BAD_INPUT', 'edits change files here: run this in the checkout, without --remote');
  const project = await openProject({ ...(g.root ? { root: g.root } : {}) });
  try {
    return await fn(project);
  } finally {
    await project.close();
  }
}

/** `[n] path:start-end  (tokens, why)` for each block sent. */
export function formatSources(ctx: AssembledContext): string {
  const lines = ctx.blocks.map(
    (b) =>
      `[${b.n}] ${b.path}:${b.startLine}-${b.endLine}  ${b.tokens} tokens${b.reason === 'retrieved' ? '' : `, ${b.reason}`}${b.truncated ? ', cut at its share' : ''}`,
  );
  if (ctx.map) lines.push(`map: ${ctx.map.entries.length} files, ${ctx.map.tokens} tokens`);
  lines.push(
    `total: ${ctx.tokens.prompt} prompt tokens: ${ctx.tokens.blocks} code + ${ctx.tokens.map} map within a ${ctx.budget.hard}-token context budget, ${ctx.packing} packing`,
  );
  if (ctx.skipped.length)
    lines.push(
      `did not fit: ${ctx.skipped.length} (${ctx.skipped
        .slice(0, 3)
        .map((s) => s.path)
        .join(', ')}${ctx.skipped.length > 3 ? ', …' : ''})`,
    );
  return `${lines.join('\n')}\n`;
}

function contextOptions(opts: Record<string, unknown>) {
  return {
    ...(opts.topK ? { topK: opts.topK as number } : {}),
    ...(opts.budget ? { budget: opts.budget as number } : {}),
    ...(opts.mode ? { mode: opts.mode as SearchMode } : {}),
    ...(opts.packing ? { packing: opts.packing as Packing } : {}),
    ...(opts.all !== undefined ? { all: opts.all as boolean | string } : {}),
    ...(opts.map === false ? { noMap: true } : {}),
    ...(opts.model ? { model: opts.model as string } : {}),
  };
}

export function registerAnswerCommands(program: Command, cli: CliContext): void {
  const { io } = cli;
  program
    .command('ask')
    .description('answer a question about the code from retrieved context (streams, with citations)')
    .argument('<question...>', 'the question')
    .option(
      '--model <provider:name>',
      'the model (ollama:qwen2.5-coder, openai:gpt-4o-mini, gguf:/path/model.gguf, …)',
    )
    .option('-k, --top-k <n>', 'chunks (or files) retrieval offers', cli.positiveInt)
    .option(
      '--budget <tokens>',
      'tokens of context (default: from the model’s window, at most 32k)',
      cli.positiveInt,
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
    .action(async (words: string[], opts) => {
      const { ask } = await lazy.ask();
      const g = cli.globals();
      const question = words.join(' ');
      await withProject(g, async (project) => {
        const c = cli.colors(io.stdout);
        const e = cli.colors(io.stderr);
        if (opts.dryRun) {
          const ctx = await project.context(question, contextOptions(opts));
          if (opts.json) {
            io.stdout.write(
              `${JSON.stringify({ system: ctx.system, user: ctx.user, tokens: ctx.tokens, budget: ctx.budget, sources: sources(ctx) })}\n`,
            );
            return;
          }
          io.stdout.write(
            `${c.dim('--- system ---')}\n${ctx.system}\n${c.dim('--- user ---')}\n${ctx.user}\n`,
          );
          io.stdout.write(
            c.dim(
              `--- ${ctx.tokens.prompt} prompt tokens (${ctx.blocks.length} blocks, budget ${ctx.budget.hard}) ---\n`,
            ),
          );
          if (opts.showSources) io.stdout.write(formatSources(ctx));
          return;
        }
        const res = await ask(project, question, contextOptions(opts));
        if (res.routed) {
          if (opts.json) io.stdout.write(`${JSON.stringify({ routed: res.routed })}\n`);
          else io.stdout.write(`${res.routed.text}\n${c.dim('(answered from the symbol index)')}\n`);
          return;
        }
        if (res.fallback) io.stderr.write(`${e.yellow('note')}: ${res.fallback}\n`);
        if (res.note) io.stderr.write(`${e.yellow('note')}: ${res.note}\n`);
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
          if (!opts.json) io.stdout.write(piece);
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
    });

  program
    .command('symbols')
    .description('list the definitions of a file (and, with --variables, its top-level variables)')
    .argument('<file>', 'a path as indexed (src/api.ts)')
    .option('--variables', 'top-level variables and constants instead')
    .option('--json', 'print JSON')
    .action(async (file: string, opts) => {
      const { formatSymbols } = await lazy.router();
      await withProject(cli.globals(), async (project) => {
        const outline = await project.outline(projectPath(project, file));
        const path = outline.path;
        if (opts.variables) {
          const vars = outline.variables;
          if (opts.json) io.stdout.write(`${JSON.stringify({ path, variables: vars })}\n`);
          else
            io.stdout.write(`${path}\n${vars.map((v) => `  ${v.line}  ${v.kind} ${v.name}`).join('\n')}\n`);
          return;
        }
        const symbols = outline.symbols;
        if (opts.json) io.stdout.write(`${JSON.stringify({ path, symbols })}\n`);
        else io.stdout.write(`${formatSymbols(path, symbols)}\n`);
      });
    });

  program
    .command('def')
    .description('where a name is defined')
    .argument('<name>', 'a symbol (parseConfig, Indexer.run)')
    .option('--json', 'print JSON')
    .action(async (name: string, opts) => {
      const { formatDefinitions } = await lazy.router();
      await withProject(cli.globals(), async (project) => {
        const defs = await project.definitions(name);
        if (opts.json) io.stdout.write(`${JSON.stringify({ name, definitions: defs })}\n`);
        else if (!defs.length)
          io.stdout.write(`no definition named ${name} — try \`quarry search ${name}\`\n`);
        else io.stdout.write(`${formatDefinitions(name, defs)}\n`);
      });
    });

  program
    .command('refs')
    .description('where a name is used (identifier occurrences)')
    .argument('<name>', 'a symbol (parseConfig, Indexer.run)')
    .option('--json', 'print JSON')
    .action(async (name: string, opts) => {
      const { formatReferences } = await lazy.router();
      await withProject(cli.globals(), async (project) => {
        const refs = await project.references(name);
        if (opts.json) io.stdout.write(`${JSON.stringify({ name, references: refs })}\n`);
        else if (!refs.length) io.stdout.write(`nothing in the index uses ${name}\n`);
        else io.stdout.write(`${formatReferences(name, refs)}\n`);
      });
    });

  program
    .command('map')
    .description('the repository map: files and their most-used definitions, ranked by references (PageRank)')
    .option('--tokens <n>', 'token budget', cli.positiveInt, 2048)
    .option('--focus <file...>', 'lean the ranking towards these files')
    .option('--json', 'print JSON')
    .action(async (opts) => {
      await withProject(cli.globals(), async (project) => {
        const map = await project.repoMap({
          budget: opts.tokens,
          ...(opts.focus ? { focus: opts.focus } : {}),
        });
        if (opts.json) io.stdout.write(`${JSON.stringify(map)}\n`);
        else {
          io.stdout.write(map.text || 'no definitions in the index\n');
          if (map.omitted)
            io.stdout.write(cli.colors(io.stdout).dim(`… ${map.omitted} more files (raise --tokens)\n`));
        }
      });
    });
}

export function registerEditCommands(program: Command, cli: CliContext): void {
  const { io } = cli;
  program
    .command('edit')
    .description('edit one file with the model: prints a diff; --write applies it (with a snapshot for undo)')
    .argument('<file>', 'the file to edit (absolute, from here, or from the project root)')
    .argument('<instruction...>', 'what to change')
    .option('--model <provider:name>', 'the model')
    .option('--budget <tokens>', 'tokens of related context', cli.positiveInt)
    .option('--write', 'replace the file (atomically, after saving a snapshot)')
    .option('--force', 'write even when the file has uncommitted changes')
    .action(async (file: string, words: string[], opts) => {
      const { applyEdit, proposeEdit } = await lazy.edit();
      await withLocalProject(cli.globals(), async (project) => {
        const instruction = words.join(' ');
        const edit = await proposeEdit(project, projectPath(project, file), instruction, {
          ...(opts.model ? { model: opts.model } : {}),
          ...(opts.budget ? { budget: opts.budget } : {}),
        });
        const c = cli.colors(io.stdout);
        if (!edit.changed) {
          io.stdout.write(`${edit.path}: the model changed nothing\n`);
          return;
        }
        io.stdout.write(colorDiff(edit.diff, c));
        if (!opts.write) {
          io.stdout.write(c.dim(`(not written: run again with --write to apply)\n`));
          return;
        }
        const { snapshot, dirty } = applyEdit(project, edit, instruction, { force: opts.force });
        io.stdout.write(
          `wrote ${edit.path}; snapshot ${snapshot.id}${dirty ? ' (it keeps your uncommitted changes)' : ''} — \`quarry undo\` restores it\n`,
        );
      });
    });

  program
    .command('undo')
    .description('restore the last file quarry edited (or the last edit of <file>) byte for byte')
    .argument('[file]', 'only edits of this file')
    .option('--force', 'restore even if the file changed after the edit (those changes are saved first)')
    .action(async (file: string | undefined, opts) => {
      const { undoEdit } = await lazy.edit();
      await withLocalProject(cli.globals(), async (project) => {
        const snap = undoEdit(project, file === undefined ? undefined : projectPath(project, file), {
          force: opts.force,
        });
        io.stdout.write(`restored ${snap.path} as it was before "${snap.instruction}" (${snap.time})\n`);
      });
    });

  program
    .command('history')
    .description('the edits quarry made, newest first')
    .option('--json', 'print JSON')
    .action(async (opts) => {
      const { listHistory } = await lazy.edit();
      await withLocalProject(cli.globals(), async (project) => {
        const h = listHistory(project);
        if (opts.json) {
          io.stdout.write(`${JSON.stringify(h)}\n`);
          return;
        }
        if (!h.length) io.stdout.write('no edits yet\n');
        const c = cli.colors(io.stdout);
        for (const s of h)
          io.stdout.write(
            `${c.dim(s.time)}  ${s.id}  ${c.cyan(s.path)}  ${s.instruction}${s.undone ? c.dim(' (undone)') : ''}\n`,
          );
      });
    });
}

export function colorDiff(diff: string, c: ReturnType<typeof pc.createColors>): string {
  return `${diff
    .split('\n')
    .map((l) =>
      l.startsWith('+++') || l.startsWith('---')
        ? c.bold(l)
        : l.startsWith('+')
          ? c.green(l)
          : l.startsWith('-')
            ? c.red(l)
            : l.startsWith('@@')
              ? c.cyan(l)
              : l,
    )
    .join('\n')
    .replace(/\n*$/, '')}\n`;
}

export function sources(ctx: AssembledContext) {
  return ctx.blocks.map(({ n, path, startLine, endLine, tokens, reason }) => ({
    n,
    path,
    startLine,
    endLine,
    tokens,
    reason,
  }));
}

export function registerChatCommand(program: Command, cli: CliContext): void {
  program
    .command('chat')
    .description(
      'a terminal chat over the code: ask, /edit with /undo, !commands; the index follows your saves meanwhile',
    )
    .option('--model <provider:name>', 'the model')
    .option('--no-index', 'do not keep the index fresh (no watcher, no background embedding)')
    .action(async (opts) => {
      const { runChat } = await import('./chat.ts');
      await runChat(cli, { ...(opts.model ? { model: opts.model } : {}), index: opts.index });
    });
}
