import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { serve } from '@hono/node-server';
import { resolveConfig } from '../config/config.ts';
import { checkPort, listenError, noProjectHere } from '../host/listen.ts';
import { openServedSet, type ProjectSet } from '../host/set.ts';
import { storeTarget, storeTraits } from '../store/open.ts';
import type { SyncStatus } from '../watch/autosync.ts';
import { type LiveProject, openLiveProject } from '../watch/live.ts';
import { findProjectRoot, indexedMainWorktree } from '../workspace/root.ts';

export interface Listening {
  port: number;
  /** Hands requests to the app from now on (until then each is a 503). */
  serveWith(handler: (req: Request) => Response | Promise<Response>): void;
  close(): Promise<void>;
}

/** The port first: a busy or bad port is an error now, before anything is opened, indexed or embedded. */
export async function listen(host: string, port: number | undefined): Promise<Listening> {
  checkPort(port);
  let handler: ((req: Request) => Response | Promise<Response>) | null = null;
  const server = serve({
    fetch: (req) =>
      handler
        ? handler(req)
        : Response.json({ error: 'quarry is starting: try again in a moment' }, { status: 503 }),
    hostname: host,
    port: port ?? 0,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', () => resolve());
    server.once('error', (err) => reject(listenError(err as NodeJS.ErrnoException, host, port)));
  });
  return {
    port: (server.address() as AddressInfo).port,
    serveWith(h) {
      handler = h;
    },
    close: () =>
      new Promise<void>((r) => {
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => r());
      }),
  };
}

export interface SetOptions {
  root?: string;
  cwd: string;
  watch?: boolean;
  init?: boolean;
  remote?: { url: string; token?: string; overlayRoot?: string };
  onStatus: (s: SyncStatus) => void;
  log: (m: string) => void;
}

type Opened = { set: ProjectSet; live: LiveProject | null };

/**
 * What the server serves: a remote quarry's repositories, a server store's (no checkout here), or this checkout
 * (kept fresh) with the rest of its store. `opened` learns of the live project as soon as it is open.
 */
async function openSetOnce(options: SetOptions, opened: (live: LiveProject) => void): Promise<Opened> {
  if (options.remote) return { set: await openServedSet({ remote: options.remote }), live: null };
  const { cwd } = options;
  const root = options.root ?? findProjectRoot(cwd);
  const config = resolveConfig({ root: root ?? cwd });
  if (!root && storeTraits(storeTarget(config, cwd)).registry)
    return { set: await openServedSet({ cwd }), live: null };
  if (!root && !options.init) throw noProjectHere(cwd, 'serve');
  // a linked worktree of an indexed repository is served as its overlay on the main tree's index
  const main = root ? indexedMainWorktree(resolve(root)) : undefined;
  if (root && main) return { set: await openServedSet({ worktree: { root, main } }), live: null };
  const live = await openLiveProject({
    ...(options.root ? { root: options.root } : {}),
    create: true,
    ...(options.watch === false ? { watch: false } : {}),
    onStatus: options.onStatus,
    log: options.log,
  });
  opened(live);
  return { set: await openServedSet({ live }), live };
}

/** The set to serve; on failure the listening server is closed (`closeServer`), then a live project opened. */
export async function openSet(options: SetOptions, closeServer: () => Promise<void>): Promise<Opened> {
  let live: LiveProject | null = null;
  try {
    return await openSetOnce(options, (l) => {
      live = l;
    });
  } catch (err) {
    await closeServer();
    await (live as LiveProject | null)?.close();
    throw err;
  }
}
