import { type Command, InvalidArgumentError } from 'commander';
import { requireProject } from '../host/listen.ts';
import { openProject } from '../project/local.ts';
import { type CliContext, remoteOf } from './answer-commands.ts';

/** Resolves on Ctrl-C or SIGTERM. */
function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

/** `--port`: a whole number 0–65535, refused at parse time (exit 2) otherwise. */
export function portNumber(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n > 65535)
    throw new InvalidArgumentError('expected a port: a whole number from 1 to 65535 (0 picks a free one)');
  return n;
}

const INIT_HELP = 'start an index here when this folder is no project yet (default: refuse, exit 3)';

export function registerServeCommands(program: Command, cli: CliContext): void {
  const { io } = cli;
  program
    .command('mcp')
    .description(
      'serve quarry to coding agents over the Model Context Protocol (stdio, or --http on 127.0.0.1)',
    )
    .option('--http', 'streamable HTTP on 127.0.0.1 instead of stdio')
    .option('--port <n>', 'HTTP port (default: any free one, printed)', portNumber)
    .option('--no-watch', 'do not keep the index fresh while running')
    .option('--init', INIT_HELP)
    .action(async (opts) => {
      const root = cli.globals().root;
      const url = remoteOf(cli.globals());
      const remote = url ? { remote: { url } } : {};
      const { serveMcpHttp, serveMcpStdio } = await import('../mcp/server.ts');
      const common = { ...(root ? { root } : {}), watch: opts.watch, init: Boolean(opts.init), ...remote };
      if (!opts.http) {
        await serveMcpStdio(common);
        return;
      }
      const served = await serveMcpHttp({ ...common, port: opts.port });
      io.stdout.write(`quarry mcp listening on ${served.url}\n`);
      await untilSignal();
      await served.close();
    });

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
    .action(async (opts) => {
      const root = cli.globals().root;
      const url = remoteOf(cli.globals());
      const { startServer } = await import('../server/http.ts');
      const served = await startServer({
        ...(root ? { root } : {}),
        ...(url ? { remote: { url } } : {}),
        ...(opts.tokens ? { tokensFile: opts.tokens } : {}),
        port: opts.port,
        ...(opts.host ? { host: opts.host } : {}),
        ...(opts.token ? { token: opts.token } : {}),
        watch: opts.watch,
        init: Boolean(opts.init),
        log: (m) => io.stderr.write(`quarry serve: ${m}\n`),
      });
      io.stdout.write(`quarry panel: ${served.url}\n`);
      await untilSignal();
      await served.close();
    });

  program
    .command('watch')
    .description('keep the index fresh: index each saved file within a second, embed in the background')
    .option(
      '--sweep <seconds>',
      'full stat sweep interval (catches what the watcher missed)',
      cli.positiveInt,
      300,
    )
    .option('--init', INIT_HELP)
    .action(async (opts) => {
      const root = cli.globals().root;
      requireProject(process.cwd(), 'watch', { root, init: opts.init });
      const { startAutoSync } = await import('../watch/autosync.ts');
      const project = await openProject({ ...(root ? { root } : {}), create: true });
      const c = cli.colors(io.stdout);
      let last = '';
      const sync = await startAutoSync(project, {
        sweepMs: opts.sweep * 1000,
        onStatus: (s) => {
          const line =
            s.state === 'syncing'
              ? 'syncing…'
              : s.state === 'embedding'
                ? 'embedding in the background…'
                : s.lastSync
                  ? `synced ${s.lastChanged} file${s.lastChanged === 1 ? '' : 's'} at ${s.lastSync.slice(11, 19)}; ${s.filesIndexed} indexed`
                  : 'watching';
          if (line !== last) io.stdout.write(`${c.dim(new Date().toISOString().slice(11, 19))} ${line}\n`);
          last = line;
        },
        onError: (m) => io.stderr.write(`${c.yellow('note')}: ${m}\n`),
      });
      io.stdout.write(`watching ${project.root} (Ctrl-C to stop)\n`);
      await sync.syncNow();
      await untilSignal();
      await sync.stop();
      await project.close();
    });
}
