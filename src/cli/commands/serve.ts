import type { Command } from 'commander';
import type { CliContext } from '../context.ts';
import { visible } from '../format.ts';
import { overlayRoot, remoteOf } from '../open.ts';
import { INIT_HELP, portNumber, untilSignal } from '../options.ts';

interface ServeOptions {
  port: number;
  host?: string;
  token?: string;
  tokens?: string;
  watch: boolean;
  init?: boolean;
}

export function registerServe(program: Command, cli: CliContext): void {
  program
    .command('serve')
    .description(
      'the web panel and JSON API on 127.0.0.1 (search, file view, ask, re-index, settings, live status)',
    )
    .option('--port <n>', 'port (0 picks a free one)', portNumber, 7411)
    .option('--host <addr>', 'bind address; anything but loopback requires a token (printed)')
    .option(
      '--token <secret>',
      'a token that may do everything (default: generated when --host is not loopback)',
    )
    .option(
      '--tokens <file>',
      'require a token from this file on every request (`quarry token add`); each sees only its repositories',
    )
    .option('--no-watch', 'do not keep the index fresh while running')
    .option('--init', INIT_HELP)
    .action((opts: ServeOptions) => runServe(cli, opts));
}

export async function runServe(cli: CliContext, opts: ServeOptions): Promise<void> {
  const { io } = cli;
  const root = cli.globals().root;
  const url = remoteOf(cli.globals());
  const { startServer } = await import('../../server/http.ts');
  const served = await startServer({
    ...(root ? { root } : {}),
    ...(url ? { remote: relay(url, overlayRoot(cli.globals())) } : {}),
    ...(opts.tokens ? { tokensFile: opts.tokens } : {}),
    port: opts.port,
    ...(opts.host ? { host: opts.host } : {}),
    ...(opts.token ? { token: opts.token } : {}),
    watch: opts.watch,
    init: Boolean(opts.init),
    // a log line may carry what a client sent: shown, never acted on
    log: (m) => io.stderr.write(`quarry serve: ${visible(m)}\n`),
  });
  io.stdout.write(`quarry panel: ${served.url}\n`);
  await untilSignal();
  await served.close();
}

/** A remote quarry relayed, with this checkout's changes over its repository when there is a checkout here. */
export function relay(url: string, overlay: string | undefined): { url: string; overlayRoot?: string } {
  return { url, ...(overlay ? { overlayRoot: overlay } : {}) };
}
