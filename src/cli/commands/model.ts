import type { Command } from 'commander';
import { installModelWeights, modelStatus } from '../../host/models.ts';
import type { CliContext } from '../context.ts';

export function registerModel(program: Command, cli: CliContext): void {
  const model = program
    .command('model')
    .description('the local embedding model: what is installed, and installing it');
  model
    .command('status', { isDefault: true })
    .description('where the weights are and whether they check out')
    .option('--json', 'print as JSON')
    .action((opts: { json?: boolean }) => runModelStatus(cli, opts));
  model
    .command('install')
    .description(
      'install weights from a local .onnx file or a folder holding one (checked against pinned hashes)',
    )
    .argument('<path>', 'model.onnx, or a folder with model.onnx or onnx/model_quantized.onnx')
    .action((path: string) => runModelInstall(cli, path));
}

export async function runModelStatus(cli: CliContext, opts: { json?: boolean }): Promise<void> {
  const { io } = cli;
  const g = cli.globals();
  const status = await modelStatus(g.root);
  const info = status.weights;
  if (opts.json) {
    io.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
    return;
  }
  const c = cli.colors(io.stdout);
  io.stdout.write(
    info
      ? `${c.green('installed')} all-MiniLM-L6-v2 (${info.variant}) at ${info.path}\n  sha256 ${info.sha256}\n  from ${info.source}\n`
      : `${c.yellow('not installed')}: no weights in ${status.weightsDir}; run \`quarry model install <model.onnx>\`` +
          `${status.download ? ' (or quarry downloads them at the next index run)' : ''}\n`,
  );
}

export async function runModelInstall(cli: CliContext, path: string): Promise<void> {
  const info = await installModelWeights(path);
  cli.io.stdout.write(`installed all-MiniLM-L6-v2 (${info.variant}) at ${info.path}\n`);
}
