import type { Command } from 'commander';
import { resolveConfig } from '../config/config.ts';
import { QuarryError } from '../errors.ts';
import { addToken, defaultTokensFile, readTokens, removeToken } from '../host/tokens.ts';
import { openRegistry } from '../store/open.ts';
import { findProjectRoot } from '../workspace/root.ts';
import { type CliContext, remoteOf, repoList } from './answer-commands.ts';
import { formatBytes } from './progress.ts';

export function registerTeamCommands(program: Command, cli: CliContext): void {
  const { io } = cli;
  const repos = program
    .command('repos')
    .description(
      'the repositories in the store (a shared PostgreSQL holds many): size, last update, embedder, commit',
    )
    .option('--json', 'print JSON')
    .action(async (opts) => {
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
    });
  repos
    .command('rm')
    .description('remove a repository and every row of it from the shared store')
    .argument('<name>', 'the repository, as `quarry repos` lists it')
    .action(async (name: string) => {
      if (remoteOf(cli.globals()))
        throw new QuarryError(
          'BAD_INPUT',
          'repositories are removed where the store is: run this with --store, not --remote',
        );
      const cwd = process.cwd();
      const root = cli.globals().root ?? findProjectRoot(cwd) ?? cwd;
      const registry = await openRegistry(resolveConfig({ root }), root);
      if (!registry)
        throw new QuarryError(
          'BAD_INPUT',
          'this index holds one repository: delete its .quarry/ folder to remove it, or pass --store postgres://…',
        );
      try {
        if (!(await registry.remove(name)))
          throw new QuarryError(
            'NOT_FOUND',
            `no repository "${name}" in ${registry.location}: see \`quarry repos\``,
          );
        io.stdout.write(`removed ${name} from ${registry.location}\n`);
      } finally {
        await registry.close();
      }
    });

  const token = program
    .command('token')
    .description(
      'tokens for `quarry serve`: each reads some repositories (or all), and may be allowed to re-index',
    );
  const fileOption = ['--tokens <file>', 'the tokens file (default: ~/.config/quarry/tokens.json)'] as const;
  token
    .command('add')
    .description('make a token (printed once; only its hash is kept)')
    .argument('<name>', 'who or what it is for (ci, alice, agents)')
    .argument('[repos...]', 'the repositories it may read')
    .option('--all', 'every repository, present and future')
    .option('--reindex', 'may also start a re-index')
    .option(...fileOption)
    .action((name: string, list: string[], opts) => {
      if (!opts.all && !list.length)
        throw new QuarryError('BAD_INPUT', 'name the repositories the token may read, or pass --all');
      if (opts.all && list.length)
        throw new QuarryError('BAD_INPUT', 'pass either repositories or --all, not both');
      const file = opts.tokens ?? defaultTokensFile();
      const { token: made, entry } = addToken(file, {
        name,
        repos: opts.all ? '*' : list,
        reindex: Boolean(opts.reindex),
      });
      io.stdout.write(`${made}\n`);
      io.stderr.write(
        `token ${entry.name}: reads ${entry.repos === '*' ? 'every repository' : entry.repos.join(', ')}${entry.reindex ? ', may re-index' : ''}; kept as a hash in ${file} — copy it now, it is not shown again\n`,
      );
    });
  token
    .command('list')
    .description('the tokens (names and rights; the tokens themselves are not kept)')
    .option('--json', 'print JSON')
    .option(...fileOption)
    .action((opts) => {
      const list = readTokens(opts.tokens ?? defaultTokensFile()).map(({ sha256: _h, ...t }) => t);
      if (opts.json) io.stdout.write(`${JSON.stringify({ tokens: list })}\n`);
      else if (!list.length) io.stdout.write('no tokens\n');
      else
        for (const t of list)
          io.stdout.write(
            `${t.name}  ${t.repos === '*' ? 'all repositories' : t.repos.join(', ')}${t.reindex ? '  +reindex' : ''}  ${t.created.slice(0, 10)}\n`,
          );
    });
  token
    .command('rm')
    .description('revoke a token (a running server stops accepting it at once)')
    .argument('<name>', 'the token name')
    .option(...fileOption)
    .action((name: string, opts) => {
      const file = opts.tokens ?? defaultTokensFile();
      if (!removeToken(file, name)) throw new QuarryError('NOT_FOUND', `no token named ${name} in ${file}`);
      io.stdout.write(`revoked ${name}\n`);
    });
}
