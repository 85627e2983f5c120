import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { QuarryError } from '../errors.ts';
import { writeAtomic } from '../workspace/atomic.ts';

/**
 * A project's own settings file (`quarry.toml`) comes with the repository: whoever wrote the repository wrote it. So,
 * until the user trusts the file, it may not set anything that reaches the network, names a credential, runs or loads
 * something, or turns a safeguard off. Trust is given to the file's exact content (`quarry trust`, as direnv's
 * `allow` and mise's `trust` do): its sha256 is kept in the user's own config folder, and an edit revokes it. The
 * user's own config, the environment and flags are always trusted. An untrusted file's other settings still apply.
 */

/** Settings (as the file names them) a project file may set only when trusted; a value test where only some values reach out. */
const GUARDED: ReadonlyArray<readonly [string, ((value: unknown) => boolean)?]> = [
  // a remote embedding service is sent every chunk; local, static, onnx and none run here
  ['embed.provider', (v) => !['local', 'static', 'onnx', 'none'].includes(String(v))],
  ['embed.base_url'],
  ['embed.api_key_env'],
  ['embed.model_dir'], // a model file the repository chose, loaded and run
  ['embed.static_table', (v) => String(v) !== 'code-v1'], // a table file, read whole
  ['embed.download', (v) => v === true], // the user may have said no
  ['llm.model'], // a provider (and its key) or a model file
  ['llm.base_url'],
  ['llm.api_key_env'],
  ['llm.api_key'],
  ['search.ranker_model'], // a model file the repository chose decides what is shown first
  ['search.rerank.protocol', (v) => String(v) !== 'none'],
  ['search.rerank.url'],
  ['search.rerank.model'],
  ['store.driver', (v) => String(v) !== 'sqlite'],
  ['store.url'],
  ['store.repo'], // a key in a shared store: another repository's rows
  ['include_secrets', (v) => v === true],
  ['include_hard_links', (v) => v === true],
  ['context.redact_secrets', (v) => v === false],
];

/** The settings a project file may set only when trusted (for docs and `doctor`). */
export const TRUSTED_ONLY: readonly string[] = GUARDED.map(([name]) => name);

function lookup(
  raw: Record<string, unknown>,
  path: string,
): { parent: Record<string, unknown>; key: string } | undefined {
  const parts = path.split('.');
  let at: unknown = raw;
  for (const p of parts.slice(0, -1)) {
    if (!at || typeof at !== 'object' || Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[p];
  }
  if (!at || typeof at !== 'object' || Array.isArray(at)) return undefined;
  const key = parts.at(-1)!;
  return Object.hasOwn(at, key) ? { parent: at as Record<string, unknown>, key } : undefined;
}

/** The guarded settings a parsed project file sets, by name (`embed.base_url`), with their values. */
export function guardedValues(raw: Record<string, unknown>): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  for (const [name, reaches] of GUARDED) {
    const hit = lookup(raw, name);
    if (hit && (!reaches || reaches(hit.parent[hit.key]))) out.push([name, hit.parent[hit.key]]);
  }
  return out;
}

/** The guarded settings a parsed project file sets, by name. */
export function guardedSettings(raw: Record<string, unknown>): string[] {
  return guardedValues(raw).map(([name]) => name);
}

/** `raw` without the guarded settings it sets (a copy); the names taken out. */
export function withoutGuarded(raw: Record<string, unknown>): {
  kept: Record<string, unknown>;
  refused: string[];
} {
  const refused = guardedSettings(raw);
  if (!refused.length) return { kept: raw, refused };
  const kept = structuredClone(raw);
  for (const name of refused) {
    const hit = lookup(kept, name);
    if (hit) delete hit.parent[hit.key];
  }
  return { kept, refused };
}

/** Where trust is kept: the user's config folder, never the project's. */
export function trustFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'quarry', 'trusted.json');
}

type TrustTable = Record<string, string>;

function readTable(env: NodeJS.ProcessEnv): TrustTable {
  const file = trustFile(env);
  if (!existsSync(file)) return {};
  try {
    const t = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    return t && typeof t === 'object' && !Array.isArray(t) ? (t as TrustTable) : {};
  } catch {
    return {}; // a damaged table trusts nothing
  }
}

export const contentHash = (text: string | Buffer): string => createHash('sha256').update(text).digest('hex');

/** Is this settings file, with this content, trusted by the user? */
export function isTrusted(
  file: string,
  content: string | Buffer,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  return readTable(env)[resolve(file)] === contentHash(content);
}

/** Trusts (or, with `revoke`, stops trusting) the file's current content. Returns its hash. */
export function setTrust(
  file: string,
  revoke: boolean,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const abs = resolve(file);
  const table = readTable(env);
  let hash: string | undefined;
  if (revoke) delete table[abs];
  else {
    if (!existsSync(abs))
      throw new QuarryError('BAD_INPUT', `${abs} does not exist: there is nothing to trust`);
    hash = contentHash(readFileSync(abs));
    table[abs] = hash;
  }
  writeAtomic(trustFile(env), `${JSON.stringify(table, null, 2)}\n`, 0o600);
  return hash;
}

/** What a project's settings file asks and whether it is trusted, for `trust`, `doctor` and `status`. */
export interface ProjectTrust {
  file: string;
  exists: boolean;
  trusted: boolean;
  /** Guarded settings the file sets (applied only when trusted). */
  guarded: string[];
}

const told = new Set<string>();

/** The one-line notice for an untrusted file's refused settings, said once per file and content in a process. */
export function refusedNotice(file: string, hash: string, refused: string[]): string | undefined {
  const key = `${resolve(file)}\0${hash}`;
  if (!refused.length || told.has(key)) return undefined;
  told.add(key);
  return `quarry: ${file} is not trusted, so its ${refused.join(', ')} ${refused.length === 1 ? 'is' : 'are'} ignored (they reach the network, name a credential or turn a safeguard off): review the file, then run \`quarry trust\` to apply them`;
}
