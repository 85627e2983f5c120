import type { RouteResult } from '../answer/router.ts';
import { type QuarryConfig, resolveConfig } from '../config/config.ts';
import type { AssembledContext, AssembleOptions } from '../context/assemble.ts';
import type { RepoMap } from '../context/repomap.ts';
import { QuarryError, type QuarryErrorCode } from '../errors.ts';
import { type HttpAgents, type HttpAnswer, HttpFailure, httpRequest } from '../net/http-request.ts';
import type { GrepQuery, GrepResponse } from '../search/grep.ts';
import type { SearchResponse } from '../search/search.ts';
import type { RefHit, RepoInfo, SymbolHit } from '../store/types.ts';
import type {
  FileSlice,
  IndexStatus,
  NearestQuery,
  NearestResponse,
  Outline,
  Project,
  ProjectSearchOptions,
} from './types.ts';

export interface RemoteOptions {
  /** `http://host:7411/` (the URL `quarry serve` prints, `?token=` included or not). */
  url: string;
  /** Default: the URL's `token` parameter, else `QUARRY_TOKEN`. */
  token?: string;
  /** The repository to open. Default: the server's default (its own checkout, or its only repository). */
  repo?: string;
  /** This machine's settings (the model and context preferences); default: resolved from `cwd`. */
  config?: QuarryConfig;
  /** Per request, ms. Default 60 s (a context for a large budget takes a while on a busy server). */
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
  /**
   * The repository's name is known (a server announced it for this checkout): skip the status call that checks the
   * server and learns the name up front (on a large index it costs more than a search); the first call checks instead.
   */
  known?: boolean;
}

const STATUS_CODES: Record<number, QuarryErrorCode> = {
  400: 'BAD_INPUT',
  401: 'AUTH',
  403: 'AUTH',
  404: 'NOT_FOUND',
  409: 'LOCKED',
  413: 'TOO_BIG',
  502: 'LLM',
  503: 'IO',
};

/**
 * How long a call waits for the server: `QUARRY_REMOTE_TIMEOUT` seconds, default 60 (a context for a large budget on
 * a busy server takes a while; a frozen one is said in one line once it passes).
 */
export function remoteTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.QUARRY_REMOTE_TIMEOUT;
  if (raw === undefined || raw === '') return 60_000;
  const s = Number(raw);
  if (!Number.isFinite(s) || s <= 0 || s > 3600)
    throw new QuarryError('BAD_CONFIG', `QUARRY_REMOTE_TIMEOUT must be seconds from 1 to 3600, not "${raw}"`);
  return s * 1000;
}

/**
 * A client of another quarry's HTTP API: what `quarry serve` offers, one request per call, no state between but
 * kept-alive sockets.
 */
export class RemoteClient {
  readonly base: URL;
  readonly shown: string;
  private readonly token: string | undefined;
  private readonly timeoutMs: number;
  private readonly agents: HttpAgents = {};

  constructor(url: string, token?: string, timeoutMs?: number, env: NodeJS.ProcessEnv = process.env) {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new QuarryError('BAD_INPUT', `${url} is not a URL: pass --remote http://host:7411/`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw new QuarryError('BAD_INPUT', `--remote takes an http(s) URL, not ${u.protocol}`);
    this.token = token ?? u.searchParams.get('token') ?? env.QUARRY_TOKEN ?? undefined;
    u.search = '';
    u.hash = '';
    if (!u.pathname.endsWith('/')) u.pathname += '/';
    this.base = u;
    this.shown = u.toString();
    this.timeoutMs = timeoutMs ?? remoteTimeoutMs(env);
  }

  /** Calls `api/<path>`; a non-2xx answer becomes a QuarryError with the server's one-line message. */
  async call<T>(
    path: string,
    init: { query?: Record<string, string | string[] | undefined>; body?: unknown } = {},
  ): Promise<T> {
    const url = new URL(`api/${path}`, this.base);
    for (const [k, v] of Object.entries(init.query ?? {}))
      for (const one of Array.isArray(v) ? v : v === undefined ? [] : [v]) url.searchParams.append(k, one);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    let res: HttpAnswer | undefined;
    // every call reads (nothing here changes the server's state), so a kept-alive socket that the server closed
    // as it was reused is retried once on a fresh one
    for (let attempt = 0; !res; attempt++) {
      try {
        res = await httpRequest(
          url,
          {
            method: init.body === undefined ? 'GET' : 'POST',
            headers,
            ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
            timeoutMs: this.timeoutMs,
          },
          this.agents,
        );
      } catch (err) {
        const cause = err instanceof HttpFailure ? err.code : (err as Error).name;
        if (attempt === 0 && (cause === 'ECONNRESET' || cause === 'EPIPE')) continue;
        throw new QuarryError(
          'REMOTE',
          cause === 'Timeout'
            ? `quarry at ${this.shown} did not answer within ${Math.round(this.timeoutMs / 1000)} s: try again, or check the server`
            : `cannot reach quarry at ${this.shown} (${cause}): is \`quarry serve\` running there?`,
          { cause: err },
        );
      }
    }
    const { text } = res;
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : {};
    } catch {
      throw new QuarryError(
        'REMOTE',
        `${this.shown} answered ${res.status} with something that is not quarry's API: check the URL`,
      );
    }
    if (res.status < 200 || res.status > 299) {
      const message = (body as { error?: string }).error ?? `HTTP ${res.status}`;
      throw new QuarryError(
        STATUS_CODES[res.status] ?? 'REMOTE',
        res.status === 503
          ? `${this.shown} is up, but the store it reads is not (${message}): try again once it is back`
          : `${this.shown}: ${message}`,
      );
    }
    return body as T;
  }
}

/** A repository behind another quarry's HTTP API, as a Project: the same calls, answered there. */
export async function openRemoteProject(options: RemoteOptions): Promise<Project> {
  if (isMcpUrl(options.url)) {
    const { openMcpProject } = await import('./mcp-remote.ts');
    return openMcpProject(options);
  }
  const client = new RemoteClient(options.url, options.token, options.timeoutMs, options.env);
  const config =
    options.config ?? resolveConfig({ root: process.cwd(), ...(options.env ? { env: options.env } : {}) });
  // one call up front: the server is there, the token works, the repository exists (one-line errors if not);
  // a server announced for this checkout named its repository, and its first answer checks the rest
  const repo =
    options.known && options.repo
      ? options.repo
      : (await client.call<IndexStatus>('status', { query: { repo: options.repo } })).repo;
  const q = { repo };
  return {
    name: repo,
    location: `${client.shown}#${repo}`,
    remote: true,
    config,
    search: (query: string, o: ProjectSearchOptions = {}) =>
      client.call<SearchResponse>('search', {
        query: {
          ...q,
          q: query,
          full: '1',
          ...(o.topK ? { k: String(o.topK) } : {}),
          ...(o.topFiles ? { files: String(o.topFiles) } : {}),
          ...(o.mode ? { mode: o.mode } : {}),
          path: o.filter?.pathPrefixes,
          lang: o.filter?.languages,
          only: o.filter?.paths,
          exclude: o.filter?.excludePaths,
        },
      }),
    context: (question: string, o: AssembleOptions = {}) =>
      client.call<AssembledContext>('context', {
        body: {
          ...o,
          repo,
          question,
          // the budget follows this machine's settings and model, as it would for a local index
          ...(o.packing ? {} : { packing: config.context.packing }),
          ...(o.system ? {} : config.context.systemPrompt ? { system: config.context.systemPrompt } : {}),
          ...(o.budget || !(config.context.budget > 0) ? {} : { budget: config.context.budget }),
          ...(o.model ? {} : config.llm.model ? { model: config.llm.model } : {}),
        },
      }),
    route: (question: string) => client.call<RouteResult>('route', { body: { repo, question } }),
    grep: (query: GrepQuery) => client.call<GrepResponse>('grep', { body: { ...query, repo } }),
    nearest: (query: NearestQuery) => client.call<NearestResponse>('nearest', { body: { ...query, repo } }),
    definitions: async (name: string, o: { limit?: number } = {}) =>
      (
        await client.call<{ definitions: SymbolHit[] }>('definitions', {
          query: { ...q, name, ...(o.limit !== undefined ? { limit: String(o.limit) } : {}) },
        })
      ).definitions,
    references: async (name: string, o: { limit?: number } = {}) =>
      (
        await client.call<{ references: RefHit[] }>('references', {
          query: { ...q, name, ...(o.limit !== undefined ? { limit: String(o.limit) } : {}) },
        })
      ).references,
    outline: (path: string) => client.call<Outline>('outline', { query: { ...q, path } }),
    readFile: (path: string, range: { start?: number; end?: number } = {}) =>
      client.call<FileSlice>('file', {
        query: {
          ...q,
          path,
          ...(range.start ? { start: String(range.start) } : {}),
          ...(range.end ? { end: String(range.end) } : {}),
        },
      }),
    repoMap: (o: { budget: number; focus?: string[]; question?: string }) =>
      client.call<RepoMap>('map', {
        query: { ...q, tokens: String(o.budget), focus: o.focus, ...(o.question ? { q: o.question } : {}) },
      }),
    status: () => client.call<IndexStatus>('status', { query: q }),
    repos: async () => (await client.call<{ repos: RepoInfo[] }>('repos')).repos,
    close: async () => {},
  };
}

/** A URL whose path ends in `/mcp` names an MCP server (streamable HTTP); any other, quarry's HTTP API. */
export function isMcpUrl(url: string): boolean {
  try {
    return /\/mcp\/?$/.test(new URL(url).pathname);
  } catch {
    return false;
  }
}

/** The repositories a remote quarry (HTTP API or MCP) offers, without opening one. */
export async function remoteRepos(url: string, token?: string): Promise<RepoInfo[]> {
  if (isMcpUrl(url)) {
    const { openMcpProject } = await import('./mcp-remote.ts');
    const p = await openMcpProject({ url, ...(token ? { token } : {}) });
    try {
      return await p.repos();
    } finally {
      await p.close();
    }
  }
  return (await new RemoteClient(url, token).call<{ repos: RepoInfo[] }>('repos')).repos;
}
