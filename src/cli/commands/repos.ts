import type { Command } from 'commander';
import { QuarryError } from '../../errors.ts';
import { openRepoRegistry } from '../../host/admin.ts';
import { projectRootFor } from '../../host/checkout.ts';
import type { CliContext } from '../context.ts';
import { remoteOf, repoList } from '../open.ts';
import { formatBytes } from '../progress.ts';

export function registerRepos(program: Command, cli: CliContext): void {
  const repos = program
    .command('repos')
    .description(
      'the repositories in the store (a shared PostgreSQL holds many): size, last update, embedder, commit',
    )
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => runRepos(cli, opts));
  repos
    .command('rm')
    .description('remove a repository and every row of it from the shared store')
    .argument('<name>', 'the repository, as `quarry repos` lists it')
    .option('--wait', 'wait for a running `quarry index` of it instead of exiting (exit 4)')
    .action((name: string, opts: { wait?: boolean }) => runReposRm(cli, name, opts));
}

export async function runRepos(cli: CliContext, opts: { json?: boolean }): Promise<void> {
  const { io } = cli;
  const list = await repoList(cli.globals());
  if (opts.json) {
    io.stdout.write(`${JSON.stringify({ repos: list })}\n`);
    return;
  }
  const c = cli.colors(io.stdout);
  if (!list.length) {
    io.stdout.write(`${c.dim('no repositories yet')} — run \`quarry index --store …\` in a checkout\n`);
    return;
  }
  const width = Math.max(...list.map((r) => r.name.length));
  for (const r of list) {
    const git = r.git ? `${r.git.branch ?? 'detached'}@${(r.git.commit ?? '').slice(0, 12)}` : '-';
    io.stdout.write(
      `${c.cyan(r.name.padEnd(width))}  ${String(r.files).padStart(6)} files  ${String(r.chunks).padStart(7)} chunks  ${formatBytes(r.bytes).padStart(9)}  ${c.dim(r.lastIndexedAt?.slice(0, 19).replace('T', ' ') ?? 'never')}  ${r.embedder ?? c.dim('lexical only')}  ${c.dim(git)}\n`,
    );
  }
}

export async function runReposRm(
  cli: CliContext,
  name: string,
  opts: { wait?: boolean } = {},
): Promise<void> {
  if (remoteOf(cli.globals()))
    throw new QuarryError(
      'BAD_INPUT',
      'repositories are removed where the store is: run this with --store, not --remote',
    );
  const cwd = process.cwd();
  const root = projectRootFor(cli.globals().root, cwd) ?? cwd;
  const registry = await openRepoRegistry(root);
  if (!registry)
    throw new QuarryError(
      'BAD_INPUT',
      'this index holds one repository: delete its .quarry/ folder to remove it, or pass --store postgres://…',
    );
  try {
    if (!(await registry.remove(name, opts.wait ? { waitMs: 24 * 3600 * 1000 } : {})))
      throw new QuarryError(
        'NOT_FOUND',
        `no repository "${name}" in ${registry.location}: see \`quarry repos\``,
      );
    cli.io.stdout.write(`removed ${name} from ${registry.location}\n`);
  } finally {
    await registry.close();
  }
}
