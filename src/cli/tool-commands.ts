import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Command } from 'commander';
import { DEFAULT_CONFIG, type QuarryConfig, resolveConfig } from '../config/config.ts';
import {
  bundledModelDir,
  cacheModelDir,
  findWeights,
  sha256File,
  verifyWeights,
  weightsFileIn,
} from '../embed/models.ts';
import { pinnedSha256, presetDir, presetFor } from '../embed/presets.ts';
import { QuarryError } from '../errors.ts';
import { contentVerdict } from '../indexing/process-file.ts';
import { openProject } from '../project/local.ts';
import { deleteIndex, storeTarget, storeTraits } from '../store/open.ts';
import { findProjectRoot, indexPaths } from '../workspace/root.ts';
import { SKIP_REASONS, type WalkIgnore, type WalkSkip, walk } from '../workspace/walk.ts';
import type { CliContext } from './answer-commands.ts';

/** The root a command that needs no index works on: --root, else the project above cwd, else refused. */
function projectRootOf(cli: CliContext): string {
  const given = cli.globals().root;
  const root = given ?? findProjectRoot(process.cwd());
  if (!root)
    throw new QuarryError(
      'NO_ROOT',
      `no quarry project or git repository above ${process.cwd()}: run this in one, or pass --root DIR`,
    );
  return root;
}

interface FileVerdict {
  path: string;
  status: 'index' | 'no-chunks' | 'skip' | 'ignore';
  reason: string;
}

export function listFiles(root: string, config: QuarryConfig, content: boolean): FileVerdict[] {
  const ignored: WalkIgnore[] = [];
  const { files, skipped } = walk(root, config, { onIgnore: (i) => ignored.push(i) });
  const out: FileVerdict[] = [];
  for (const f of files) {
    let verdict: FileVerdict = { path: f.path, status: 'index', reason: '' };
    if (content) {
      try {
        // the walk kept only files within the size limit: read each whole, as the indexer does
        const v = contentVerdict(readFileSync(join(root, f.path)), config);
        if (v.skip)
          verdict = {
            path: f.path,
            status: 'no-chunks',
            reason:
              v.skip === 'secret'
                ? 'holds a private key (--include-secrets to index it)'
                : `${v.skip}: recorded by name, no chunks`,
          };
      } catch (err) {
        verdict = {
          path: f.path,
          status: 'skip',
          reason: `cannot be read (${(err as NodeJS.ErrnoException).code})`,
        };
      }
    }
    out.push(verdict);
  }
  for (const s of skipped as WalkSkip[])
    out.push({
      path: s.path,
      status: 'skip',
      reason: `${SKIP_REASONS[s.reason]}${s.detail ? ` (${s.detail})` : ''}`,
    });
  for (const i of ignored)
    out.push({ path: i.dir ? `${i.path}/` : i.path, status: 'ignore', reason: `by ${i.rule}` });
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

interface Check {
  name: string;
  ok: boolean | 'warn';
  detail: string;
}

async function timed<T>(what: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      what,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer in ${ms / 1000} s`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Everything `quarry doctor` looks at, each a line: what works, what does not, and what to do. */
export async function runDoctor(root: string | undefined): Promise<Check[]> {
  const checks: Check[] = [];
  const add = (name: string, ok: boolean | 'warn', detail: string) => checks.push({ name, ok, detail });
  const attempt = async (name: string, fn: () => Promise<string> | string, fix: string) => {
    try {
      add(name, true, await fn());
    } catch (err) {
      add(name, false, `${(err as Error).message.split('\n')[0]} — ${fix}`);
    }
  };
  const require = createRequire(import.meta.url);
  const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
  add(
    'node',
    major > 20 || (major === 20 && minor >= 11),
    `${process.version}${major > 20 || (major === 20 && minor >= 11) ? '' : ' — quarry needs Node 20.11 or newer'}`,
  );
  await attempt(
    'better-sqlite3',
    async () => {
      const { default: Database } = await import('better-sqlite3');
      const db = new Database(':memory:');
      const v = (db.prepare('select sqlite_version() v').get() as { v: string }).v;
      const { load } = await import('sqlite-vec');
      load(db);
      const vec = (db.prepare('select vec_version() v').get() as { v: string }).v;
      db.close();
      return `SQLite ${v}, sqlite-vec ${vec}, FTS5`;
    },
    'reinstall quarry (better-sqlite3 compiles from source and needs Node headers: npm_config_nodedir)',
  );
  await attempt(
    'onnxruntime-node',
    async () => {
      const ort = await import('onnxruntime-node');
      const pkg = require('onnxruntime-node/package.json') as { version: string };
      const bin = join(
        require.resolve('onnxruntime-node/package.json'),
        '..',
        'bin',
        'napi-v6',
        process.platform,
        process.arch,
      );
      const cuda = join(bin, 'libonnxruntime_providers_cuda.so');
      const gpu =
        existsSync(cuda) && statSync(cuda).size > 0
          ? 'CUDA files installed'
          : 'CPU (GPU files not installed)';
      return `${pkg.version} (${Object.keys(ort).includes('InferenceSession') ? 'loads' : 'incomplete'}), ${gpu}`;
    },
    'reinstall quarry',
  );
  await attempt(
    'tree-sitter grammars',
    async () => {
      const { chunkFile } = await import('../chunk/chunker.ts');
      const r = await chunkFile(
        'export function probe(a: number) {\n  return a;\n}\n',
        'typescript',
        DEFAULT_CONFIG.chunk,
      );
      if (!r.chunks.some((c) => c.symbol === 'probe'))
        throw new Error('the TypeScript grammar found no function');
      const wasms = join(require.resolve('tree-sitter-wasms/package.json'), '..', 'out');
      return `web-tree-sitter loads grammars from ${wasms}`;
    },
    'reinstall quarry (web-tree-sitter must be 0.25.10 for tree-sitter-wasms 0.1.13)',
  );
  const tokenizer = join(bundledModelDir(), 'tokenizer.json');
  add(
    'tokenizer',
    existsSync(tokenizer),
    existsSync(tokenizer) ? tokenizer : `${tokenizer} is missing — reinstall quarry`,
  );
  const config = resolveConfig(root ? { root } : {});
  const preset = presetFor(config.embed.model);
  if (preset && preset.runtime === 'onnx' && config.embed.provider !== 'none') {
    const dir = config.embed.modelDir ?? presetDir(preset);
    const file = weightsFileIn(dir);
    if (!file)
      add(
        'model weights',
        'warn',
        `${preset.name}: none in ${dir}: ${preset.download ? (config.embed.download ? 'the next `quarry index` downloads them' : 'allow the download (unset QUARRY_OFFLINE)') : preset.note}`,
      );
    else
      await attempt(
        'model weights',
        async () => {
          const sha256 = await sha256File(file);
          const pinned = pinnedSha256(preset, dir);
          if (pinned && pinned !== sha256)
            throw new Error(`${file} has sha256 ${sha256.slice(0, 12)}…, pinned ${pinned.slice(0, 12)}…`);
          return `${preset.name} (${preset.model}) at ${file}, sha256 ${sha256.slice(0, 12)}…${pinned ? ' (pinned)' : ' (your own export: not pinned)'}`;
        },
        `delete ${dir} and let \`quarry index\` download it again`,
      );
  } else if (config.embed.provider === 'local' || config.embed.provider === 'static') {
    const weights = findWeights({ modelDir: config.embed.modelDir });
    if (!weights)
      add(
        'model weights',
        'warn',
        `none in ${config.embed.modelDir ?? cacheModelDir()}: semantic search is off until \`quarry model install <model.onnx>\`${config.embed.download ? ' or the next `quarry index` downloads them' : ''}`,
      );
    else
      await attempt(
        'model weights',
        async () => {
          const info = await verifyWeights(weights);
          return `all-MiniLM-L6-v2 ${info.variant} at ${info.path}, sha256 ${info.sha256.slice(0, 12)}… (pinned)`;
        },
        'install known weights with `quarry model install <model.onnx>`',
      );
  } else if (config.embed.provider === 'none')
    add('embeddings', 'warn', 'off (embed.provider = "none"): lexical search only');
  else
    add(
      'embeddings',
      true,
      `${config.embed.provider}${config.embed.model ? `:${config.embed.model}` : ''}${config.embed.baseUrl ? ` at ${config.embed.baseUrl}` : ''}`,
    );

  if (!root) add('project', 'warn', `no project at or above ${process.cwd()}: run \`quarry index\` in one`);
  else {
    const target = storeTarget(config, root);
    await attempt(
      'index',
      async () => {
        const traits = storeTraits(target);
        if (traits.file && !existsSync(traits.file)) return `none yet in ${root} (run \`quarry index\`)`;
        const project = await timed(openProject({ root }), 10_000);
        try {
          const s = await project.store.stats();
          // the driver's own consistency check (SQLite's integrity check, FTS5's, and quarry's invariants)
          const problems = await timed(project.store.check(), 120_000);
          if (problems.length)
            throw new Error(
              `${problems.length} problem${problems.length === 1 ? '' : 's'} in the index: ${problems.slice(0, 3).join('; ')}`,
            );
          return `${target.driver} ${project.location === root ? indexPaths(root).db : project.store.location}: ${s.files} files, ${s.chunks} chunks, consistent`;
        } finally {
          await project.close();
        }
      },
      storeTraits(target).file
        ? 'run `quarry reset` and index again'
        : 'check the store URL and that its server runs',
    );
  }
  const llm = config.llm;
  if (!llm.model)
    add('model server', 'warn', 'no model configured: ask and chat need --model or QUARRY_MODEL');
  else {
    const { modelServerUrl } = await import('../llm/provider.ts');
    const url = modelServerUrl(llm);
    if (!url) add('model server', true, `${llm.model} (not checked: a cloud or in-process model)`);
    else
      await attempt(
        'model server',
        async () => {
          const res = await timed(fetch(url), 3000);
          return `${llm.model} at ${url} answers (HTTP ${res.status})`;
        },
        `start the model server, or set llm.base_url (it answered nothing at ${url})`,
      );
  }
  return checks;
}

export function registerToolCommands(program: Command, cli: CliContext): void {
  const { io } = cli;

  program
    .command('files')
    .description('what `quarry index` would index, skip and ignore here, and why')
    .option('--all', 'every path with its verdict (index, no chunks, skip, ignore) and the reason')
    .option('--skipped', 'only what is skipped or kept without chunks, with the reason')
    .option('--ignored', 'only what an ignore rule leaves out, with the rule file')
    .option('--json', 'print as JSON')
    .action((opts) => {
      const root = projectRootOf(cli);
      const config = resolveConfig({ root });
      const detail = Boolean(opts.all || opts.skipped || opts.json);
      const rows = listFiles(root, config, detail).filter((r) =>
        opts.all || opts.json
          ? true
          : opts.skipped
            ? r.status === 'skip' || r.status === 'no-chunks'
            : opts.ignored
              ? r.status === 'ignore'
              : r.status === 'index',
      );
      if (opts.json) {
        const pick = (s: FileVerdict['status']) => rows.filter((r) => r.status === s);
        io.stdout.write(
          `${JSON.stringify({
            root,
            indexed: pick('index').map((r) => r.path),
            withoutChunks: pick('no-chunks').map(({ path, reason }) => ({ path, reason })),
            skipped: pick('skip').map(({ path, reason }) => ({ path, reason })),
            ignored: pick('ignore').map(({ path, reason }) => ({ path, reason })),
          })}\n`,
        );
        return;
      }
      const c = cli.colors(io.stdout);
      if (!opts.all && !opts.skipped && !opts.ignored) {
        for (const r of rows) io.stdout.write(`${r.path}\n`);
        return;
      }
      const label: Record<FileVerdict['status'], string> = {
        index: c.green('index    '),
        'no-chunks': c.yellow('no chunks'),
        skip: c.yellow('skip     '),
        ignore: c.dim('ignore   '),
      };
      for (const r of rows)
        io.stdout.write(`${label[r.status]} ${r.path}${r.reason ? `  ${c.dim(r.reason)}` : ''}\n`);
    });

  program
    .command('doctor')
    .description(
      'check this install and this project: Node, native modules, grammars, weights, store, model server',
    )
    .option('--json', 'print as JSON')
    .action(async (opts) => {
      const root = cli.globals().root ?? findProjectRoot(process.cwd());
      const checks = await runDoctor(root);
      const failed = checks.filter((k) => k.ok === false).length;
      if (opts.json) io.stdout.write(`${JSON.stringify({ ok: failed === 0, checks })}\n`);
      else {
        const c = cli.colors(io.stdout);
        for (const k of checks) {
          const mark = k.ok === true ? c.green('ok  ') : k.ok === 'warn' ? c.yellow('note') : c.red('FAIL');
          io.stdout.write(`${mark} ${k.name.padEnd(20)} ${k.detail}\n`);
        }
        io.stdout.write(
          failed ? c.red(`${failed} check${failed === 1 ? '' : 's'} failed\n`) : c.green('all good\n'),
        );
      }
      if (failed) throw new DoctorFailed();
    });

  program
    .command('reset')
    .description("delete this project's index (the next `quarry index` builds it from scratch)")
    .option('--yes', 'do not ask (needed when not on a terminal)')
    .action(async (opts) => {
      const root = projectRootOf(cli);
      const config = resolveConfig({ root });
      const target = storeTarget(config, root);
      const { where, resetNote } = storeTraits(target);
      if (!opts.yes) {
        if (!process.stdin.isTTY)
          throw new QuarryError('BAD_INPUT', `reset deletes the index of ${root}: pass --yes to confirm`);
        const { createInterface } = await import('node:readline/promises');
        const rl = createInterface({ input: process.stdin, output: io.stderr });
        const answer = await rl.question(`delete the index ${where}? [y/N] `);
        rl.close();
        if (!/^y(es)?$/i.test(answer.trim())) {
          io.stdout.write('kept\n');
          return;
        }
      }
      let project: Awaited<ReturnType<typeof openProject>>;
      try {
        project = await openProject({ root });
      } catch (err) {
        if (err instanceof QuarryError && err.code === 'NO_INDEX') {
          io.stdout.write(`no index in ${root}: nothing to reset\n`);
          return;
        }
        throw err;
      }
      // one writer at a time: a running index, watcher or server keeps its index (exit 4, naming it)
      const lock = await project.store.acquireWriter().catch(async (err) => {
        await project.close();
        throw err;
      });
      try {
        await deleteIndex(target, project.store, root);
      } finally {
        lock.release();
      }
      io.stdout.write(`deleted the index ${where}${resetNote}; run \`quarry index\` to build it again\n`);
    });

  program
    .command('schema')
    .description(
      "the JSON Schema of quarry.toml, for editors (Even Better TOML: '#:schema ./quarry.schema.json')",
    )
    .action(async () => {
      const { settingsJsonSchema } = await import('../config/schema.ts');
      io.stdout.write(`${JSON.stringify(settingsJsonSchema(), null, 2)}\n`);
    });

  program
    .command('completion')
    .description('print a shell completion script: eval "$(quarry completion bash)" (or zsh, fish)')
    .argument('[shell]', 'bash, zsh or fish', 'bash')
    .action((shell: string) => {
      io.stdout.write(completionScript(program, shell));
    });
}

/** `quarry doctor` found a failure: its lines said what; the exit code says so to scripts. */
export class DoctorFailed extends QuarryError {
  constructor() {
    super('IO', 'doctor found problems (see above)');
  }
}

/** Completion scripts built from the command tree, so they never fall behind the commands. */
export function completionScript(program: Command, shell: string): string {
  const commands = program.commands.filter((c) => c.name() !== 'help');
  const globals = program.options.map((o) => o.long).filter(Boolean) as string[];
  const optsOf = (c: Command) => [
    ...(c.options.map((o) => o.long).filter(Boolean) as string[]),
    ...globals,
    '--help',
  ];
  const names = commands.map((c) => c.name());
  switch (shell) {
    case 'bash': {
      const cases = commands
        .map((c) => {
          const subs = c.commands.map((s) => s.name()).join(' ');
          return `    ${c.name()}) words="${[subs, ...optsOf(c)].filter(Boolean).join(' ')}" ;;`;
        })
        .join('\n');
      return `# quarry completion for bash: eval "$(quarry completion bash)" in ~/.bashrc
_quarry() {
  local cur=\${COMP_WORDS[COMP_CWORD]} cmd=\${COMP_WORDS[1]} words
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${names.join(' ')} ${globals.join(' ')} --help" -- "$cur"))
    return
  fi
  case "$cmd" in
${cases}
    *) words="${globals.join(' ')}" ;;
  esac
  if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$words" -- "$cur"));
  else COMPREPLY=($(compgen -W "$words" -- "$cur") $(compgen -f -- "$cur")); fi
}
complete -o filenames -F _quarry quarry
`;
    }
    case 'zsh': {
      const described = commands
        .map(
          (c) =>
            `    '${c.name()}:${c.description().replace(/'/g, "'\\''").replace(/:/g, '\\:').slice(0, 70)}'`,
        )
        .join('\n');
      const cases = commands
        .map(
          (c) =>
            `    ${c.name()}) _values 'option' ${optsOf(c)
              .map((o) => `'${o}'`)
              .join(' ')} ;;`,
        )
        .join('\n');
      return `#compdef quarry
# quarry completion for zsh: eval "$(quarry completion zsh)" in ~/.zshrc (after compinit)
_quarry() {
  local -a commands
  commands=(
${described}
  )
  if (( CURRENT == 2 )); then _describe 'command' commands; return; fi
  case "$words[2]" in
${cases}
  esac
  _files
}
compdef _quarry quarry
`;
    }
    case 'fish': {
      const lines = [
        `# quarry completion for fish: quarry completion fish > ~/.config/fish/completions/quarry.fish`,
        'complete -c quarry -f',
      ];
      for (const c of commands) {
        lines.push(
          `complete -c quarry -n __fish_use_subcommand -a ${c.name()} -d '${c.description().replace(/'/g, "\\'").slice(0, 70)}'`,
        );
        for (const o of c.options)
          if (o.long)
            lines.push(
              `complete -c quarry -n '__fish_seen_subcommand_from ${c.name()}' -l ${o.long.slice(2)} -d '${o.description.replace(/'/g, "\\'").slice(0, 60)}'`,
            );
      }
      for (const o of program.options)
        if (o.long)
          lines.push(
            `complete -c quarry -l ${o.long.slice(2)} -d '${o.description.replace(/'/g, "\\'").slice(0, 60)}'`,
          );
      return `${lines.join('\n')}\n`;
    }
    default:
      throw new QuarryError('BAD_INPUT', `no completion for "${shell}": use bash, zsh or fish`);
  }
}
