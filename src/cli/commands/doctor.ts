import type { Command } from 'commander';
import { QuarryError } from '../../errors.ts';
import { projectRootFor } from '../../host/checkout.ts';
import { doctorChecks } from '../../host/doctor.ts';
import type { CliContext } from '../context.ts';

/** `quarry doctor` found a failure: its lines said what; the exit code says so to scripts. */
export class DoctorFailed extends QuarryError {
  constructor() {
    super('IO', 'doctor found problems (see above)');
  }
}

export function registerDoctor(program: Command, cli: CliContext): void {
  program
    .command('doctor')
    .description(
      'check this install and this project: Node, native modules, grammars, weights, store, model server',
    )
    .option('--json', 'print as JSON')
    .action((opts: { json?: boolean }) => runDoctor(cli, opts));
}

export async function runDoctor(cli: CliContext, opts: { json?: boolean }): Promise<void> {
  const { io } = cli;
  const root = projectRootFor(cli.globals().root);
  const checks = await doctorChecks(root);
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
}
