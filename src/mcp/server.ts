/**
 * quarry's MCP face: the tools (one file each under tools/, registered by make-server.ts), the served project set
 * (quarry.ts), and its transports (stdio.ts, http.ts). Other modules import these names from here.
 */
export { serveMcpHttp } from './http.ts';
export { createMcpServer, MCP_INSTRUCTIONS, type McpServerOptions } from './make-server.ts';
export { createQuarryMcp, type McpOptions, type QuarryMcp } from './quarry.ts';
export { serveMcpStdio } from './stdio.ts';
