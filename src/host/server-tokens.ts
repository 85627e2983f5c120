import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { isLoopback } from './guard.ts';
import { adHocToken, defaultTokensFile, readTokens, type TokenEntry } from './tokens.ts';

/** The tokens a server accepts: re-read when the file changes, so `quarry token add` works without a restart. */
function tokenSource(file: string | undefined, extra: TokenEntry[]): () => TokenEntry[] {
  let seen = -1;
  let cached: TokenEntry[] = [];
  return () => {
    if (!file) return extra;
    let m = 0;
    try {
      m = statSync(file).mtimeMs;
    } catch {
      m = 0;
    }
    if (m !== seen) {
      cached = m ? readTokens(file) : [];
      seen = m;
    }
    return [...extra, ...cached];
  };
}

export interface ServerTokens {
  /** The tokens accepted now. */
  tokens: () => TokenEntry[];
  /** Whether requests must carry one. */
  required: boolean;
  /** The token this server made up (a non-loopback bind with no tokens given), else null. */
  generated: string | null;
}

/**
 * Tokens: given ones, a tokens file, or (off loopback, with neither) the user's file, else one generated. `always`
 * (`quarry mcp --http`, whose callers are agents on this machine) asks for a token on loopback too.
 */
export function serverTokens(options: {
  host: string;
  token?: string;
  tokensFile?: string;
  always?: boolean;
}): ServerTokens {
  const loopback = isLoopback(options.host) && !options.always;
  let generated: string | null = null;
  const extra: TokenEntry[] = options.token ? [adHocToken(options.token)] : [];
  let file = options.tokensFile;
  if (!loopback && !file && !extra.length && readTokens(defaultTokensFile()).length)
    file = defaultTokensFile();
  if (file) readTokens(file); // a broken file is a start-up error, not a 500 per request
  if (!loopback && !file && !extra.length) {
    generated = randomBytes(18).toString('base64url');
    extra.push(adHocToken(generated));
  }
  return { tokens: tokenSource(file, extra), required: Boolean(file) || extra.length > 0, generated };
}
