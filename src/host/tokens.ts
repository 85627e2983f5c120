import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { QuarryError } from '../errors.ts';
import { writeAtomic } from '../workspace/atomic.ts';

/**
 * Tokens for `quarry serve`: each names the repositories it may read (or all) and whether it may start a re-index.
 * Only a token's sha256 is stored: a token is 32 random bytes, so a fast hash is enough (nothing to brute-force),
 * and a stolen tokens file opens nothing.
 */
export interface TokenEntry {
  name: string;
  /** sha256 of the token, hex. */
  sha256: string;
  /** Repository names, or `*` for all of them. */
  repos: string[] | '*';
  /** May start a re-index (and change settings when it may see every repository). */
  reindex: boolean;
  created: string;
}

/** What a request may do, once its token is checked. */
export interface Grant {
  /** The token's name (`loopback` when no token is needed). */
  name: string;
  repos: '*' | Set<string>;
  reindex: boolean;
}

export const FULL_GRANT: Grant = { name: 'loopback', repos: '*', reindex: true };

/** `~/.config/quarry/tokens.json` (or under `$XDG_CONFIG_HOME`). */
export function defaultTokensFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'quarry', 'tokens.json');
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export function readTokens(file: string): TokenEntry[] {
  if (!existsSync(file)) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    throw new QuarryError(
      'BAD_CONFIG',
      `${file} is not valid JSON: fix it or remove it and add tokens again`,
    );
  }
  const list = (parsed as { tokens?: unknown }).tokens;
  if (!Array.isArray(list)) throw new QuarryError('BAD_CONFIG', `${file} has no "tokens" list`);
  for (const t of list as TokenEntry[])
    if (typeof t?.name !== 'string' || !/^[0-9a-f]{64}$/.test(String(t.sha256)))
      throw new QuarryError('BAD_CONFIG', `${file}: an entry without a name or sha256; remove it`);
  return list as TokenEntry[];
}

function writeTokens(file: string, tokens: TokenEntry[]): void {
  writeAtomic(file, `${JSON.stringify({ tokens }, null, 2)}\n`, 0o600);
}

/** Makes a token, stores its hash, and returns the token itself (shown once, never stored). */
export function addToken(
  file: string,
  entry: { name: string; repos: string[] | '*'; reindex: boolean },
): { token: string; entry: TokenEntry } {
  if (!/^[\w.@-]{1,64}$/.test(entry.name))
    throw new QuarryError('BAD_INPUT', `token name "${entry.name}": use letters, digits, . _ @ - (up to 64)`);
  const tokens = readTokens(file);
  if (tokens.some((t) => t.name === entry.name))
    throw new QuarryError(
      'BAD_INPUT',
      `a token named ${entry.name} exists: remove it first (quarry token rm ${entry.name})`,
    );
  const token = `qry_${randomBytes(32).toString('base64url')}`;
  const made: TokenEntry = {
    name: entry.name,
    sha256: sha256(token),
    repos: entry.repos,
    reindex: entry.reindex,
    created: new Date().toISOString(),
  };
  writeTokens(file, [...tokens, made]);
  return { token, entry: made };
}

export function removeToken(file: string, name: string): boolean {
  const tokens = readTokens(file);
  const kept = tokens.filter((t) => t.name !== name);
  if (kept.length === tokens.length) return false;
  writeTokens(file, kept);
  return true;
}

/** The grant of a presented token, or null when it matches none (compared in constant time). */
export function checkToken(entries: TokenEntry[], given: string): Grant | null {
  if (!given) return null;
  const h = Buffer.from(sha256(given), 'hex');
  let found: TokenEntry | undefined;
  for (const t of entries) if (timingSafeEqual(h, Buffer.from(t.sha256, 'hex'))) found = t;
  if (!found) return null;
  return {
    name: found.name,
    repos: found.repos === '*' ? '*' : new Set(found.repos),
    reindex: found.reindex,
  };
}

/** The name of a one-off token (given on the command line, or made up for one run). */
export const AD_HOC_TOKEN = 'command-line';

/** A one-off token given on the command line (`serve --token`): every repository, re-index included. */
export function adHocToken(token: string): TokenEntry {
  return { name: AD_HOC_TOKEN, sha256: sha256(token), repos: '*', reindex: true, created: '' };
}
