import { randomBytes, timingSafeEqual } from 'node:crypto';
import { lstatSync, readFileSync, realpathSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join, sep } from 'node:path';
import { serve } from '@hono/node-server';
import { type Context, Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { ask } from '../answer/ask.ts';
import { type Project, searchProject } from '../api.ts';
import { readProjectSettings, resolveConfig, writeProjectSettings } from '../config/config.ts';
import { assembleContext } from '../context/assemble.ts';
import { isQuarryError, QuarryError } from '../errors.ts';
import { resultJson, type SearchMode } from '../search/search.ts';
import type { AutoSync, SyncStatus } from '../watch/autosync.ts';
import { openLiveProject } from '../watch/live.ts';
import { PANEL_HTML } from './panel.ts';

export interface ServeOptions {
  root?: string;
  /** Default 127.0.0.1. Anything else needs a token (generated unless given). */
  host?: string;
  port?: number;
  token?: string;
  watch?: boolean;
  log?: (m: string) => void;
}

export interface Served {
  url: string;
  /** Set when the server needs one (a non-loopback bind). */
  token: string | null;
  project: Project;
  sync: AutoSync | null;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);
const MAX_FILE_LINES = 5000;

function httpStatus(err: unknown): number {
  if (!isQuarryError(err)) return 500;
  switch (err.code) {
    case 'BAD_INPUT':
    case 'BAD_CONFIG':
      return 400;
    case 'TOO_BIG':
      return 413;
    case 'LOCKED':
      return 409;
    case 'NO_INDEX':
      return 404;
    case 'LLM':
      return 502;
    default:
      return 500;
  }
}

/** A path as the index knows it: relative, POSIX, no `..`, no empty or dot segments. */
function cleanRelPath(raw: string | undefined): string | null {
  if (!raw || raw.includes('\0') || raw.includes('\\')) return null;
  if (raw.startsWith('/')) return null;
  const parts = raw.split('/');
  if (parts.some((p) => p === '' || p === '.' || p === '..')) return null;
  return raw;
}

/**
 * `quarry serve`: the JSON API and the web panel over the one core, on 127.0.0.1. Requests must name this server in
 * their Host header (DNS rebinding), state-changing ones must come from its own origin, and a non-loopback bind
 * requires a token on every API call.
 */
export async function startServer(options: ServeOptions = {}): Promise<Served> {
  const host = options.host ?? '127.0.0.1';
  const loopback = LOOPBACK.has(host);
  const token = loopback ? (options.token ?? null) : (options.token ?? randomBytes(18).toString('base64url'));
  const log = options.log ?? (() => {});
  const listeners = new Set<(s: SyncStatus) => void>();
  const live = await openLiveProject({
    ...(options.root ? { root: options.root } : {}),
    ...(options.watch === false ? { watch: false } : {}),
    onStatus: (s) => {
      for (const l of listeners) l(s);
    },
    log,
  });
  const { project } = live;

  let port = 0;
  const allowedHosts = () => {
    const names = loopback ? ['127.0.0.1', 'localhost', '[::1]'] : [host.includes(':') ? `[${host}]` : host];
    return new Set(names.map((n) => `${n}:${port}`));
  };
  const app = new Hono();

  app.onError((err, c) => {
    if (!isQuarryError(err)) log(String(err.stack ?? err));
    return c.json(
      { error: isQuarryError(err) ? err.message : `internal error: ${err.message}` },
      httpStatus(err) as 500,
    );
  });

  // every request: the Host header must name this server (a rebinding page would send its own name); on a
  // non-loopback bind the names are the machine's, unknown here, and the token does that job
  app.use('*', async (c, next) => {
    const h = (c.req.header('host') ?? '').toLowerCase();
    if (loopback && !allowedHosts().has(h)) return c.text('quarry: wrong Host header\n', 403);
    await next();
  });
  // API: a token when one is set; state changes only from this origin, as JSON
  app.use('/api/*', async (c, next) => {
    if (token) {
      const given = c.req.header('x-quarry-token') ?? c.req.query('token') ?? '';
      const a = Buffer.from(given);
      const b = Buffer.from(token);
      if (a.length !== b.length || !timingSafeEqual(a, b))
        return c.json({ error: 'a token is required: open the URL quarry serve printed' }, 401);
    }
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      const origin = c.req.header('origin');
      const self = new URL(c.req.url).origin;
      if (origin && origin !== self) return c.json({ error: 'cross-origin request refused' }, 403);
      if (!(c.req.header('content-type') ?? '').startsWith('application/json'))
        return c.json({ error: 'send JSON (Content-Type: application/json)' }, 415);
    }
    await next();
  });

  const body = async (c: Context): Promise<Record<string, unknown>> => {
    try {
      return ((await c.req.json()) ?? {}) as Record<string, unknown>;
    } catch {
      throw new QuarryError('BAD_INPUT', 'the request body is not valid JSON');
    }
  };

  const statusJson = () => live.status();

  app.get('/', (c) => c.html(PANEL_HTML));
  app.get('/api/status', async (c) => c.json(await statusJson()));

  app.get('/api/search', async (c) => {
    const q = c.req.query('q') ?? '';
    if (!q.trim()) throw new QuarryError('BAD_INPUT', 'q is empty: pass ?q=what to look for');
    const k = Number(c.req.query('k') ?? project.config.search.topK);
    if (!Number.isInteger(k) || k < 1 || k > 100)
      throw new QuarryError('BAD_INPUT', 'k must be a whole number from 1 to 100');
    const mode = c.req.query('mode');
    if (mode && !['hybrid', 'lexical', 'dense'].includes(mode))
      throw new QuarryError('BAD_INPUT', 'mode must be hybrid, lexical or dense');
    const res = await searchProject(project, q, { topK: k, ...(mode ? { mode: mode as SearchMode } : {}) });
    return c.json({
      query: res.query,
      mode: res.mode,
      tookMs: res.tookMs,
      results: res.results.map(resultJson),
      files: res.files,
    });
  });

  app.post('/api/context', async (c) => {
    const b = await body(c);
    const question = String(b.question ?? '');
    if (!question.trim()) throw new QuarryError('BAD_INPUT', 'question is empty');
    const ctx = await assembleContext(project, question, {
      ...(typeof b.budget === 'number' ? { budget: b.budget } : {}),
      ...(b.packing === 'files' || b.packing === 'chunks' ? { packing: b.packing } : {}),
    });
    return c.json({
      system: ctx.system,
      user: ctx.user,
      tokens: ctx.tokens,
      budget: ctx.budget,
      blocks: ctx.blocks,
    });
  });

  app.post('/api/ask', async (c) => {
    const b = await body(c);
    const question = String(b.question ?? '');
    if (!question.trim()) throw new QuarryError('BAD_INPUT', 'question is empty');
    return streamSSE(c, async (stream) => {
      const abort = new AbortController();
      stream.onAbort(() => abort.abort());
      try {
        const res = await ask(project, question, {
          signal: abort.signal,
          ...(typeof b.model === 'string' && b.model ? { model: b.model } : {}),
        });
        if (res.routed) {
          await stream.writeSSE({ event: 'routed', data: JSON.stringify(res.routed) });
          await stream.writeSSE({ event: 'done', data: '{}' });
          return;
        }
        if (res.fallback) await stream.writeSSE({ event: 'note', data: res.fallback });
        await stream.writeSSE({
          event: 'sources',
          data: JSON.stringify(
            res.context!.blocks.map(({ n, path, startLine, endLine, tokens }) => ({
              n,
              path,
              startLine,
              endLine,
              tokens,
            })),
          ),
        });
        for await (const piece of res.stream!)
          await stream.writeSSE({ event: 'token', data: JSON.stringify(piece) });
        await stream.writeSSE({ event: 'done', data: JSON.stringify({ model: res.model }) });
      } catch (err) {
        await stream.writeSSE({
          event: 'error',
          data: isQuarryError(err) ? err.message : `internal error: ${(err as Error).message}`,
        });
      }
    });
  });

  app.post('/api/reindex', (c) => {
    const { started, startedAt } = live.reindex();
    return c.json({ started, startedAt }, 202);
  });

  app.get('/api/settings', (c) =>
    c.json({
      file: readProjectSettings(project.root),
      effective: {
        search: { top_k: project.config.search.topK },
        context: { packing: project.config.context.packing, budget: project.config.context.budget },
        llm: { model: project.config.llm.model ?? '' },
        embed: { provider: project.config.embed.provider },
      },
    }),
  );

  app.put('/api/settings', async (c) => {
    const b = await body(c);
    if (typeof b !== 'object' || Array.isArray(b))
      throw new QuarryError('BAD_INPUT', 'send an object of settings');
    const file = writeProjectSettings(project.root, b);
    // the running server follows the file from now on
    Object.assign(project.config, resolveConfig({ root: project.root }));
    return c.json({ file });
  });

  app.get('/api/file', async (c) => {
    const rel = cleanRelPath(c.req.query('path'));
    if (!rel) return c.json({ error: 'path must be a file path from the project root' }, 400);
    // only files the index holds: never an arbitrary path, never through a symlink
    if (!(await project.store.getFile(rel))) return c.json({ error: `${rel} is not an indexed file` }, 404);
    const abs = join(project.root, rel);
    let real: string;
    try {
      if (lstatSync(abs).isSymbolicLink()) return c.json({ error: `${rel} is a symbolic link` }, 403);
      real = realpathSync(abs);
    } catch {
      return c.json({ error: `${rel} is gone from disk: re-index` }, 404);
    }
    if (!real.startsWith(realpathSync(project.root) + sep))
      return c.json({ error: 'outside the project' }, 403);
    const lines = readFileSync(real, 'utf8').split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    const start = Math.max(1, Number(c.req.query('start') ?? 1) || 1);
    const end = Math.min(
      lines.length,
      Number(c.req.query('end') ?? lines.length) || lines.length,
      start + MAX_FILE_LINES - 1,
    );
    return c.json({ path: rel, start, end, total: lines.length, lines: lines.slice(start - 1, end) });
  });

  // live updates: the status whenever the auto-sync changes state, and every few seconds
  app.get('/api/events', (c) =>
    streamSSE(c, async (stream) => {
      let open = true;
      const push = async () => {
        if (open) await stream.writeSSE({ event: 'status', data: JSON.stringify(await statusJson()) });
      };
      const listener = () => void push().catch(() => undefined);
      listeners.add(listener);
      stream.onAbort(() => {
        open = false;
        listeners.delete(listener);
      });
      await push();
      while (open) {
        await stream.sleep(3000);
        await push().catch(() => {
          open = false;
        });
      }
      listeners.delete(listener);
    }),
  );

  const server = serve({ fetch: app.fetch, hostname: host, port: options.port ?? 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', () => resolve());
    server.once('error', (err) =>
      reject(
        (err as NodeJS.ErrnoException).code === 'EADDRINUSE'
          ? new QuarryError('IO', `port ${options.port} is in use: pick another with --port`)
          : err,
      ),
    );
  });
  port = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/${token ? `?token=${token}` : ''}`,
    token,
    project,
    sync: live.sync,
    async close() {
      await new Promise<void>((r) => {
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => r());
      });
      await live.close();
    },
  };
}
