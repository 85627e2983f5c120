import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { requireProject } from '../host/listen.ts';
import { openServedSet, type ProjectSet } from '../host/set.ts';
import { type LiveProject, openLiveProject } from '../watch/live.ts';
import { createMcpServer } from './make-server.ts';

export interface McpOptions {
  root?: string;
  /** Start a new index when the folder holds no project. Default false: such a folder is refused. */
  init?: boolean;
  watch?: boolean;
  remote?: { url: string; token?: string; overlayRoot?: string };
}

export interface QuarryMcp {
  /** The checkout kept fresh, when serving one (not when relaying another quarry). */
  live: LiveProject | null;
  set: ProjectSet;
  /** A fresh MCP server over the shared project set (one per HTTP request in stateless mode). */
  makeServer(): McpServer;
  close(): Promise<void>;
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
