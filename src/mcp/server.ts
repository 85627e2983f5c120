import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { isQuarryError, QuarryError } from '../errors.ts';
import { openServedSet, type ProjectSet, searchMany } from '../project/set.ts';
import { resultJson } from '../search/search.ts';
import { checkPort, listenError, noProjectHere } from '../server/listen.ts';
import { type LiveProject, openLiveProject } from '../watch/live.ts';
import { findProjectRoot } from '../workspace/root.ts';

const VERSION = '0.1.0';
/** Characters of one tool result before it is cut (with a note saying how to get the rest). */
const MAX_OUTPUT = 40_000;

type ToolResult = { content: Array<{ type: 'text'; text: string }>; isError?: boolean };

function text(value: unknown): ToolResult {
  let out = typeof value === 'string' ? value : JSON.stringify(value, null, 1);
  if (out.length > MAX_OUTPUT)
    out = `${out.slice(0, MAX_OUTPUT)}\n… [cut at ${MAX_OUTPUT} characters of ${out.length}: ask for fewer results (top_k, limit) or page with offset]`;
  return { content: [{ type: 'text', text: out }] };
}

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

/** The MCP tools over a set of repositories (one, or what a token may see): each tool calls the Project seam. */
export function createMcpServer(set: ProjectSet): McpServer {
  const server = new McpServer({ name: 'quarry', version: VERSION });
  const run = async (fn: () => Promise<unknown>): Promise<ToolResult> => {
    try {
      return text(await fn());
    } catch (err) {
      return failure(err);
    }
  };

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
      },
    },
    ({ query, top_k, mode, path, language, repo }) =>
      run(async () => {
        const options = {
          topK: top_k,
          ...(mode ? { mode } : {}),
          filter: { ...(path ? { pathPrefixes: path } : {}), ...(language ? { languages: language } : {}) },
        };
        const res =
          repo === '*'
            ? await searchMany(
                await Promise.all((await set.list()).map((r) => set.get(r.name))),
                query,
                options,
              )
            : await (await set.get(repo)).search(query, options);
        return {
          query,
          mode: res.mode,
          results: res.results.map(resultJson),
          files: res.files.slice(0, 10),
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
        mode: z.enum(['hybrid', 'lexical', 'dense']).optional(),
        all: z
          .string()
          .optional()
          .describe(
            'Send every indexed file matching this mask (e.g. "src/**/*.ts") instead of retrieving; refused if over budget',
          ),
        repo: repoArg,
      },
    },
    ({ question, budget, packing, mode, all, repo }) =>
      run(async () => {
        const ctx = await (await set.get(repo)).context(question, {
          budget,
          ...(packing ? { packing } : {}),
          ...(mode ? { mode } : {}),
          ...(all ? { all } : {}),
        });
        const sources = ctx.blocks.map(
          (b) => `[${b.n}] ${b.path}:${b.startLine}-${b.endLine} (${b.tokens} tokens)`,
        );
        return `${ctx.user}\n\n---\nsources:\n${sources.join('\n')}\n${ctx.tokens.prompt} prompt tokens, budget ${ctx.budget.hard}`;
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
      },
    },
    ({ name, references, offset, limit, repo }) =>
      run(async () => {
        const project = await set.get(repo);
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
        return out;
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
      },
    },
    ({ path, repo }) =>
      run(async () => {
        const o = await (await set.get(repo)).outline(path);
        return {
          path: o.path,
          symbols: o.symbols.map(({ name, kind, container, startLine, endLine }) => ({
            name,
            kind,
            container,
            startLine,
            endLine,
          })),
          variables: o.variables,
        };
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
      },
    },
    ({ path, start, end, repo }) =>
      run(async () => {
        const slice = await (await set.get(repo)).readFile(path, {
          start,
          end: Math.min(end ?? start + 1999, start + 1999),
        });
        const width = String(slice.end).length;
        const body = slice.lines.map((l, i) => `${String(slice.start + i).padStart(width)}  ${l}`).join('\n');
        const more =
          slice.end < slice.total
            ? `\n… lines ${slice.end + 1}-${slice.total} remain: call again with start ${slice.end + 1}`
            : '';
        return `${slice.path}:${slice.start}-${slice.end} of ${slice.total}\n${body}${more}`;
      }),
  );

  server.registerTool(
    'list_repos',
    {
      title: 'List repositories',
      description:
        'The repositories this server holds (name, files, chunks, last indexed, branch and commit). Pass a name as `repo` to the other tools.',
      inputSchema: {},
    },
    () => run(async () => ({ repos: await set.list() })),
  );

  server.registerTool(
    'index_status',
    {
      title: 'Index status',
      description:
        'How complete and fresh the index is: files and chunks indexed, files changed on disk but not yet indexed, embedding progress (phase 1: a vector per file, phase 2: per chunk), the last sync, and whether a re-index is running.',
      inputSchema: { repo: repoArg },
    },
    ({ repo }) =>
      run(async () => {
        const project = await set.get(repo);
        return set.live && project === set.live.project ? set.live.status() : project.status();
      }),
  );

  server.registerTool(
    'reindex',
    {
      title: 'Re-index',
      description:
        'Bring the index up to date with the files on disk (incremental: only changed files are read). If a re-index is already running, reports that one instead of starting another. Usually unnecessary: the index follows file saves by itself.',
      inputSchema: { wait: z.boolean().default(true).describe('Wait for the lexical update to finish') },
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
            status: 'already running',
            startedAt: r.startedAt,
            note: 'call index_status to follow it',
          };
        if (wait) await r.done;
        const stats = await live.project.store.stats();
        return {
          status: wait ? 'done' : 'started',
          startedAt: r.startedAt,
          files: stats.files,
          chunks: stats.chunks,
        };
      }),
  );
  return server;
}

/** Opens the project (or relays a remote one), keeps it fresh, and builds MCP servers whose tools call the core. */
export async function createQuarryMcp(
  options: McpOptions & { log?: (m: string) => void },
): Promise<QuarryMcp> {
  if (!options.remote && !options.root && !options.init && !findProjectRoot(process.cwd()))
    throw noProjectHere(process.cwd(), 'mcp');
  const live = options.remote ? null : await openLiveProject({ ...options, create: true });
  const set = await openServedSet(options.remote ? { remote: options.remote } : { live });
  return {
    live,
    set,
    makeServer: () => createMcpServer(set),
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

const LOOPBACK_HOSTS = /^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/i;

/** `quarry mcp --http`: streamable HTTP on 127.0.0.1 (stateless: one server per request), Host checked. */
export async function serveMcpHttp(
  options: McpOptions & { port?: number },
): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const log = (m: string) => process.stderr.write(`quarry mcp: ${m}\n`);
  checkPort(options.port);
  let mcp: QuarryMcp | null = null;
  const http = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    if (!mcp) {
      res
        .writeHead(503, { 'content-type': 'text/plain' })
        .end('quarry mcp: starting, try again in a moment\n');
      return;
    }
    // DNS rebinding: a page on another name that resolves to 127.0.0.1 must not reach the tools
    if (!LOOPBACK_HOSTS.test(req.headers.host ?? '')) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end('quarry mcp: wrong Host header\n');
      return;
    }
    const origin = req.headers.origin;
    if (origin && !/^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/i.test(origin)) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end('quarry mcp: cross-origin request refused\n');
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
  return {
    url,
    server: http,
    async close() {
      await closeHttp();
      await opened.close();
    },
  };
}
