import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import { QuarryError } from '../errors.ts';
import { writeAtomic } from '../workspace/atomic.ts';
import { EMBED_DEVICES, EMBED_PROVIDERS, FUSIONS, RANKERS, STORE_DRIVERS } from './names.ts';
import { defaultConfig, settingsModule } from './settings.ts';
import {
  contentHash,
  guardedSettings,
  guardedValues,
  isTrusted,
  type ProjectTrust,
  refusedNotice,
  setTrust,
  withoutGuarded,
} from './trust.ts';

/** quarry's settings, resolved: the output of the one schema (config/schema.ts), where each is described. */
export type { QuarryConfig, UserConfig } from './schema.ts';

import type { QuarryConfig, UserConfig } from './schema.ts';
export type ChunkOptions = QuarryConfig['chunk'];
export type EmbedOptions = QuarryConfig['embed'];
export type EmbedProvider = EmbedOptions['provider'];
export type ContextOptions = QuarryConfig['context'];
export type Packing = ContextOptions['packing'];
export type LlmOptions = QuarryConfig['llm'];
/** Where the index lives (`[store]`): the embedded SQLite file, a PostgreSQL database, or a Chroma server. */
export type StoreOptions = QuarryConfig['store'];
export type StoreDriver = StoreOptions['driver'];
/** Field weights for BM25 over a chunk's path, symbol names and body. */
export type FieldWeights = QuarryConfig['search']['weights'];

/** Every default, from the schema. */
export const DEFAULT_CONFIG: QuarryConfig = defaultConfig();

/** How a project's own file is read: until the user trusts its content, without the settings that reach out. */
interface ProjectFile {
  env: NodeJS.ProcessEnv;
  onNotice: (message: string) => void;
}

function readToml(file: string, project?: ProjectFile): UserConfig {
  if (!existsSync(file)) return {};
  try {
    const content = readFileSync(file, 'utf8');
    const parsed = parseToml(content) as Record<string, unknown>;
    let raw = parsed;
    // checked whole first: a wrong value is said, trusted or not
    const checked = settingsModule().settingsToConfig(raw, file);
    if (project && !isTrusted(file, content, project.env)) {
      const { kept, refused } = withoutGuarded(raw);
      raw = kept;
      const notice = refusedNotice(file, contentHash(content), refused);
      if (notice) project.onNotice(notice);
    }
    const out = raw === parsed ? checked : settingsModule().settingsToConfig(raw, file);
    // a folder named in a settings file is relative to that file, wherever quarry runs from
    if (out.embed?.modelDir) out.embed.modelDir = resolve(dirname(file), out.embed.modelDir);
    return out;
  } catch (err) {
    if (err instanceof QuarryError) throw err;
    // smol-toml says where: file:line:column, as editors and compilers print it
    const { line, column } = err as { line?: number; column?: number };
    const at = line ? `:${line}${column ? `:${column}` : ''}` : '';
    throw new QuarryError(
      'BAD_CONFIG',
      `cannot parse ${file}${at}: ${(err as Error).message.split('\n')[0]}`,
      {
        cause: err,
      },
    );
  }
}

/** The driver a store URL names (`postgres://`, `chroma://`, else a SQLite file), or undefined for a bare path. */
export function driverOfUrl(url: string): StoreDriver | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase();
  if (!scheme) return undefined;
  if (scheme === 'postgres' || scheme === 'postgresql') return checkServerUrl(url, 'postgres');
  if (scheme === 'chroma' || scheme === 'chroma+http' || scheme === 'chroma+https')
    return checkServerUrl(url, 'chroma');
  if (scheme === 'sqlite' || scheme === 'file') return 'sqlite';
  throw new QuarryError(
    'BAD_CONFIG',
    `unknown store URL scheme "${scheme}://": use postgres://…, chroma://host:port or a SQLite file path`,
  );
}

/** A server store's URL that cannot be parsed (a port of 99999) is bad input, said before anything connects. */
function checkServerUrl<D extends StoreDriver>(url: string, driver: D): D {
  let port = '';
  try {
    port = new URL(url.replace(/^[a-z][a-z0-9+.-]*:/i, 'http:')).port;
  } catch {
    throw new QuarryError(
      'BAD_INPUT',
      `the store URL cannot be read: check its host and port (like ${driver === 'postgres' ? 'postgres://user@host:5432/db' : 'chroma://host:8000'})`,
    );
  }
  if (port && (Number(port) < 1 || Number(port) > 65535))
    throw new QuarryError('BAD_INPUT', `the store URL's port ${port} is not a port (1-65535)`);
  return driver;
}

/**
 * The one rule for repository names: parts of letters, digits, `.`, `_` and `-`, each starting with a letter or a
 * digit and not ending with a dot, separated by `/` (`owner/name`), at most 100 characters. So `*` (every
 * repository, in a request) can never be a name, and neither can `..`, a space, an empty string or `acme/alpha.`
 * (a second key for `acme/alpha`). Names are also compared without regard to case: a store refuses a key that
 * differs from one it holds only in case (store/postgres/registry.ts, where keys are made).
 */
const PART = '[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9_-])?';
const REPO_NAME = new RegExp(`^${PART}(?:/${PART})*$`);

export function checkRepoName(name: string): string {
  if (name.length <= 100 && REPO_NAME.test(name)) return name;
  const shown = name.length > 40 ? `${name.slice(0, 40)}…` : name;
  throw new QuarryError(
    'BAD_INPUT',
    `"${shown}" is not a repository name: use letters, digits, '.', '_' and '-', in parts separated by '/' (owner/name), at most 100 characters`,
  );
}

/** An environment variable's value as a setting; undefined leaves the setting alone. */
type Parse = (value: string, name: string) => unknown;

const text: Parse = (v) => v;
const yes = (v: string): boolean => /^(1|true|yes)$/i.test(v);
const number: Parse = (v, name) => {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0)
    throw new QuarryError('BAD_CONFIG', `${name} must be a non-negative number, got "${v}"`);
  return n;
};
const oneOf =
  (values: readonly string[], said = `one of ${values.join(', ')}`, show = (v: string) => `"${v}"`): Parse =>
  (v, name) => {
    if (!values.includes(v)) throw new QuarryError('BAD_CONFIG', `${name} must be ${said}, got ${show(v)}`);
    return v;
  };
/** Any other value is ignored. */
const ifOneOf =
  (values: readonly string[]): Parse =>
  (v) =>
    values.includes(v) ? v : undefined;
const fileText: Parse = (v, name) => {
  try {
    return readFileSync(v, 'utf8');
  } catch (err) {
    throw new QuarryError(
      'BAD_CONFIG',
      `${name}: cannot read ${v} (${(err as NodeJS.ErrnoException).code ?? 'error'}): point it at a readable file`,
    );
  }
};

/** `maxFileBytes`, `embed.model`: a setting, by the name the config uses. */
type SettingPath = {
  [K in keyof QuarryConfig & string]: QuarryConfig[K] extends unknown[]
    ? K
    : QuarryConfig[K] extends object
      ? `${K}.${keyof QuarryConfig[K] & string}`
      : K;
}[keyof QuarryConfig & string];

/**
 * The `QUARRY_*` environment variables: the setting each sets, and how its value reads. An empty variable is unset;
 * in this order, so a later one wins (`QUARRY_SYSTEM_PROMPT` over `QUARRY_SYSTEM_PROMPT_FILE`).
 */
const ENV: Record<string, readonly [SettingPath, Parse]> = {
  QUARRY_MAX_FILE_BYTES: ['maxFileBytes', number],
  QUARRY_WORKERS: ['workers', number],
  QUARRY_QUICK_PASS_FILES: ['quickPassFiles', number],
  QUARRY_WALK_CACHE: ['walkCache', (v) => !/^(0|false|no|off)$/i.test(v)],
  QUARRY_WRITE_BEHIND_FILES: ['writeBehindFiles', number],
  QUARRY_EMBED: ['embed.provider', oneOf(EMBED_PROVIDERS)],
  QUARRY_SHARED_CACHE: ['embed.sharedCache', (v) => !/^(0|false|no|off)$/i.test(v)],
  QUARRY_EMBED_MODEL: ['embed.model', text],
  QUARRY_EMBED_DEVICE: ['embed.device', oneOf(EMBED_DEVICES, 'auto, cpu or cuda')],
  QUARRY_EMBED_URL: ['embed.baseUrl', text],
  QUARRY_OFFLINE: ['embed.download', (v) => (yes(v) ? false : undefined)],
  QUARRY_FUSION: ['search.fusion', ifOneOf(FUSIONS)],
  QUARRY_RANKER: ['search.ranker', oneOf(RANKERS, 'rrf or learned')],
  QUARRY_RRF_K: ['search.rrfK', number],
  QUARRY_DENSE_WEIGHT: ['search.denseWeight', number],
  QUARRY_MODEL: ['llm.model', text],
  QUARRY_LLM_URL: ['llm.baseUrl', text],
  QUARRY_SYSTEM_PROMPT_FILE: ['context.systemPrompt', fileText],
  QUARRY_SYSTEM_PROMPT: ['context.systemPrompt', text],
  QUARRY_STORE_URL: ['store.url', text],
  QUARRY_STORE: ['store.driver', oneOf(STORE_DRIVERS, undefined, JSON.stringify)],
  QUARRY_REPO: ['store.repo', text],
  QUARRY_INCLUDE_SECRETS: ['includeSecrets', yes],
  QUARRY_INCLUDE_HARD_LINKS: ['includeHardLinks', yes],
};

function fromEnv(env: NodeJS.ProcessEnv): UserConfig {
  const out: Record<string, unknown> = {};
  for (const [name, [path, parse]] of Object.entries(ENV)) {
    const raw = env[name];
    const value = raw ? parse(raw, name) : undefined;
    if (value === undefined) continue;
    const [section, key] = path.split('.') as [string, string | undefined];
    out[section] = key === undefined ? value : { ...(out[section] as object), [key]: value };
  }
  return out as UserConfig;
}

/** The sections: the settings that are objects of settings. */
const SECTIONS = Object.keys(DEFAULT_CONFIG).filter((k) => {
  const v = DEFAULT_CONFIG[k as keyof QuarryConfig];
  return typeof v === 'object' && !Array.isArray(v);
}) as Array<keyof QuarryConfig>;

/** `over` on `base`: settings replace settings, a section's settings its own, and `ignore` patterns add up. */
function merge(base: QuarryConfig, over: UserConfig): QuarryConfig {
  const out: Record<string, unknown> = {
    ...base,
    ...Object.fromEntries(Object.entries(over).filter(([, v]) => v !== undefined && typeof v !== 'object')),
    ignore: [...base.ignore, ...(over.ignore ?? [])],
  };
  for (const k of SECTIONS) out[k] = { ...(base[k] as object), ...(over[k] as object | undefined) };
  const merged = out as QuarryConfig;
  merged.store = storeOf(base.store, over.store);
  merged.search.weights = { ...base.search.weights, ...over.search?.weights };
  return merged;
}

/** A URL names its driver; a driver named alone keeps no URL of another driver. */
function storeOf(base: StoreOptions, over: Partial<StoreOptions> | undefined): StoreOptions {
  if (!over) return base;
  const merged = { ...base, ...over };
  const fromUrl = over.url ? driverOfUrl(over.url) : undefined;
  if (fromUrl && !over.driver) merged.driver = fromUrl;
  else if (over.driver && !over.url && base.url && driverOfUrl(base.url) !== over.driver) delete merged.url;
  return merged;
}

export interface ResolveConfigOptions {
  /** Project root; its `quarry.toml` is read. */
  root?: string;
  /** Highest-priority overrides (command-line flags, library callers). */
  overrides?: UserConfig;
  env?: NodeJS.ProcessEnv;
  /** Read `~/.config/quarry/config.toml` (or `$XDG_CONFIG_HOME/quarry/config.toml`). Default true. */
  userConfig?: boolean;
  /**
   * Where the one-line notice goes when an untrusted project file's guarded settings are ignored (config/trust.ts).
   * Default: standard error.
   */
  onNotice?: (message: string) => void;
}

/** defaults < user config < project `quarry.toml` < `QUARRY_*` environment < overrides. */
export function resolveConfig(options: ResolveConfigOptions = {}): QuarryConfig {
  const env = options.env ?? process.env;
  let config = DEFAULT_CONFIG;
  if (options.userConfig !== false) {
    const dir = env.XDG_CONFIG_HOME || join(homedir(), '.config');
    config = merge(config, readToml(join(dir, 'quarry', 'config.toml')));
  }
  if (options.root) {
    const onNotice = options.onNotice ?? ((m: string) => process.stderr.write(`${m}\n`));
    config = merge(config, readToml(join(options.root, 'quarry.toml'), { env, onNotice }));
  }
  config = merge(config, fromEnv(env));
  if (options.overrides) config = merge(config, options.overrides);
  if (config.chunk.targetChars > config.chunk.maxChars) config.chunk.targetChars = config.chunk.maxChars;
  return config;
}

/** Whether the project's settings file is trusted, and the guarded settings it sets (`trust`, `doctor`, `status`). */
export function projectTrust(root: string, env: NodeJS.ProcessEnv = process.env): ProjectTrust {
  const file = join(root, 'quarry.toml');
  if (!existsSync(file)) return { file, exists: false, trusted: false, guarded: [] };
  const content = readFileSync(file, 'utf8');
  let guarded: string[] = [];
  try {
    guarded = guardedSettings(parseToml(content) as Record<string, unknown>);
  } catch {
    // an unreadable file says so where it is read
  }
  return { file, exists: true, trusted: isTrusted(file, content, env), guarded };
}

/** The project's own settings file, as written (not merged with defaults). */
export function readProjectSettings(root: string): Record<string, unknown> {
  const file = join(root, 'quarry.toml');
  if (!existsSync(file)) return {};
  try {
    return parseToml(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new QuarryError('BAD_CONFIG', `cannot parse ${file}: ${(err as Error).message.split('\n')[0]}`);
  }
}

/**
 * Changes settings in the project's `quarry.toml` (`{ search: { top_k: 20 } }`; `null` removes a key), after checking
 * the result as the config reader would. Written atomically; comments in the file are not kept.
 */
export function writeProjectSettings(
  root: string,
  changes: Record<string, unknown>,
): Record<string, unknown> {
  const before = readProjectSettings(root);
  const next = structuredClone(before);
  const apply = (target: Record<string, unknown>, patch: Record<string, unknown>, at: string) => {
    for (const [k, v] of Object.entries(patch)) {
      // `__proto__` from JSON is an own key: merged, it would reach Object.prototype (every object, every request)
      if (k === '__proto__' || k === 'constructor' || k === 'prototype')
        throw new QuarryError('BAD_CONFIG', `"${at}${k}" is not a setting: name the setting to change`);
      if (v === null) delete target[k];
      else if (typeof v === 'object' && !Array.isArray(v)) {
        const sub = (typeof target[k] === 'object' && target[k] !== null ? target[k] : {}) as Record<
          string,
          unknown
        >;
        apply(sub, v as Record<string, unknown>, `${at}${k}.`);
        target[k] = sub;
      } else target[k] = v;
    }
  };
  if (typeof changes !== 'object' || changes === null || Array.isArray(changes))
    throw new QuarryError('BAD_CONFIG', 'settings must be an object of sections: {"search": {"top_k": 20}}');
  apply(next, changes, '');
  settingsModule().settingsToConfig(next, 'quarry.toml'); // throws a one-line BAD_CONFIG naming the setting
  // a file the user trusted stays trusted through a change (the panel's settings form) that leaves every guarded
  // setting as it was: a change to one of them needs `quarry trust` again
  const guardedOf = (raw: Record<string, unknown>) => JSON.stringify(guardedValues(raw));
  const keepTrust = projectTrust(root).trusted && guardedOf(before) === guardedOf(next);
  writeAtomic(join(root, 'quarry.toml'), `${stringifyToml(next)}\n`);
  if (keepTrust) setTrust(join(root, 'quarry.toml'), false);
  return next;
}
