import { checkToken, FULL_GRANT, type Grant, type TokenEntry } from './tokens.ts';

/**
 * The one gate every server face puts in front of its tools (the HTTP API, its `/mcp`, and `quarry mcp --http`):
 * the Host header must name this server (a DNS-rebinding page sends its own name), a state-changing request must
 * come from this server's own origin or from no browser at all, and when tokens are on each request carries one,
 * whose grant decides which repositories exist for it.
 */
export interface GuardOptions {
  /** The address the server listens on. */
  host: string;
  /** Its port, once it listens. */
  port(): number;
  /** The tokens accepted now (re-read as their file changes); none means tokens are off. */
  tokens?: () => TokenEntry[];
}

/** What a face passes in: the request's method, path and headers (lower-case names), and its query token. */
export interface GuardRequest {
  method: string;
  path: string;
  header(name: string): string | undefined;
  queryToken?: string | undefined;
}

export type GuardVerdict =
  | { ok: true; grant: Grant }
  | { ok: false; status: 401 | 403 | 415; error: string; where: 'host' | 'token' | 'origin' | 'type' };

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host);
}

/** The Host header values that name this server: its loopback names, or the address it was bound to. */
function allowedHosts(options: GuardOptions): Set<string> {
  const names = isLoopback(options.host)
    ? ['127.0.0.1', 'localhost', '[::1]']
    : [options.host.includes(':') ? `[${options.host}]` : options.host];
  return new Set(names.map((n) => `${n}:${options.port()}`));
}

/**
 * The Host check alone (every request, the panel's page included). On a non-loopback bind the names are the
 * machine's, unknown here, and the token does that job.
 */
export function checkHost(options: GuardOptions, host: string | undefined): GuardVerdict | null {
  if (!isLoopback(options.host)) return null;
  if (allowedHosts(options).has((host ?? '').toLowerCase())) return null;
  return { ok: false, status: 403, error: 'wrong Host header', where: 'host' };
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'DELETE']);

/**
 * The whole gate for the API and MCP: Host, token, origin, and JSON for the API's writes. MCP speaks JSON-RPC and
 * sets its own content type, so `/mcp` is spared only the content-type rule.
 */
export function checkRequest(options: GuardOptions, req: GuardRequest): GuardVerdict {
  const host = checkHost(options, req.header('host'));
  if (host) return host;
  let grant: Grant = FULL_GRANT;
  const accepted = options.tokens?.() ?? [];
  if (options.tokens) {
    const bearer = /^Bearer\s+(.+)$/i.exec(req.header('authorization') ?? '')?.[1];
    const given = (bearer ?? req.header('x-quarry-token') ?? req.queryToken ?? '').trim();
    const found = checkToken(accepted, given);
    if (!found)
      return {
        ok: false,
        status: 401,
        where: 'token',
        error: given
          ? 'this token is not valid here: ask for a new one (quarry token add)'
          : 'a token is required: open the URL quarry serve printed, or send Authorization: Bearer <token>',
      };
    grant = found;
  }
  if (!SAFE_METHODS.has(req.method)) {
    const origin = req.header('origin');
    const self = `http://${req.header('host') ?? ''}`.toLowerCase();
    if (origin && origin.toLowerCase() !== self)
      return { ok: false, status: 403, error: 'cross-origin request refused', where: 'origin' };
    if (!req.path.startsWith('/mcp') && !(req.header('content-type') ?? '').startsWith('application/json'))
      return { ok: false, status: 415, error: 'send JSON (Content-Type: application/json)', where: 'type' };
  }
  return { ok: true, grant };
}
