import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { openServing } from '../host/serve.ts';
import type { ProjectSet } from '../host/set.ts';
import type { Grant } from '../host/tokens.ts';
import type { LiveProject } from '../watch/live.ts';
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
  /**
   * A fresh MCP server over the shared project set (one per HTTP request in stateless mode). Over stdio the caller
   * owns the process; over HTTP, `grant` is the request's (its token's).
   */
  makeServer(caller?: { grant: Grant }): McpServer;
  close(): Promise<void>;
}

/** Opens the project (or relays a remote one), keeps it fresh, and builds MCP servers whose tools call the core. */
export async function createQuarryMcp(
  options: McpOptions & { log?: (m: string) => void },
): Promise<QuarryMcp> {
  const { set, live } = await openServing({ ...options, command: 'mcp', cwd: process.cwd() });
  return {
    live,
    set,
    makeServer: (caller) =>
      createMcpServer(
        set,
        options.remote
          ? {}
          : {
              roots: caller
                ? { home: live?.project.root ?? null, owner: false, grant: caller.grant }
                : { home: live?.project.root ?? null, owner: true },
            },
      ),
    async close() {
      await set.close();
      await live?.close();
    },
  };
}
