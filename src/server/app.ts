import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { MiddlewareHandler } from 'hono/types';
import { isQuarryError, knownError, publicMessage } from '../errors.ts';
import { checkHost, checkRequest, type GuardOptions } from '../host/guard.ts';
import { grantedSet, type ProjectSet } from '../host/set.ts';
import { type Env, httpStatus, type LiveHooks } from './request.ts';
import { ROUTES } from './routes/index.ts';

/** The largest request body the API and /mcp read. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

// every request: the Host header must name this server (a rebinding page would send its own name); on a
// non-loopback bind the names are the machine's, unknown here, and the token does that job
function hostCheck(gate: GuardOptions): MiddlewareHandler<Env> {
  return async (c, next) => {
    const refused = checkHost(gate, c.req.header('host'));
    if (refused && !refused.ok) return c.text(`quarry: ${refused.error}\n`, refused.status);
    await next();
  };
}

// bodies are small JSON (a question, settings, an MCP message): a larger one is refused as it arrives, not read
// whole into memory first
function limitBody(): MiddlewareHandler<Env> {
  return bodyLimit({
    maxSize: MAX_BODY_BYTES,
    onError: (c) =>
      c.json(
        { error: `request body over ${MAX_BODY_BYTES / 1024 / 1024} MiB: send less (a question, settings)` },
        413,
      ),
  });
}

// API and MCP: a token when tokens are on (its grant decides which repositories exist for the request); state
// changes only from this origin (or from no browser), as JSON
function guard(gate: GuardOptions, set: ProjectSet, hooks: LiveHooks): MiddlewareHandler<Env> {
  return async (c, next) => {
    const verdict = checkRequest(gate, {
      method: c.req.method,
      path: c.req.path,
      header: (name) => c.req.header(name),
      queryToken: c.req.query('token'),
    });
    if (!verdict.ok) return c.json({ error: verdict.error }, verdict.status);
    const { grant } = verdict;
    c.set('grant', grant);
    c.set('set', grantedSet(set, grant));
    c.set('hooks', hooks);
    await next();
  };
}

/** The server's app: the Host check, the body limit, the guard in front of the API and MCP, then every route. */
export function createApp(
  gate: GuardOptions,
  set: ProjectSet,
  hooks: LiveHooks,
  log: (m: string) => void,
): Hono<Env> {
  const app = new Hono<Env>();
  app.onError((raw, c) => {
    const err = knownError(raw) as Error;
    if (!isQuarryError(err) || err.code === 'IO') log(String(err.stack ?? err));
    return c.json({ error: publicMessage(err) }, httpStatus(err) as 500);
  });
  app.use('*', hostCheck(gate));
  app.use('*', limitBody());
  const guarded = guard(gate, set, hooks);
  app.use('/api/*', guarded);
  app.use('/mcp', guarded);
  app.use('/mcp/*', guarded);
  for (const { method, path, handler } of ROUTES) app.on(method, path, handler);
  return app;
}
