import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type QuarryConfig, resolveConfig } from '../config/config.ts';
import {
  type AssembledContext,
  type AssembleOptions,
  type ContextBlock,
  contextBudget,
  DEFAULT_SYSTEM_PROMPT,
  renderBlock,
} from '../context/assemble.ts';
import { QuarryError } from '../errors.ts';
import { countTokens } from '../llm/tokens.ts';
import type { GrepMatch, GrepQuery, GrepResponse } from '../search/grep.ts';
import type { SearchResponse, SearchResult } from '../search/search.ts';
import type { RefHit, RepoInfo, SymbolHit } from '../store/types.ts';
import {
  type FileSlice,
  type IndexStatus,
  type NearestQuery,
  type NearestResponse,
  type Outline,
  type Project,
  type ProjectSearchOptions,
  STRUCTURED_META,
} from './types.ts';

export interface McpRemoteOptions {
  /** The server's streamable HTTP endpoint (`http://host:port/mcp`). */
  url: string;
  token?: string;
  repo?: string;
  config?: QuarryConfig;
  env?: NodeJS.ProcessEnv;
}

type ToolResult = {
  content?: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};

/** A tool's answer: its text, and its structured content when the server sends it (quarry does). */
interface Reply {
  text: string;
  data: Record<string, unknown> | undefined;
}

const NO_SIGNALS = { lexical: 0, fileLexical: 0, fileHint: 0, symbolHint: 0, dense: 0 };

/**
 * A repository behind an MCP server, as a Project. Against another quarry (`quarry mcp --http`, `quarry serve`'s
 * `/mcp`) every call maps onto a tool of the same meaning and answers exactly as the HTTP API does. Against any other
 * server that offers `search_code`, search returns what it says (its text, when it is not quarry's JSON) and the
 * context is built from those results; what it lacks (definitions, a map) is refused in one line.
 */
export async function openMcpProject(options: McpRemoteOptions): Promise<Project> {
  const env = options.env ?? process.env;
  const u = new URL(options.url);
  const token = options.token ?? u.searchParams.get('token') ?? env.QUARRY_TOKEN ?? undefined;
  u.searchParams.delete('token');
  const shown = `${u.origin}${u.pathname}`;
  const config = options.config ?? resolveConfig({ root: process.cwd(), env });
  const server = await McpConnection.connect(u, token, shown, options.repo);

  const project: Project = {
    name: options.repo ?? shown,
    location: `${shown}${options.repo ? `#${options.repo}` : ''}`,
    remote: true,
    config,
    search: (query, o) => remoteSearch(server, config, query, o),
    context: (question, o) => remoteContext(server, config, question, o),
    // structure questions go to retrieval over MCP: find_symbol and list_symbols answer them when asked directly
    route: async () => null,
    definitions: (name, o) => remoteDefinitions(server, name, o?.limit ?? 200),
    references: (name, o) => remoteReferences(server, name, o?.limit ?? 500),
    grep: (q) => remoteGrep(server, q),
    nearest: (q) => remoteNearest(server, q),
    outline: (path) => remoteOutline(server, path),
    readFile: (path, range) => remoteReadFile(server, path, range),
    repoMap: async () => {
      throw new QuarryError(
        'BAD_INPUT',
        `the MCP server at ${shown} offers no repository map: use --remote with its HTTP URL`,
      );
    },
    status: () => remoteStatus(server),
    repos: () => remoteRepos(server, project),
    close: () => server.close(),
  };
  return project;
}

type Tool = Awaited<ReturnType<Client['listTools']>>['tools'][number];

/** The connected MCP server: the tools it offers, and calls to them whose failures read as one line. */
class McpConnection {
  /** The server's address without its token, as messages show it. */
  readonly shown: string;
  private readonly client: Client;
  private readonly tools: Map<string, Tool>;
  private readonly repo: string | undefined;

  private constructor(client: Client, tools: Map<string, Tool>, shown: string, repo: string | undefined) {
    this.client = client;
    this.tools = tools;
    this.shown = shown;
    this.repo = repo;
  }

  /** Connects and lists the tools; a server without `search_code` is refused. */
  static async connect(u: URL, token: string | undefined, shown: string, repo: string | undefined) {
    const client = new Client({ name: 'quarry', version: '0.1.0' });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(u, {
          requestInit: { headers: token ? { authorization: `Bearer ${token}` } : {} },
        }),
      );
    } catch (err) {
      throw connectionError(err, 'connecting', shown);
    }
    const tools = new Map(
      (
        await client.listTools().catch((e) => Promise.reject(connectionError(e, 'listing tools', shown)))
      ).tools.map((t) => [t.name, t]),
    );
    if (!tools.has('search_code')) {
      await client.close();
      throw new QuarryError(
        'REMOTE',
        `${shown} offers no search_code tool: it is not a code-search MCP server`,
      );
    }
    return new McpConnection(client, tools, shown, repo);
  }

  has(tool: string): boolean {
    return this.tools.has(tool);
  }

  private takesRepo(tool: string): boolean {
    return Boolean(
      (this.tools.get(tool)?.inputSchema as { properties?: Record<string, unknown> })?.properties?.repo,
    );
  }

  async call(tool: string, args: Record<string, unknown>): Promise<Reply> {
    const shown = this.shown;
    if (!this.tools.has(tool))
      throw new QuarryError(
        'BAD_INPUT',
        `the MCP server at ${shown} offers no ${tool} tool: ask it another way`,
      );
    let res: ToolResult;
    try {
      res = (await this.client.callTool({
        name: tool,
        arguments: { ...args, ...(this.repo && this.takesRepo(tool) ? { repo: this.repo } : {}) },
        // a quarry server adds the facts as structured content for us (others ignore the key)
        _meta: { [STRUCTURED_META]: true },
      })) as ToolResult;
    } catch (err) {
      throw connectionError(err, `calling ${tool}`, shown);
    }
    const text = (res.content ?? []).map((c) => c.text ?? '').join('\n');
    if (res.isError) {
      const firstLine = text.split('\n')[0] ?? '';
      throw new QuarryError(
        /no repository|not in the index|not an indexed file/.test(firstLine) ? 'NOT_FOUND' : 'REMOTE',
        `${shown}: ${firstLine}`,
      );
    }
    return { text, data: res.structuredContent };
  }

  close(): Promise<void> {
    return this.client.close();
  }
}

function connectionError(err: unknown, doing: string, shown: string): QuarryError {
  const m = String((err as Error)?.message ?? err);
  if (/\b401\b|\b403\b/.test(m))
    return new QuarryError(
      'AUTH',
      `${shown} refused the token while ${doing}: pass a valid one (?token= or QUARRY_TOKEN)`,
    );
  return new QuarryError(
    'REMOTE',
    `cannot reach the MCP server at ${shown} while ${doing}: ${m.split('\n')[0]}`,
    {
      cause: err,
    },
  );
}

// structured content first; then JSON text (quarry before compact answers); else undefined (a foreign server)
function json<T>(reply: Reply): T | undefined {
  if (reply.data) return reply.data as T;
  try {
    return JSON.parse(reply.text) as T;
  } catch {
    return undefined;
  }
}

async function remoteSearch(
  server: McpConnection,
  config: QuarryConfig,
  query: string,
  o: ProjectSearchOptions = {},
): Promise<SearchResponse> {
  const started = performance.now();
  const reply = await server.call('search_code', {
    query,
    top_k: Math.min(50, o.topK ?? config.search.topK),
    ...(o.mode ? { mode: o.mode } : {}),
    ...(o.filter?.pathPrefixes ? { path: o.filter.pathPrefixes } : {}),
    ...(o.filter?.languages ? { language: o.filter.languages } : {}),
  });
  const parsed = json<{
    mode?: SearchResponse['mode'];
    results?: SearchResult[];
    files?: SearchResponse['files'];
  }>(reply);
  const text = reply.text;
  if (parsed?.results)
    return {
      query,
      mode: parsed.mode ?? 'hybrid',
      results: parsed.results.map((r) => ({ ...r, signals: NO_SIGNALS, chunkId: -1 })),
      files: parsed.files ?? [],
      tookMs: performance.now() - started,
    };
  // another server's own format: its answer as one result
  return {
    query,
    mode: 'hybrid',
    results: text.trim() ? [wholeAnswer(server.shown, text)] : [],
    files: [],
    tookMs: performance.now() - started,
  };
}

/** Another server's answer, in its own format, as one search result. */
function wholeAnswer(shown: string, text: string): SearchResult {
  const lines = text.split('\n');
  return {
    path: shown,
    startLine: 1,
    endLine: lines.length,
    symbol: null,
    kind: null,
    score: 1,
    snippet: text,
    snippetLine: 1,
    line: 1,
    column: 1,
    signals: NO_SIGNALS,
    chunkId: -1,
  };
}

async function remoteContext(
  server: McpConnection,
  config: QuarryConfig,
  question: string,
  o: AssembleOptions = {},
): Promise<AssembledContext> {
  const system = o.system ?? config.context.systemPrompt ?? DEFAULT_SYSTEM_PROMPT;
  const hard = contextBudget({ config } as Parameters<typeof contextBudget>[0], o);
  if (server.has('get_context')) return serverContext(server, config, question, o, system, hard);
  return contextFromSearch(server, config, question, o, system, hard);
}

/** The context as the server's get_context assembles it; its sources list gives the blocks (without their text). */
async function serverContext(
  server: McpConnection,
  config: QuarryConfig,
  question: string,
  o: AssembleOptions,
  system: string,
  hard: number,
): Promise<AssembledContext> {
  const packing = o.packing ?? config.context.packing;
  const { text } = await server.call('get_context', {
    question,
    budget: Math.max(500, hard),
    packing,
    ...(o.mode ? { mode: o.mode } : {}),
    ...(typeof o.all === 'string' ? { all: o.all } : o.all ? { all: '**' } : {}),
  });
  const at = text.lastIndexOf('\n\n---\nsources:\n');
  const user = at >= 0 ? text.slice(0, at) : text;
  const tail = at >= 0 ? text.slice(at) : '';
  const blocks: ContextBlock[] = [];
  for (const m of tail.matchAll(/^\[(\d+)\] (.+):(\d+)-(\d+) \((\d+) tokens\)$/gm))
    blocks.push({
      n: Number(m[1]),
      path: m[2]!,
      startLine: Number(m[3]),
      endLine: Number(m[4]),
      tokens: Number(m[5]),
      text: '',
      reason: 'retrieved',
    });
  const budget = Number(/budget (\d+)\s*$/.exec(tail)?.[1] ?? hard);
  const blockTokens = blocks.reduce((t, b) => t + b.tokens, 0);
  return {
    question,
    packing,
    budget: { hard: budget, soft: Math.floor(budget * config.context.softRatio), map: 0 },
    blocks,
    map: null,
    skipped: [],
    tokens: { blocks: blockTokens, map: 0, prompt: countTokens(system) + countTokens(user) },
    system,
    user,
    search: null,
  };
}

/** A server without get_context: its search results, in rank order, while they fit. */
async function contextFromSearch(
  server: McpConnection,
  config: QuarryConfig,
  question: string,
  o: AssembleOptions,
  system: string,
  hard: number,
): Promise<AssembledContext> {
  const res = await remoteSearch(server, config, question, { topK: 50, ...(o.mode ? { mode: o.mode } : {}) });
  const blocks: ContextBlock[] = [];
  let used = 0;
  for (const r of res.results) {
    const b = {
      n: blocks.length + 1,
      path: r.path,
      startLine: r.startLine,
      endLine: r.endLine,
      text: r.snippet,
    };
    const tokens = countTokens(renderBlock(b));
    if (used + tokens > hard) continue;
    blocks.push({ ...b, tokens, reason: 'retrieved' });
    used += tokens;
  }
  const user = `${blocks.length ? `Context:\n${blocks.map(renderBlock).join('\n')}` : 'Context: (nothing in the index matched the question)'}\nQuestion: ${question}`;
  return {
    question,
    packing: 'chunks',
    budget: { hard, soft: hard, map: 0 },
    blocks,
    map: null,
    skipped: [],
    tokens: { blocks: used, map: 0, prompt: countTokens(system) + countTokens(user) },
    system,
    user,
    search: res,
  };
}

/** Another server's `find_symbol` definitions (quarry's lists at most 200 of them). */
async function remoteDefinitions(server: McpConnection, name: string, limit: number): Promise<SymbolHit[]> {
  const out = json<{ definitions?: SymbolHit[] }>(
    await server.call('find_symbol', { name, references: false }),
  );
  return (out?.definitions ?? []).slice(0, limit).map((d) => ({ ...d, chunkId: null }));
}

/** Another server's `grep` tool (quarry's text: `path:line:column:text` per match, context lines left out). */
async function remoteGrep(server: McpConnection, q: GrepQuery): Promise<GrepResponse> {
  const limit = Math.min(q.limit ?? 500, 500);
  const reply = await server.call('grep', {
    pattern: q.pattern,
    fixed: q.fixed ?? false,
    ignore_case: q.ignoreCase ?? false,
    word: q.word ?? false,
    ...(q.globs ? { glob: q.globs } : {}),
    ...(q.types ? { type: q.types } : {}),
    ...(q.filter?.pathPrefixes ? { path: q.filter.pathPrefixes } : {}),
    limit,
  });
  const matches: GrepMatch[] = [];
  for (const line of reply.text.split('\n')) {
    const m = /^(.+?):(\d+):(\d+):(.*)$/.exec(line);
    if (!m) continue;
    const column = Number(m[3]);
    matches.push({
      path: m[1] as string,
      line: Number(m[2]),
      column,
      text: m[4] as string,
      ranges: [],
      before: [],
      after: [],
    });
  }
  return {
    pattern: q.pattern,
    matches,
    files: new Set(matches.map((m) => m.path)).size,
    scanned: 0,
    indexed: true,
    truncated: /more exist/.test(reply.text),
  };
}

/** Another quarry's `nearest_vectors` tool (its structured content: the hits with their cosine similarity). */
async function remoteNearest(server: McpConnection, q: NearestQuery): Promise<NearestResponse> {
  const f = q.filter ?? {};
  const reply = await server.call('nearest_vectors', {
    embedder: q.embedder,
    vector: q.vector,
    level: q.level,
    limit: q.limit,
    ...(f.paths?.length ? { paths: f.paths } : {}),
    ...(f.pathPrefixes?.length ? { path_prefixes: f.pathPrefixes } : {}),
    ...(f.languages?.length ? { languages: f.languages } : {}),
    ...(f.excludePaths?.length ? { exclude_paths: f.excludePaths } : {}),
  });
  const out = json<NearestResponse>(reply);
  if (!out || !Array.isArray(out.hits))
    throw new QuarryError('REMOTE', `${server.shown}: nearest_vectors answered without its hits`);
  return out;
}

/** Another server's `find_symbol` references, page by page (200 files each) until `limit` files or the last page. */
async function remoteReferences(server: McpConnection, name: string, limit: number): Promise<RefHit[]> {
  const refs: RefHit[] = [];
  while (refs.length < limit) {
    const out = json<{ references?: Array<Omit<RefHit, 'name'>>; next?: string }>(
      await server.call('find_symbol', {
        name,
        references: true,
        offset: refs.length,
        limit: Math.min(200, limit - refs.length),
      }),
    );
    const page = out?.references ?? [];
    refs.push(...page.map((r) => ({ ...r, name })));
    if (!page.length || !out?.next) break;
  }
  return refs;
}

async function remoteOutline(server: McpConnection, path: string): Promise<Outline> {
  const out = json<{
    path: string;
    symbols: Array<Omit<SymbolHit, 'path' | 'chunkId'>>;
    variables: Outline['variables'];
  }>(await server.call('list_symbols', { path }));
  if (!out)
    throw new QuarryError('REMOTE', `${server.shown}: list_symbols did not answer in quarry's format`);
  return {
    path: out.path,
    symbols: out.symbols.map((s) => ({ ...s, path: out.path, chunkId: null })),
    variables: out.variables ?? [],
  };
}

async function remoteReadFile(
  server: McpConnection,
  path: string,
  range: { start?: number; end?: number } = {},
): Promise<FileSlice> {
  const reply = await server.call('read_file', {
    path,
    start: range.start ?? 1,
    ...(range.end ? { end: range.end } : {}),
  });
  const data = json<FileSlice>(reply);
  if (data?.lines) return data;
  const [head, ...rest] = reply.text.split('\n');
  const m = /^(.+):(\d+)-(\d+) of (\d+)$/.exec(head ?? '');
  if (!m) throw new QuarryError('REMOTE', `${server.shown}: read_file did not answer in quarry's format`);
  const lines = rest.filter((l) => !l.startsWith('… lines ')).map((l) => l.replace(/^\s*\d+ {2}/, ''));
  return { path: m[1]!, start: Number(m[2]), end: Number(m[3]), total: Number(m[4]), lines };
}

async function remoteStatus(server: McpConnection): Promise<IndexStatus> {
  const out = json<IndexStatus>(await server.call('index_status', {}));
  if (!out)
    throw new QuarryError('REMOTE', `${server.shown}: index_status did not answer in quarry's format`);
  return out;
}

async function remoteRepos(server: McpConnection, project: Project): Promise<RepoInfo[]> {
  if (!server.has('list_repos')) {
    const st = await project.status().catch(() => null);
    return [
      {
        name: project.name,
        files: st?.files ?? 0,
        chunks: st?.chunks ?? 0,
        bytes: 0,
        lastIndexedAt: st?.lastIndexedAt ?? null,
        embedder: st?.embedding?.embedder?.id ?? null,
        git: null,
        source: null,
      },
    ];
  }
  return json<{ repos: RepoInfo[] }>(await server.call('list_repos', {}))?.repos ?? [];
}
