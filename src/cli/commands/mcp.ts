import type { Command } from 'commander';
import type { CliContext } from '../context.ts';
import { overlayRoot, remoteOf } from '../open.ts';
import { INIT_HELP, portNumber, untilSignal } from '../options.ts';
import { relay } from './serve.ts';

interface McpOptions {
  http?: boolean;
  port?: number;
  token?: string;
  tokens?: string;
  watch: boolean;
  init?: boolean;
}

export function registerMcp(program: Command, cli: CliContext): void {
  program
    .command('mcp')
    .description(
      'serve quarry to coding agents over the Model Context Protocol (stdio, or --http on 127.0.0.1)',
    )
    .option('--http', 'streamable HTTP on 127.0.0.1 instead of stdio')
    .option('--port <n>', 'HTTP port (default: any free one, printed)', portNumber)
    .option(
      '--token <secret>',
      'with --http: the token every request must carry (default: one made up, printed in the URL)',
    )
    .option('--tokens <file>', 'with --http: accept the tokens of this file (`quarry token add`) instead')
    .option('--no-watch', 'do not keep the index fresh while running')
    .option('--init', INIT_HELP)
    .action((opts: McpOptions) => runMcp(cli, opts));
}

export async function runMcp(cli: CliContext, opts: McpOptions): Promise<void> {
  const root = cli.globals().root;
  const url = remoteOf(cli.globals());
  const remote = url ? { remote: relay(url, overlayRoot(cli.globals())) } : {};
  const { serveMcpHttp, serveMcpStdio } = await import('../../mcp/server.ts');
  const common = { ...(root ? { root } : {}), watch: opts.watch, init: Boolean(opts.init), ...remote };
  if (!opts.http) {
    await serveMcpStdio(common);
    return;
  }
  const served = await serveMcpHttp({
    ...common,
    port: opts.port,
    ...(opts.token ? { token: opts.token } : {}),
    ...(opts.tokens ? { tokensFile: opts.tokens } : {}),
  });
  cli.io.stdout.write(`quarry mcp listening on ${served.url}\n`);
  if (served.token)
    cli.io.stderr.write(
      `every request needs this URL's token (or the header Authorization: Bearer ${served.token}); --token sets your own\n`,
    );
  await untilSignal();
  await served.close();
}
