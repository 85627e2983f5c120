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
  const { settingsModule } = await import('../../config/settings.ts');
  cli.io.stdout.write(`${JSON.stringify(settingsModule().settingsJsonSchema(), null, 2)}\n`);
}
