import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { announceServer } from '../host/discovery.ts';
import { checkRequest, type GuardOptions } from '../host/guard.ts';
import { checkPort, listenError } from '../host/listen.ts';
import { serverTokens } from '../host/server-tokens.ts';
import { createQuarryMcp, type McpOptions, type QuarryMcp } from './quarry.ts';

/** One HTTP request to `quarry mcp --http`: guarded, then answered by a fresh MCP server (stateless). */
async function handleMcpRequest(
  mcp: QuarryMcp | null,
  gate: GuardOptions,
  req: IncomingMessage,
  res: ServerResponse,
  log: (m: string) => void,
): Promise<void> {
  if (!mcp) {
    res.writeHead(503, { 'content-type': 'text/plain' }).end('quarry mcp: starting, try again in a moment\n');
    return;
  }
  // the same gate as quarry serve's: the Host names this server (DNS rebinding), writes from its own origin only
  // …and a token on every request (`?token=` in the URL it printed, or Authorization: Bearer)
  const queryToken = new URL(req.url ?? '/', 'http://127.0.0.1').searchParams.get('token') ?? undefined;
  const verdict = checkRequest(gate, {
    method: req.method ?? 'GET',
    path: req.url ?? '/',
    header: (name) => {
      const v = req.headers[name];
      return Array.isArray(v) ? v[0] : v;
    },
    queryToken,
  });
  if (!verdict.ok) {
    res.writeHead(verdict.status, { 'content-type': 'text/plain' }).end(`quarry mcp: ${verdict.error}\n`);
    return;
  }
  if (!req.url?.startsWith('/mcp')) {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('quarry mcp: the endpoint is /mcp\n');
    return;
  }
  const server = mcp.makeServer({ grant: verdict.grant });
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
}

/**
 * `quarry mcp --http`: streamable HTTP on 127.0.0.1 (stateless: one server per request), Host checked, and a token
 * on every request: any process on the machine can reach a loopback port, so the server has an owner. The tokens are
 * `serve`'s (`token`, a tokens file), else one made up for this run and carried by the URL it returns.
 */
export async function serveMcpHttp(
  options: McpOptions & { port?: number; token?: string; tokensFile?: string },
): Promise<{ url: string; token: string | null; server: Server; close(): Promise<void> }> {
  const log = (m: string) => process.stderr.write(`quarry mcp: ${m}\n`);
  checkPort(options.port);
  let mcp: QuarryMcp | null = null;
  const { tokens, generated } = serverTokens({
    host: '127.0.0.1',
    always: true,
    ...(options.token ? { token: options.token } : {}),
    ...(options.tokensFile ? { tokensFile: options.tokensFile } : {}),
  });
  const gate: GuardOptions = { host: '127.0.0.1', port: () => (http.address() as AddressInfo).port, tokens };
  const http = createServer((req, res) => handleMcpRequest(mcp, gate, req, res, log));
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
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp${generated ? `?token=${generated}` : ''}`;
  const forget = opened.live
    ? announceServer(opened.live.project.root, { url, kind: 'mcp', repo: opened.live.project.name })
    : () => undefined;
  return {
    url,
    token: generated,
    server: http,
    async close() {
      forget();
      await closeHttp();
      await opened.close();
    },
  };
}
