import type { Context } from 'hono';
import type { Env } from '../request.ts';

/** /mcp: MCP over streamable HTTP on the same port and tokens: the tools take `repo`, within the token's repositories. */
export async function mcp(c: Context<Env>): Promise<Response> {
  const { createMcpServer } = await import('../../mcp/server.ts');
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
}
