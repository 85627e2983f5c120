import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createQuarryMcp, type McpOptions } from './quarry.ts';

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
