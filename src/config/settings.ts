/**
 * The settings schema (config/schema.ts, built on zod), as the rest of quarry reaches it: the module, for reading and
 * checking a settings file, and the defaults (its parse of nothing).
 *
 * In the bundled CLI (scripts/bundle.mjs) this module is replaced by one that `require`s a CommonJS build of the
 * schema the first time a command reads a settings file, and holds the defaults as the schema gave them at build
 * time. zod is half the bundle's code: compiling and running it cost every command ~60 ms of its start
 * (docs/benchmarks.md), and a search in a project without a `quarry.toml` never needs it.
 */
import type { QuarryConfig } from './schema.ts';
import * as schema from './schema.ts';

export type SettingsModule = Pick<typeof schema, 'settingsToConfig' | 'settingsJsonSchema'>;

export function settingsModule(): SettingsModule {
  return schema;
}

export function defaultConfig(): QuarryConfig {
  return schema.ConfigSchema.parse({});
}
