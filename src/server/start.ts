import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { checkPort, listenError } from '../host/listen.ts';
import { openServing, type Serving, type ServingOptions } from '../host/serve.ts';
import type { LiveProject } from '../watch/live.ts';

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

export type SetOptions = Omit<ServingOptions, 'command' | 'opened'>;

/** The set to serve (host/serve.ts); on failure the listening server is closed (`closeServer`), then a live project. */
export async function openSet(options: SetOptions, closeServer: () => Promise<void>): Promise<Serving> {
  let live: LiveProject | null = null;
  try {
    return await openServing({
      ...options,
      command: 'serve',
      opened: (l) => {
        live = l;
      },
    });
  } catch (err) {
    await closeServer();
    await (live as LiveProject | null)?.close();
    throw err;
  }
}
