import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { serve } from '@hono/node-server';
import { type Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { streamSSE } from 'hono/streaming';
import { ask } from '../answer/ask.ts';
import { readProjectSettings, resolveConfig, writeProjectSettings } from '../config/config.ts';
import { isQuarryError, QuarryError } from '../errors.ts';
import { announceServer } from '../host/discovery.ts';
import { checkHost, checkRequest, type GuardOptions } from '../host/guard.ts';
import { checkPort, listenError, noProjectHere } from '../host/listen.ts';
import { defaultRepo, openServedSet, type ProjectSet, scopedSet, searchFilter, unwrap } from '../host/set.ts';
import {
  adHocToken,
  defaultTokensFile,
  type Grant,
  mayRead,
  readTokens,
  type TokenEntry,
} from '../host/tokens.ts';
import type { LocalProject } from '../project/local.ts';
import type { Project } from '../project/types.ts';
import { resultJson, searchMode } from '../search/search.ts';
import { storeTarget, storeTraits } from '../store/open.ts';
import type { AutoSync, SyncStatus } from '../watch/autosync.ts';
import { type LiveProject, openLiveProject } from '../watch/live.ts';
import { findProjectRoot } from '../workspace/root.ts';
import { PANEL_HTML } from './panel.ts';

export interface ServeOptions {
  root?: string;
  /** Where to look for a project (and settings) when `root` is not given. Default: the process's cwd. */
  cwd?: string;
  /** Default 127.0.0.1. Anything else needs a token (generated unless given). */
  host?: string;
  port?: number;
  /** A token that may do everything (kept in memory only). */
  token?: string;
  /**
   * A tokens file (`quarry token add`): every request must then carry one of its tokens, and sees only the
   * repositories that token names. Off loopback the user's default tokens file is used when it has tokens.
   */
  tokensFile?: string;
  watch?: boolean;
  /** Start a new index when the folder holds no project. Default false: a folder that is no project is refused. */
  init?: boolean;
  /** Relay another quarry (its HTTP API) instead of serving a store. */
  remote?: { url: string; token?: string };
  log?: (m: string) => void;
}

export interface Served {
  url: string;
  /** Set when the server generated one (a non-loopback bind with no tokens given). */
  token: string | null;
  /** The checkout this server keeps fresh, when it has one. */
  project: LocalProject | null;
  set: ProjectSet;
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
    case 'AUTH':
      return 403;
    case 'TOO_BIG':
      return 413;
    case 'LOCKED':
      return 409;
    case 'NO_INDEX':
    case 'NOT_FOUND':
      return 404;
    case 'LLM':
    case 'REMOTE':
      return 502;
    default:
      return 500;
  }
}

type Env = { Variables: { grant: Grant; set: ProjectSet } };

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

/** The panel's libraries by the name the page imports them under: the package, and the browser build inside it. */
const PANEL_ASSETS: Record<string, [string, string]> = {
  'marked.js': ['marked', 'lib/marked.esm.js'],
  'purify.js': ['dompurify', 'dist/purify.es.mjs'],
  'highlight.js': ['@highlightjs/cdn-assets', 'es/highlight.min.js'],
  'highlight.css': ['@highlightjs/cdn-assets', 'styles/github-dark.min.css'],
  'eventsource-parser.js': ['eventsource-parser', 'dist/index.js'],
};

/** A package's folder (its exports map hides the browser builds from `require.resolve`). */
function packageDir(name: string): string {
  const require = createRequire(import.meta.url);
  try {
    return dirname(require.resolve(`${name}/package.json`));
  } catch {
    // package.json not exported: walk up from the package's entry point
  }
  let dir = dirname(require.resolve(name));
  for (;;) {
    try {
      if ((JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string }).name === name)
        return dir;
    } catch {
      // no package.json here: keep walking up
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the folder of ${name}`);
    dir = parent;
  }
}
const assetCache = new Map<string, { body: string; type: string }>();

function panelAsset(name: string): { body: string; type: string } | undefined {
  const entry = Object.hasOwn(PANEL_ASSETS, name) ? PANEL_ASSETS[name] : undefined;
  if (!entry) return undefined;
  let asset = assetCache.get(name);
  if (!asset) {
    const path = join(packageDir(entry[0]), entry[1]);
    asset = {
      body: readFileSync(path, 'utf8'),
      type: name.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8',
    };
    assetCache.set(name, asset);
  }
  return asset;
}

/** The largest request body the API and /mcp read. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * `quarry serve`: the JSON API, the MCP endpoint and the web panel over the one core, on 127.0.0.1. It serves its
 * own checkout (kept fresh) and every other repository of its store. Requests must name this server in their Host
 * header (DNS rebinding), state-changing ones must come from its own origin or no browser at all, and with tokens
 * (always off loopback) each request sees only its token's repositories.
 */
export async function startServer(options: ServeOptions = {}): Promise<Served> {
  const host = options.host ?? '127.0.0.1';
  const loopback = LOOPBACK.has(host);
  const log = options.log ?? (() => {});
  const cwd = options.cwd ?? process.cwd();

  // tokens: given ones, a tokens file, or (off loopback, with neither) the user's file, else one generated
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
  const tokens = tokenSource(file, extra);
  const tokensRequired = Boolean(file) || extra.length > 0;

  checkPort(options.port);
  // the port first: a busy or bad port is an error now, before anything is opened, indexed or embedded
  let handler: ((req: Request) => Response | Promise<Response>) | null = null;
  const server = serve({
    fetch: (req) =>
      handler
        ? handler(req)
        : Response.json({ error: 'quarry is starting: try again in a moment' }, { status: 503 }),
    hostname: host,
    port: options.port ?? 0,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', () => resolve());
    server.once('error', (err) => reject(listenError(err as NodeJS.ErrnoException, host, options.port)));
  });
  const port = (server.address() as AddressInfo).port;
  const closeServer = () =>
    new Promise<void>((r) => {
      (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      server.close(() => r());
    });

  const listeners = new Set<(s: SyncStatus) => void>();
  const onStatus = (s: SyncStatus) => {
    for (const l of listeners) l(s);
  };
  let live: LiveProject | null = null;
  let set: ProjectSet;
  try {
    if (options.remote) set = await openServedSet({ remote: options.remote });
    else {
      const root = options.root ?? findProjectRoot(cwd);
      const config = resolveConfig({ root: root ?? cwd });
      if (!root && storeTraits(storeTarget(config, cwd)).registry) set = await openServedSet({ cwd });
      else {
        if (!root && !options.init) throw noProjectHere(cwd, 'serve');
        live = await openLiveProject({
          ...(options.root ? { root: options.root } : {}),
          create: true,
          ...(options.watch === false ? { watch: false } : {}),
          onStatus,
          log,
        });
        set = await openServedSet({ live });
      }
    }
  } catch (err) {
    await closeServer();
    await live?.close();
    throw err;
  }

  const gate: GuardOptions = { host, port: () => port, ...(tokensRequired ? { tokens } : {}) };
  const app = new Hono<Env>();

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
    const refused = checkHost(gate, c.req.header('host'));
    if (refused && !refused.ok) return c.text(`quarry: ${refused.error}\n`, refused.status);
    await next();
  });
  // bodies are small JSON (a question, settings, an MCP message): a larger one is refused as it arrives, not read
  // whole into memory first
  app.use(
    '*',
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: (c) =>
        c.json(
          {
            error: `request body over ${MAX_BODY_BYTES / 1024 / 1024} MiB: send less (a question, settings)`,
          },
          413,
        ),
    }),
  );
  // API and MCP: a token when tokens are on (its grant decides which repositories exist for the request); state
  // changes only from this origin (or from no browser), as JSON
  const guard = async (c: Context<Env>, next: () => Promise<void>) => {
    const verdict = checkRequest(gate, {
      method: c.req.method,
      path: c.req.path,
      header: (name) => c.req.header(name),
      queryToken: c.req.query('token'),
    });
    if (!verdict.ok) return c.json({ error: verdict.error }, verdict.status);
    const { grant } = verdict;
    c.set('grant', grant);
    c.set('set', grant.repos === '*' ? set : scopedSet(set, (r) => mayRead(grant, r)));
    await next();
  };
  app.use('/api/*', guard);
  app.use('/mcp', guard);
  app.use('/mcp/*', guard);

  const body = async (c: Context): Promise<Record<string, unknown>> => {
    let b: unknown;
    try {
      b = await c.req.json();
    } catch {
      throw new QuarryError('BAD_INPUT', 'the request body is not valid JSON');
    }
    if (typeof b !== 'object' || b === null || Array.isArray(b))
      throw new QuarryError('BAD_INPUT', 'send a JSON object');
    return b as Record<string, unknown>;
  };
  const questionOf = (b: Record<string, unknown>): string => {
    const question = str(b.question) ?? '';
    if (!question.trim()) throw new QuarryError('BAD_INPUT', 'question is empty: send {"question": "…"}');
    return question;
  };
  const repoOf = (v: unknown): string | undefined => {
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') throw new QuarryError('BAD_INPUT', 'repo must be a repository name');
    return v;
  };
  const projectFor = (c: Context<Env>, repo?: unknown) => c.get('set').get(repoOf(repo));
  const isLive = (p: Project) => live !== null && unwrap(p) === live.project;
  const statusOf = async (p: Project) => (isLive(p) ? live!.status() : p.status());
  app.get('/', (c) => c.html(PANEL_HTML));
  // the panel's libraries, from quarry's own dependencies (no CDN: the panel works offline)
  app.get('/assets/:name', (c) => {
    const asset = panelAsset(c.req.param('name'));
    if (!asset) return c.json({ error: 'no such asset' }, 404);
    return c.body(asset.body, 200, {
      'content-type': asset.type,
      'cache-control': 'public, max-age=86400',
    });
  });
  app.get('/api/repos', async (c) => {
    const repos = await c.get('set').list();
    return c.json({
      repos,
      default:
        defaultRepo(
          repos.map((r) => r.name),
          live?.project.name,
        ) ?? null,
    });
  });
  app.get('/api/status', async (c) => c.json(await statusOf(await projectFor(c, c.req.query('repo')))));

  app.get('/api/search', async (c) => {
    const q = c.req.query('q') ?? '';
    if (!q.trim()) throw new QuarryError('BAD_INPUT', 'q is empty: pass ?q=what to look for');
    const k = Number(c.req.query('k') ?? 10);
    if (!Number.isInteger(k) || k < 1 || k > 400)
      throw new QuarryError('BAD_INPUT', 'k must be a whole number from 1 to 400');
    const files = c.req.query('files') === undefined ? undefined : Number(c.req.query('files'));
    if (files !== undefined && (!Number.isInteger(files) || files < 1 || files > 400))
      throw new QuarryError('BAD_INPUT', 'files must be a whole number from 1 to 400');
    const mode = c.req.query('mode');
    const filter = searchFilter({
      pathPrefixes: c.req.queries('path'),
      languages: c.req.queries('lang'),
      paths: c.req.queries('only'),
      excludePaths: c.req.queries('exclude'),
    });
    // several repositories (repo=a&repo=b, or repo=* for all this token may see), or one
    const res = await c.get('set').search(q, {
      topK: k,
      ...(files ? { topFiles: files } : {}),
      ...(mode ? { mode: searchMode(mode) } : {}),
      ...(filter ? { filter } : {}),
      repos: c.req.queries('repo') ?? [],
    });
    const full = c.req.query('full') === '1';
    return c.json({
      query: res.query,
      mode: res.mode,
      tookMs: res.tookMs,
      // `full`: every field, for another quarry to use as its own (--remote)
      results: full ? res.results : res.results.map(resultJson),
      files: res.files,
      ...('repos' in res ? { repos: res.repos } : {}),
    });
  });

  app.post('/api/context', async (c) => {
    const b = await body(c);
    const question = questionOf(b);
    const project = await projectFor(c, b.repo);
    const num = (k: string) =>
      typeof b[k] === 'number' && Number.isFinite(b[k]) ? (b[k] as number) : undefined;
    const target =
      b.target && typeof b.target === 'object' ? (b.target as { path?: unknown; text?: unknown }) : undefined;
    const ctx = await project.context(question, {
      ...(num('budget') ? { budget: num('budget')! } : {}),
      ...(num('window') ? { window: num('window')! } : {}),
      ...(num('topK') ? { topK: num('topK')! } : {}),
      ...(b.packing === 'files' || b.packing === 'chunks' ? { packing: b.packing } : {}),
      ...(b.mode === 'hybrid' || b.mode === 'lexical' || b.mode === 'dense' ? { mode: b.mode } : {}),
      ...(str(b.model) ? { model: str(b.model)! } : {}),
      ...(str(b.system) ? { system: str(b.system)! } : {}),
      ...(b.all === true || str(b.all) ? { all: b.all as boolean | string } : {}),
      ...(Array.isArray(b.exclude)
        ? { exclude: b.exclude.filter((x): x is string => typeof x === 'string') }
        : {}),
      ...(b.noMap === true ? { noMap: true } : {}),
      ...(target && typeof target.path === 'string' && typeof target.text === 'string'
        ? { target: { path: target.path, text: target.text } }
        : {}),
    });
    // the retrieval behind it stays here: the blocks carry the text
    return c.json({ ...ctx, search: null });
  });

  app.post('/api/route', async (c) => {
    const b = await body(c);
    const question = questionOf(b);
    return c.json(await (await projectFor(c, b.repo)).route(question));
  });

  const named = (c: Context) => {
    const name = c.req.query('name') ?? '';
    if (!name.trim()) throw new QuarryError('BAD_INPUT', 'name is empty: pass ?name=parseConfig');
    return name;
  };
  app.get('/api/definitions', async (c) =>
    c.json({ definitions: await (await projectFor(c, c.req.query('repo'))).definitions(named(c)) }),
  );
  app.get('/api/references', async (c) =>
    c.json({ references: await (await projectFor(c, c.req.query('repo'))).references(named(c)) }),
  );
  app.get('/api/outline', async (c) =>
    c.json(await (await projectFor(c, c.req.query('repo'))).outline(c.req.query('path') ?? '')),
  );
  app.get('/api/map', async (c) => {
    const tokens = Number(c.req.query('tokens') ?? 2048);
    if (!Number.isInteger(tokens) || tokens < 64 || tokens > 100_000)
      throw new QuarryError('BAD_INPUT', 'tokens must be a whole number from 64 to 100000');
    const focus = c.req.queries('focus');
    return c.json(
      await (await projectFor(c, c.req.query('repo'))).repoMap({
        budget: tokens,
        ...(focus ? { focus } : {}),
      }),
    );
  });

  app.post('/api/ask', async (c) => {
    const b = await body(c);
    const question = questionOf(b);
    const project = await projectFor(c, b.repo);
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
        if (res.note) await stream.writeSSE({ event: 'note', data: res.note });
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
        // the panel has no --dry-run or --model: say what works here
        const message =
          isQuarryError(err) && err.code === 'BAD_CONFIG' && /^no model configured/.test(err.message)
            ? 'no model configured: set llm.model in the settings below (e.g. ollama:qwen2.5-coder), or QUARRY_MODEL before `quarry serve`'
            : isQuarryError(err)
              ? err.message
              : `internal error: ${(err as Error).message}`;
        await stream.writeSSE({ event: 'error', data: message });
      }
    });
  });

  app.post('/api/reindex', async (c) => {
    const b = await body(c).catch(() => ({}) as Record<string, unknown>);
    const project = await projectFor(c, b.repo);
    if (!c.get('grant').reindex)
      throw new QuarryError('AUTH', `this token may read ${project.name} but not re-index it`);
    if (!isLive(project))
      throw new QuarryError(
        'LOCKED',
        `${project.name} is indexed where it is checked out: run \`quarry index\` there (or in CI)`,
      );
    const { started, startedAt } = live!.reindex();
    return c.json({ started, startedAt }, 202);
  });

  // settings are the checkout's own file: only for a grant that sees everything and may re-index
  const settingsProject = (c: Context<Env>): LocalProject => {
    const g = c.get('grant');
    if (!live)
      throw new QuarryError('NOT_FOUND', 'this server has no checkout of its own: no settings to show');
    if (g.repos !== '*' || !g.reindex)
      throw new QuarryError('AUTH', "this token may not read or change the server's settings");
    return live.project;
  };
  app.get('/api/settings', (c) => {
    const project = settingsProject(c);
    return c.json({
      file: readProjectSettings(project.root),
      effective: {
        search: { top_k: project.config.search.topK },
        context: { packing: project.config.context.packing, budget: project.config.context.budget },
        llm: { model: project.config.llm.model ?? '' },
        embed: { provider: project.config.embed.provider },
      },
    });
  });

  app.put('/api/settings', async (c) => {
    const project = settingsProject(c);
    const b = await body(c);
    const file = writeProjectSettings(project.root, b);
    // the running server follows the file from now on
    Object.assign(project.config, resolveConfig({ root: project.root }));
    return c.json({ file });
  });

  app.get('/api/file', async (c) => {
    const project = await projectFor(c, c.req.query('repo'));
    const start = Math.max(1, Number(c.req.query('start') ?? 1) || 1);
    const endAsked = Number(c.req.query('end') ?? 0) || Number.MAX_SAFE_INTEGER;
    const slice = await project.readFile(c.req.query('path') ?? '', {
      start,
      end: Math.min(endAsked, start + MAX_FILE_LINES - 1),
    });
    return c.json(slice);
  });

  // live updates: the status whenever the auto-sync changes state, and every few seconds
  app.get('/api/events', async (c) => {
    const project = await projectFor(c, c.req.query('repo'));
    return streamSSE(c, async (stream) => {
      let open = true;
      const push = async () => {
        if (open) await stream.writeSSE({ event: 'status', data: JSON.stringify(await statusOf(project)) });
      };
      const listener = () => void push().catch(() => undefined);
      if (isLive(project)) listeners.add(listener);
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
    });
  });

  // MCP over streamable HTTP on the same port and tokens: the tools take `repo`, within the token's repositories
  app.all('/mcp', async (c) => {
    const { createMcpServer } = await import('../mcp/server.ts');
    const { WebStandardStreamableHTTPServerTransport } = await import(
      '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
    );
    const server = createMcpServer(c.get('set'));
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    const res = await transport.handleRequest(c.req.raw);
    void server.close();
    return res;
  });

  handler = app.fetch;
  const shown = host.includes(':') ? `[${host}]` : host;
  // a search in this checkout may ask this server (its model is warm) when no token is needed to
  const forget =
    live && loopback && !tokensRequired
      ? announceServer(live.project.root, { url: `http://${shown}:${port}`, kind: 'serve' })
      : () => undefined;
  return {
    url: `http://${shown}:${port}/${generated ? `?token=${generated}` : ''}`,
    token: generated,
    project: live?.project ?? null,
    set,
    sync: live?.sync ?? null,
    async close() {
      forget();
      await closeServer();
      await set.close();
      await live?.close();
    },
  };
}
