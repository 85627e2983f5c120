import type { Command } from 'commander';
import { requireProject } from '../../host/listen.ts';
import type { SyncStatus } from '../../host/serve.ts';
import { openProject } from '../../project/local/index.ts';
import type { CliContext } from '../context.ts';
import { visible } from '../format.ts';
import { INIT_HELP, positiveInt, untilSignal } from '../options.ts';

export function registerWatch(program: Command, cli: CliContext): void {
  program
    .command('watch')
    .description('keep the index fresh: index each saved file within a second, embed in the background')
    .option(
      '--sweep <seconds>',
      'full stat sweep interval (catches what the watcher missed)',
      positiveInt,
      300,
    )
    .option('--init', INIT_HELP)
    .action((opts: { sweep: number; init?: boolean }) => runWatch(cli, opts));
}

function statusLine(s: SyncStatus): string {
  return s.state === 'syncing'
    ? 'syncing…'
    : s.state === 'embedding'
      ? 'embedding in the background…'
      : s.lastSync
        ? `synced ${s.lastChanged} file${s.lastChanged === 1 ? '' : 's'} at ${s.lastSync.slice(11, 19)}; ${s.filesIndexed} indexed`
        : 'watching';
}

export async function runWatch(cli: CliContext, opts: { sweep: number; init?: boolean }): Promise<void> {
  const { io } = cli;
  const root = cli.globals().root;
  requireProject(process.cwd(), 'watch', { root, init: opts.init });
  const { startAutoSync } = await import('../../host/serve.ts');
  const project = await openProject({ ...(root ? { root } : {}), create: true });
  const c = cli.colors(io.stdout);
  let last = '';
  const sync = await startAutoSync(project, {
    sweepMs: opts.sweep * 1000,
    onStatus: (s) => {
      const line = statusLine(s);
      if (line !== last) io.stdout.write(`${c.dim(new Date().toISOString().slice(11, 19))} ${line}\n`);
      last = line;
    },
    onError: (m) => io.stderr.write(`${c.yellow('note')}: ${visible(m)}\n`),
  });
  const polling = sync.status().pollingMs;
  io.stdout.write(
    polling
      ? `polling ${project.root} every ${Math.round(polling / 1000)} s (Ctrl-C to stop)\n`
      : `watching ${project.root} (Ctrl-C to stop)\n`,
  );
  await sync.syncNow();
  await untilSignal();
  await sync.stop();
  await project.close();
}
