/**
 * `quarry/interfaces`: what keeps running — auto-sync, the HTTP API and panel, the MCP server. Separate from the
 * main entry for the same reason as `quarry/answers`.
 */
export { createMcpServer, createQuarryMcp, serveMcpHttp, serveMcpStdio } from './mcp/server.ts';
export { type Served, type ServeOptions, startServer } from './server/http.ts';
export { type AutoSync, type AutoSyncOptions, type SyncStatus, startAutoSync } from './watch/autosync.ts';
export { type LiveProject, type LiveStatus, openLiveProject } from './watch/live.ts';
