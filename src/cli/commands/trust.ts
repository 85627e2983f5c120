import type { Command } from 'commander';
import { projectTrust } from '../../config/config.ts';
import { setTrust, TRUSTED_ONLY, trustFile } from '../../config/trust.ts';
import { QuarryError } from '../../errors.ts';
import { projectRootFor } from '../../host/checkout.ts';
import type { CliContext } from '../context.ts';
import { safePath } from '../format.ts';

interface TrustOptions {
  revoke?: boolean;
  json?: boolean;
}

export function registerTrust(program: Command, cli: CliContext): void {
  program
    .command('trust')
    .description(
      "trust this project's quarry.toml as it is now, so its servers, keys, model and store settings apply (an edit revokes it)",
    )
    .option('--revoke', 'stop trusting it')
    .option('--json', 'print as JSON')
    .action((opts: TrustOptions) => runTrust(cli, opts));
}

export function runTrust(cli: CliContext, opts: TrustOptions): void {
  const root = projectRootFor(cli.globals().root);
  if (!root)
    throw new QuarryError(
      'NO_ROOT',
      'no project here: run `quarry trust` inside the repository, or pass --root DIR',
    );
  const before = projectTrust(root);
  if (!before.exists && !opts.revoke)
    throw new QuarryError('BAD_INPUT', `${before.file} does not exist: there is nothing to trust`);
  const hash = setTrust(before.file, Boolean(opts.revoke));
  const after = projectTrust(root);
  if (opts.json) {
    cli.io.stdout.write(
      `${JSON.stringify({ ...after, sha256: hash ?? null, trustFile: trustFile() }, null, 2)}\n`,
    );
    return;
  }
  const file = safePath(after.file);
  const applies = after.guarded.length ? after.guarded.join(', ') : 'none of the guarded settings';
  cli.io.stdout.write(
    opts.revoke
      ? `${file} is no longer trusted: ${after.guarded.length ? `${applies} will be ignored` : 'it sets none of the guarded settings'}\n`
      : `trusted ${file} (sha256 ${hash!.slice(0, 12)}…): it sets ${applies}; an edit of the file revokes this\n`,
  );
  if (!opts.revoke && !after.guarded.length)
    cli.io.stderr.write(`(a project file may set everything but ${TRUSTED_ONLY.join(', ')} without trust)\n`);
}
