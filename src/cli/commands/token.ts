import type { Command } from 'commander';
import { QuarryError } from '../../errors.ts';
import { addToken, defaultTokensFile, readTokens, removeToken } from '../../host/tokens.ts';
import type { CliContext } from '../context.ts';

const FILE_OPTION = ['--tokens <file>', 'the tokens file (default: ~/.config/quarry/tokens.json)'] as const;

interface TokenAddOptions {
  all?: boolean;
  reindex?: boolean;
  tokens?: string;
}

export function registerToken(program: Command, cli: CliContext): void {
  const token = program
    .command('token')
    .description(
      'tokens for `quarry serve`: each reads some repositories (or all), and may be allowed to re-index',
    );
  token
    .command('add')
    .description('make a token (printed once; only its hash is kept)')
    .argument('<name>', 'who or what it is for (ci, alice, agents)')
    .argument('[repos...]', 'the repositories it may read')
    .option('--all', 'every repository, present and future')
    .option('--reindex', 'may also start a re-index')
    .option(...FILE_OPTION)
    .action((name: string, list: string[], opts: TokenAddOptions) => runTokenAdd(cli, name, list, opts));
  token
    .command('list')
    .description('the tokens (names and rights; the tokens themselves are not kept)')
    .option('--json', 'print JSON')
    .option(...FILE_OPTION)
    .action((opts: { json?: boolean; tokens?: string }) => runTokenList(cli, opts));
  token
    .command('rm')
    .description('revoke a token (a running server stops accepting it at once)')
    .argument('<name>', 'the token name')
    .option(...FILE_OPTION)
    .action((name: string, opts: { tokens?: string }) => runTokenRm(cli, name, opts));
}

export function runTokenAdd(cli: CliContext, name: string, list: string[], opts: TokenAddOptions): void {
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
  cli.io.stdout.write(`${made}\n`);
  cli.io.stderr.write(
    `token ${entry.name}: reads ${entry.repos === '*' ? 'every repository' : entry.repos.join(', ')}${entry.reindex ? ', may re-index' : ''}; kept as a hash in ${file} — copy it now, it is not shown again\n`,
  );
}

export function runTokenList(cli: CliContext, opts: { json?: boolean; tokens?: string }): void {
  const { io } = cli;
  const list = readTokens(opts.tokens ?? defaultTokensFile()).map(({ sha256: _h, ...t }) => t);
  if (opts.json) io.stdout.write(`${JSON.stringify({ tokens: list })}\n`);
  else if (!list.length) io.stdout.write('no tokens\n');
  else
    for (const t of list)
      io.stdout.write(
        `${t.name}  ${t.repos === '*' ? 'all repositories' : t.repos.join(', ')}${t.reindex ? '  +reindex' : ''}  ${t.created.slice(0, 10)}\n`,
      );
}

export function runTokenRm(cli: CliContext, name: string, opts: { tokens?: string }): void {
  const file = opts.tokens ?? defaultTokensFile();
  if (!removeToken(file, name)) throw new QuarryError('NOT_FOUND', `no token named ${name} in ${file}`);
  cli.io.stdout.write(`revoked ${name}\n`);
}
