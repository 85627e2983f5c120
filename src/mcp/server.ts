import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isAbsolute, resolve } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { isQuarryError, QuarryError } from '../errors.ts';
import { announceServer } from '../host/discovery.ts';
import { checkRequest, type GuardOptions } from '../host/guard.ts';
import { checkPort, listenError, requireProject } from '../host/listen.ts';
import { openServedSet, type ProjectSet, redacting, searchFilter, unwrap } from '../host/set.ts';
import { openProject } from '../project/local.ts';
import type { Project } from '../project/types.ts';
import { resultJson, SEARCH_MODES } from '../search/search.ts';
import { type LiveProject, openLiveProject } from '../watch/live.ts';

const VERSION = '0.1.0';
/** Characters of one tool result before it is cut (with a note saying how to get the rest). */
const MAX_OUTPUT = 40_000;

type ToolResult = {
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};

/**
 * What a tool answers: compact text for the model (numbered lines, one line per hit: 35–45% fewer tokens than
 * pretty JSON, see docs/mcp.md), and the same facts as structured content for clients that read it.
 */
interface Answer {
  text: string;
  data?: Record<string, unknown>;
}

function toResult(answer: Answer | string): ToolResult {
  const a = typeof answer === 'string' ? { text: answer } : answer;
  let out = a.text;
  if (out.length > MAX_OUTPUT)
    out = `${out.slice(0, MAX_OUTPUT)}\n… [cut at ${MAX_OUTPUT} characters of ${out.length}: ask for fewer results (top_k, limit) or page with offset]`;
  return { content: [{ type: 'text', text: out }], ...(a.data ? { structuredContent: a.data } : {}) };
}

/** Lines numbered as an editor shows them. */
function numbered(first: number, lines: readonly string[]): string {
  const width = String(first + lines.length - 1).length;
  return lines.map((l, i) => `${String(first + i).padStart(width)}  ${l}`).join('\n');
}

/** How quarry's MCP server describes itself to an agent (the initialize result's `instructions`). */
export const MCP_INSTRUCTIONS = `quarry indexes this repository (tree-sitter chunks, BM25, embeddings, a symbol and reference graph) and answers from the index.
Use search_code for questions in plain words or when you do not know the names ("where are retries handled?"); it ranks code by meaning and keywords and returns path:line ranges.
Use find_symbol for a known identifier's definition and its uses, list_symbols for a file's outline, read_file to read numbered lines, repo_map for an overview of the most referenced files and definitions, get_context to get the code that answers a question within a token budget.
Use grep instead for an exact string or regular expression over every file, including files quarry does not index (ignored, generated, secret-looking).
Paths are from the repository root. Results reflect the last sync; index_status says how fresh the index is.`;

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

function failure(err: unknown): ToolResult {
  const message = isQuarryError(err) ? err.message : `internal error: ${(err as Error).message}`;
  return { content: [{ type: 'text', text: message }], isError: true };
}

export interface McpOptions {
  root?: string;
  /** Start a new index when the folder holds no project. Default false: such a folder is refused. */
  init?: boolean;
  watch?: boolean;
  remote?: { url: string; token?: string };
}

export interface QuarryMcp {
  /** The checkout kept fresh, when serving one (not when relaying another quarry). */
  live: LiveProject | null;
  set: ProjectSet;
  /** A fresh MCP server over the shared project set (one per HTTP request in stateless mode). */
  makeServer(): McpServer;
  close(): Promise<void>;
}

const repoArg = z
  .string()
  .optional()
  .describe('Which repository, when the server holds several (see list_repos); default: its own');

export interface McpServerOptions {
  /**
   * Let a call name another indexed project on this machine (`root`). Only for `quarry mcp`, which runs as the user
   * for one user; a shared server (`quarry serve`'s /mcp, with tokens) never opens folders a caller names.
   */
  allowRoot?: boolean;
}

/** The MCP tools over a set of repositories (one, or what a token may see): each tool calls the Project seam. */
export function createMcpServer(set: ProjectSet, options: McpServerOptions = {}): McpServer {
  const server = new McpServer({ name: 'quarry', version: VERSION }, { instructions: MCP_INSTRUCTIONS });
  const run = async (fn: () => Promise<Answer | string>): Promise<ToolResult> => {
    try {
      return toResult(await fn());
    } catch (err) {
      return failure(err);
    }
  };
  // projects named by `root`, opened once (read-only use: an index must already be there)
  const byRoot = new Map<string, Promise<Project>>();
  const projectOf = async (repo: string | undefined, root: string | undefined): Promise<Project> => {
    if (root === undefined) return set.get(repo);
    if (!options.allowRoot)
      throw new QuarryError(
        'BAD_INPUT',
        'this server does not open other folders: use repo (see list_repos)',
      );
    if (!isAbsolute(root)) throw new QuarryError('BAD_INPUT', `root must be an absolute path, not ${root}`);
    const key = resolve(root);
    if (set.live && key === set.live.project.root) return redacting(set.live.project);
    let opened = byRoot.get(key);
    if (!opened) {
      opened = openProject({ root: key }).then(redacting);
      byRoot.set(key, opened);
      opened.catch(() => byRoot.delete(key));
    }
    return opened;
  };
  server.server.onclose = () => {
    for (const p of byRoot.values()) void p.then((x) => x.close()).catch(() => undefined);
    byRoot.clear();
  };
  const rootArg = z
    .string()
    .optional()
    .describe(
      options.allowRoot
        ? 'Another indexed project on this machine, by absolute path (default: the one this server was started in)'
        : 'Not available on this server',
    );

  server.registerTool(
    'search_code',
    {
      title: 'Search the code',
      description:
        'Search this repository for code relevant to a question or identifier (hybrid: keywords, file and symbol names, and meaning). Returns chunks with path, line range, enclosing symbol, score and a short snippet. Use it to find where something is implemented before reading files; ask in plain words or with identifiers.',
      inputSchema: {
        query: z.string().min(1).describe('What to look for: a question, identifiers, an error message'),
        top_k: z.number().int().min(1).max(50).default(10).describe('Chunks to return (1-50)'),
        mode: z
          .enum(['hybrid', 'lexical', 'dense'])
          .optional()
          .describe('Retrieval mode; default hybrid when vectors exist'),
        path: z
          .array(z.string())
          .optional()
          .describe('Only files under these path prefixes, e.g. ["src/server"]'),
        language: z
          .array(z.string())
          .optional()
          .describe('Only these languages, e.g. ["typescript", "python"]'),
        repo: z
          .string()
          .optional()
          .describe('Which repository (see list_repos); "*" searches every one; default: the server\'s own'),
        root: rootArg,
      },
      annotations: { title: 'Search the code', ...READ_ONLY },
    },
    ({ query, top_k, mode, path, language, repo, root }) =>
      run(async () => {
        const filter = searchFilter({ pathPrefixes: path, languages: language });
        const options = { topK: top_k, ...(mode ? { mode } : {}), ...(filter ? { filter } : {}) };
        // one repository (by name or root), or every one (`*`); snippets come redacted by each one's settings
        const res =
          root === undefined
            ? await set.search(query, { ...options, repos: repo ? [repo] : [] })
            : await (await projectOf(repo, root)).search(query, options);
        const results = res.results.map(resultJson);
        const lines = [
          results.length
            ? `${results.length} result${results.length === 1 ? '' : 's'} (${res.mode}) for "${query}":`
            : `no match for "${query}" (${res.mode}): try other words, or find_symbol for an exact name`,
        ];
        for (const r of results) {
          const sym = r.symbol ? ` ${r.kind ?? 'symbol'} ${r.symbol}` : '';
          lines.push(
            `\n${r.repo ? `${r.repo}:` : ''}${r.path}:${r.startLine}-${r.endLine}${sym} (score ${r.score})`,
            numbered(r.snippetLine, r.snippet.split('\n')),
          );
        }
        return {
          text: lines.join('\n'),
          data: { query, mode: res.mode, results, files: res.files.slice(0, 10) },
        };
      }),
  );

  server.registerTool(
    'get_context',
    {
      title: 'Get context for a question',
      description:
        'Assemble the code context that answers a question, within a token budget: files the question names, then the most relevant code (whole files or chunks with surrounding lines), a repository map, each block labelled [n] path:start-end for citation. The same prompt `quarry ask --dry-run` prints; use it when you need to read the relevant code itself.',
      inputSchema: {
        question: z.string().min(1).describe('The question or task'),
        budget: z.number().int().min(500).max(200_000).default(8000).describe('Token budget for the context'),
        packing: z.enum(['chunks', 'files']).optional().describe('chunks (default) or whole files'),
        mode: z.enum(SEARCH_MODES).optional(),
        all: z
          .string()
          .optional()
          .describe(
            'Send every indexed file matching this mask (e.g. "src/**/*.ts") instead of retrieving; refused if over budget',
          ),
        repo: repoArg,
        root: rootArg,
      },
      annotations: { title: 'Get context for a question', ...READ_ONLY },
    },
    ({ question, budget, packing, mode, all, repo, root }) =>
      run(async () => {
        const ctx = await (await projectOf(repo, root)).context(question, {
          budget,
          ...(packing ? { packing } : {}),
          ...(mode ? { mode } : {}),
          ...(all ? { all } : {}),
        });
        const sources = ctx.blocks.map(
          (b) => `[${b.n}] ${b.path}:${b.startLine}-${b.endLine} (${b.tokens} tokens)`,
        );
        return {
          text: `${ctx.user}\n\n---\nsources:\n${sources.join('\n')}\n${ctx.tokens.prompt} prompt tokens, budget ${ctx.budget.hard}`,
          data: {
            sources: ctx.blocks.map(({ n, path, startLine, endLine, tokens }) => ({
              n,
              path,
              startLine,
              endLine,
              tokens,
            })),
            promptTokens: ctx.tokens.prompt,
            budget: ctx.budget.hard,
          },
        };
      }),
  );

  server.registerTool(
    'find_symbol',
    {
      title: 'Find a symbol',
      description:
        'Where a function, class, method or variable is defined, and where its name is used (identifier occurrences with line numbers). Accepts qualified names like Indexer.run. References are paginated: pass offset to see more.',
      inputSchema: {
        name: z.string().min(1).describe('The symbol, e.g. parseConfig or Indexer.run'),
        references: z.boolean().default(true).describe('Also list where the name is used'),
        offset: z.number().int().min(0).default(0).describe('First reference file to return'),
        limit: z.number().int().min(1).max(200).default(50).describe('Reference files per call'),
        repo: repoArg,
        root: rootArg,
      },
      annotations: { title: 'Find a symbol', ...READ_ONLY },
    },
    ({ name, references, offset, limit, repo, root }) =>
      run(async () => {
        const project = await projectOf(repo, root);
        const definitions = await project.definitions(name);
        const out: Record<string, unknown> = {
          name,
          definitions: definitions.map(({ path, startLine, endLine, kind, container, name: n }) => ({
            name: n,
            kind,
            container,
            path,
            startLine,
            endLine,
          })),
        };
        if (references) {
          const refs = await project.references(name);
          out.references = refs.slice(offset, offset + limit).map(({ path, lines }) => ({ path, lines }));
          out.referenceFiles = refs.length;
          if (offset + limit < refs.length) out.next = `call again with offset ${offset + limit} for more`;
        }
        if (!definitions.length && !(out.referenceFiles as number))
          out.note = `nothing named ${name} in the index: try search_code`;
        const defs = out.definitions as Array<{
          name: string;
          kind: string;
          container: string | null;
          path: string;
          startLine: number;
          endLine: number;
        }>;
        const lines = [
          defs.length ? `definitions of ${name}:` : `no definition of ${name}`,
          ...defs.map(
            (d) =>
              `${d.path}:${d.startLine}-${d.endLine} ${d.kind} ${d.container ? `${d.container}.` : ''}${d.name}`,
          ),
        ];
        if (references) {
          const refs = out.references as Array<{ path: string; lines: number[] }>;
          lines.push(
            `references: ${out.referenceFiles} file${out.referenceFiles === 1 ? '' : 's'}${refs.length < (out.referenceFiles as number) ? ` (${offset + 1}-${offset + refs.length} shown)` : ''}`,
            ...refs.map((r) => `${r.path}: ${r.lines.join(', ')}`),
          );
          if (out.next) lines.push(String(out.next));
        }
        if (out.note) lines.push(String(out.note));
        return { text: lines.join('\n'), data: out };
      }),
  );

  server.registerTool(
    'list_symbols',
    {
      title: 'List the symbols of a file',
      description:
        "The definitions in one file (functions, classes, methods, types, with line ranges and enclosing symbol), and its top-level variables and constants. Use it to see a file's outline before reading it.",
      inputSchema: {
        path: z.string().min(1).describe('A path from the repository root, e.g. src/api.ts'),
        repo: repoArg,
        root: rootArg,
      },
      annotations: { title: 'List the symbols of a file', ...READ_ONLY },
    },
    ({ path, repo, root }) =>
      run(async () => {
        const o = await (await projectOf(repo, root)).outline(path);
        const symbols = o.symbols.map(({ name, kind, container, startLine, endLine }) => ({
          name,
          kind,
          container,
          startLine,
          endLine,
        }));
        const lines = [
          `${o.path}: ${symbols.length} definition${symbols.length === 1 ? '' : 's'}, ${o.variables.length} top-level variable${o.variables.length === 1 ? '' : 's'}`,
          ...symbols.map(
            (d) => `${d.startLine}-${d.endLine} ${d.kind} ${d.container ? `${d.container}.` : ''}${d.name}`,
          ),
          ...o.variables.map((v) => `${v.line} ${v.kind} ${v.name}`),
        ];
        return { text: lines.join('\n'), data: { path: o.path, symbols, variables: o.variables } };
      }),
  );

  server.registerTool(
    'read_file',
    {
      title: 'Read an indexed file',
      description:
        'Lines of a file as the index holds it, numbered, from start to end (at most 2,000 lines per call). Only indexed files can be read.',
      inputSchema: {
        path: z.string().min(1).describe('A path from the repository root, e.g. src/api.ts'),
        start: z.number().int().min(1).default(1).describe('First line (1-based)'),
        end: z.number().int().min(1).optional().describe('Last line (default: start + 1999)'),
        repo: repoArg,
        root: rootArg,
      },
      annotations: { title: 'Read an indexed file', ...READ_ONLY },
    },
    ({ path, start, end, repo, root }) =>
      run(async () => {
        const project = await projectOf(repo, root);
        const read = await project.readFile(path, {
          start,
          end: Math.min(end ?? start + 1999, start + 1999),
        });
        // what an agent reads goes to its model: secrets inside the file come replaced, line for line (the set's view)
        const slice = read;
        const body = numbered(slice.start, slice.lines);
        const more =
          slice.end < slice.total
            ? `\n… lines ${slice.end + 1}-${slice.total} remain: call again with start ${slice.end + 1}`
            : '';
        return {
          text: `${slice.path}:${slice.start}-${slice.end} of ${slice.total}\n${body}${more}`,
          data: {
            path: slice.path,
            start: slice.start,
            end: slice.end,
            total: slice.total,
            lines: slice.lines,
          },
        };
      }),
  );

  server.registerTool(
    'list_repos',
    {
      title: 'List repositories',
      description:
        'The repositories this server holds (name, files, chunks, last indexed, branch and commit). Pass a name as `repo` to the other tools.',
      inputSchema: {},
      annotations: { title: 'List repositories', ...READ_ONLY },
    },
    () =>
      run(async () => {
        const repos = await set.list();
        const lines = repos.map(
          (r) =>
            `${r.name}: ${r.files} files, ${r.chunks} chunks, updated ${r.lastIndexedAt ?? 'never'}${r.git?.commit ? `, ${r.git.branch ?? 'detached'}@${r.git.commit.slice(0, 12)}` : ''}`,
        );
        return { text: lines.join('\n') || 'no repositories', data: { repos } };
      }),
  );

  server.registerTool(
    'repo_map',
    {
      title: 'Map of the repository',
      description:
        "An overview of the repository within a token budget: its most referenced files, each with its key definitions (signatures, line numbers), ranked by PageRank over who uses whose names (Aider's repository map). Use it first in an unfamiliar repository; focus leans the ranking toward files you are working on.",
      inputSchema: {
        budget: z.number().int().min(200).max(20_000).default(2000).describe('Tokens the map may use'),
        focus: z
          .array(z.string())
          .optional()
          .describe('Paths the ranking leans toward, e.g. ["src/server.ts"]'),
        repo: repoArg,
        root: rootArg,
      },
      annotations: { title: 'Map of the repository', ...READ_ONLY },
    },
    ({ budget, focus, repo, root }) =>
      run(async () => {
        const map = await (await projectOf(repo, root)).repoMap({ budget, ...(focus ? { focus } : {}) });
        return {
          text: `${map.text}${map.omitted ? `\n… ${map.omitted} more files with definitions: raise budget to see them` : ''}`,
          data: {
            files: map.entries.map((e) => e.path),
            tokens: map.tokens,
            omitted: map.omitted,
          },
        };
      }),
  );

  server.registerTool(
    'index_status',
    {
      title: 'Index status',
      description:
        'How complete and fresh the index is: files and chunks indexed, files changed on disk but not yet indexed, embedding progress (phase 1: a vector per file, phase 2: per chunk), the last sync, and whether a re-index is running.',
      inputSchema: { repo: repoArg },
      annotations: { title: 'Index status', ...READ_ONLY },
    },
    ({ repo }) =>
      run(async () => {
        const project = await set.get(repo);
        const st = (set.live && unwrap(project) === set.live.project
          ? await set.live.status()
          : await project.status()) as unknown as Record<string, unknown>;
        return { text: flatText(st), data: st };
      }),
  );

  server.registerTool(
    'reindex',
    {
      title: 'Re-index',
      description:
        'Bring the index up to date with the files on disk (incremental: only changed files are read). If a re-index is already running, reports that one instead of starting another. Usually unnecessary: the index follows file saves by itself.',
      inputSchema: { wait: z.boolean().default(true).describe('Wait for the lexical update to finish') },
      annotations: {
        title: 'Re-index',
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    ({ wait }) =>
      run(async () => {
        const live = set.live;
        if (!live)
          throw new QuarryError(
            'LOCKED',
            'this server has no checkout to re-index: the repositories are indexed where they are checked out',
          );
        const r = live.reindex();
        if (!r.started)
          return {
            text: `a re-index is already running (since ${r.startedAt}): call index_status to follow it`,
            data: { status: 'already running', startedAt: r.startedAt },
          };
        if (wait) await r.done;
        const stats = await live.project.store.stats();
        const status = wait ? 'done' : 'started';
        return {
          text: `re-index ${status}: ${stats.files} files, ${stats.chunks} chunks`,
          data: { status, startedAt: r.startedAt, files: stats.files, chunks: stats.chunks },
        };
      }),
  );
  return server;
}

/** An object as `key: value` lines (nested objects flattened with dots): status reports for an agent. */
function flatText(value: Record<string, unknown>, prefix = ''): string {
  const lines: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    if (v && typeof v === 'object' && !Array.isArray(v))
      lines.push(flatText(v as Record<string, unknown>, `${prefix}${k}.`));
    else if (Array.isArray(v))
      lines.push(
        `${prefix}${k}: ${v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(', ')}`,
      );
    else lines.push(`${prefix}${k}: ${v === null ? '-' : String(v)}`);
  }
  return lines.filter(Boolean).join('\n');
}

/** Opens the project (or relays a remote one), keeps it fresh, and builds MCP servers whose tools call the core. */
export async function createQuarryMcp(
  options: McpOptions & { log?: (m: string) => void },
): Promise<QuarryMcp> {
  if (!options.remote) requireProject(process.cwd(), 'mcp', options);
  const live = options.remote ? null : await openLiveProject({ ...options, create: true });
  const set = await openServedSet(options.remote ? { remote: options.remote } : { live });
  return {
    live,
    set,
    makeServer: () => createMcpServer(set, { allowRoot: !options.remote }),
    async close() {
      await set.close();
      await live?.close();
    },
  };
}

/** `quarry mcp`: the MCP server over stdio. Nothing but the protocol goes to stdout. */
export async function serveMcpStdio(options: McpOptions): Promise<void> {
  const log = (m: string) => process.stderr.write(`quarry mcp: ${m}\n`);
  const mcp = await createQuarryMcp({ ...options, log });
  const server = mcp.makeServer();
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.on('end', () => resolve());
  });
  await server.connect(transport);
  await closed;
  await mcp.close();
}

/** `quarry mcp --http`: streamable HTTP on 127.0.0.1 (stateless: one server per request), Host checked. */
export async function serveMcpHttp(
  options: McpOptions & { port?: number },
): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const log = (m: string) => process.stderr.write(`quarry mcp: ${m}\n`);
  checkPort(options.port);
  let mcp: QuarryMcp | null = null;
  const gate: GuardOptions = { host: '127.0.0.1', port: () => (http.address() as AddressInfo).port };
  const http = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    if (!mcp) {
      res
        .writeHead(503, { 'content-type': 'text/plain' })
        .end('quarry mcp: starting, try again in a moment\n');
      return;
    }
    // the same gate as quarry serve's: the Host names this server (DNS rebinding), writes from its own origin only
    const verdict = checkRequest(gate, {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      header: (name) => {
        const v = req.headers[name];
        return Array.isArray(v) ? v[0] : v;
      },
    });
    if (!verdict.ok) {
      res.writeHead(verdict.status, { 'content-type': 'text/plain' }).end(`quarry mcp: ${verdict.error}\n`);
      return;
    }
    if (!req.url?.startsWith('/mcp')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('quarry mcp: the endpoint is /mcp\n');
      return;
    }
    const server = mcp.makeServer();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res);
    } catch (err) {
      log(String(err));
      if (!res.headersSent) res.writeHead(500).end();
    }
  });
  // the port first: a busy port is a one-line error before the project is opened or indexed
  await new Promise<void>((resolve, reject) => {
    http.once('error', (err) => reject(listenError(err as NodeJS.ErrnoException, '127.0.0.1', options.port)));
    http.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const closeHttp = () =>
    new Promise<void>((r) => {
      http.closeAllConnections();
      http.close(() => r());
    });
  try {
    mcp = await createQuarryMcp({ ...options, log });
  } catch (err) {
    await closeHttp();
    throw err;
  }
  const opened = mcp;
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  const forget = opened.live
    ? announceServer(opened.live.project.root, { url, kind: 'mcp' })
    : () => undefined;
  return {
    url,
    server: http,
    async close() {
      forget();
      await closeHttp();
      await opened.close();
    },
  };
}
