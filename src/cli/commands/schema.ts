import type { Command } from 'commander';
import type { CliContext } from '../context.ts';

export function registerSchema(program: Command, cli: CliContext): void {
  program
    .command('schema')
    .description(
      "the JSON Schema of quarry.toml, for editors (Even Better TOML: '#:schema ./quarry.schema.json')",
    )
    .action(() => runSchema(cli));
}

export async function runSchema(cli: CliContext): Promise<void> {
  const { settingsJsonSchema } = await import('../../config/schema.ts');
  cli.io.stdout.write(`${JSON.stringify(settingsJsonSchema(), null, 2)}\n`);
}
