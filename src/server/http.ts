import { announceServer } from '../host/discovery.ts';
import { type GuardOptions, isLoopback } from '../host/guard.ts';
import { serverTokens } from '../host/server-tokens.ts';
import type { ProjectSet } from '../host/set.ts';
import type { LocalProject } from '../project/local/index.ts';
import type { AutoSync, SyncStatus } from '../watch/autosync.ts';
import { createApp } from './app.ts';
import type { LiveHooks } from './request.ts';
import { listen, openSet } from './start.ts';

export interface ServeOptions {
  root?: string;
  /** Where to look for a project (and settings) when `root` is not given. Default: the process's cwd. */
  cwd?: string;
  /** Default 127.0.0.1. Anything else needs a token (generated unless given). */
  host?: string;
  port?: number;
  /** A token that may do everything (kept in memory only). */
  token?: string;
  /**
   * A tokens file (`quarry token add`): every request must then carry one of its tokens, and sees only the
   * repositories that token names. Off loopback the user's default tokens file is used when it has tokens.
   */
  tokensFile?: string;
  watch?: boolean;
  /** Start a new index when the folder holds no project. Default false: a folder that is no project is refused. */
  init?: boolean;
  /** Relay another quarry (its HTTP API) instead of serving a store. */
  remote?: { url: string; token?: string; overlayRoot?: string };
  log?: (m: string) => void;
}

export interface Served {
  url: string;
  /** Set when the server generated one (a non-loopback bind with no tokens given). */
  token: string | null;
  /** The checkout this server keeps fresh, when it has one. */
  project: LocalProject | null;
  set: ProjectSet;
  sync: AutoSync | null;
  close(): Promise<void>;
}

/**
 * `quarry serve`: the JSON API, the MCP endpoint and the web panel over the one core, on 127.0.0.1. It serves its
 * own checkout (kept fresh) and every other repository of its store. Requests must name this server in their Host
 * header (DNS rebinding), state-changing ones must come from its own origin or no browser at all, and with tokens
 * (always off loopback) each request sees only its token's repositories.
 */
export async function startServer(options: ServeOptions = {}): Promise<Served> {
  const host = options.host ?? '127.0.0.1';
  const log = options.log ?? (() => {});
  const { tokens, required: tokensRequired, generated } = serverTokens({ ...options, host });
  const listening = await listen(host, options.port);
  const { port } = listening;

  const hooks: LiveHooks = { live: null, listeners: new Set() };
  const onStatus = (s: SyncStatus) => {
    for (const l of hooks.listeners) l(s);
  };
  const { set, live } = await openSet(
    { ...options, cwd: options.cwd ?? process.cwd(), onStatus, log },
    listening.close,
  );
  hooks.live = live;

  const gate: GuardOptions = { host, port: () => port, ...(tokensRequired ? { tokens } : {}) };
  listening.serveWith(createApp(gate, set, hooks, log).fetch);
  const shown = host.includes(':') ? `[${host}]` : host;
  // a search in this checkout may ask this server (its model is warm) when no token is needed to
  const forget =
    live && isLoopback(host) && !tokensRequired
      ? announceServer(live.project.root, {
          url: `http://${shown}:${port}`,
          kind: 'serve',
          repo: live.project.name,
        })
      : () => undefined;
  return {
    url: `http://${shown}:${port}/${generated ? `?token=${generated}` : ''}`,
    token: generated,
    project: live?.project ?? null,
    set,
    sync: live?.sync ?? null,
    async close() {
      forget();
      await listening.close();
      await set.close();
      await live?.close();
    },
  };
}
