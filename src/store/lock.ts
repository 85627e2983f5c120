import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { QuarryError } from '../errors.ts';

interface LockInfo {
  pid: number;
  host: string;
  startedAt: number;
}

/** Whether a process of this machine still runs (EPERM: it runs, as another user). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The holder touches its lock this often; a lock untouched for STALE_MS is a writer that stopped, on any host. */
const HEARTBEAT_MS = 5_000;
const STALE_MS = 60_000;

/**
 * Is the holder gone? On this host its pid answers; on another (a container with its own hostname, a second
 * machine on a shared disk) the pid means nothing here, so the heartbeat decides.
 */
function holderGone(path: string, holder: LockInfo): boolean {
  if (holder.host === hostname()) return !alive(holder.pid);
  return lockAgeMs(path) > STALE_MS;
}

function lockAgeMs(path: string): number {
  try {
    return Date.now() - statSync(path).mtimeMs;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

function readLock(path: string): LockInfo | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as LockInfo;
  } catch {
    return undefined;
  }
}

export interface WriterLock {
  release(): void;
}

export interface LockOptions {
  /** Wait this long for a running writer to finish before giving up. Default 0 (fail at once). */
  waitMs?: number;
}

/**
 * The single-writer lock: a file created exclusively. A lock whose process is gone (killed, crashed) is
 * reclaimed; a live one makes a second writer wait or fail with a message that names its pid.
 */
export async function acquireWriterLock(path: string, options: LockOptions = {}): Promise<WriterLock> {
  mkdirSync(dirname(path), { recursive: true });
  const deadline = Date.now() + (options.waitMs ?? 0);
  const me: LockInfo = { pid: process.pid, host: hostname(), startedAt: Date.now() };
  for (;;) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, JSON.stringify(me));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = readLock(path);
    if (!holder && lockAgeMs(path) < 2000) {
      await sleep(50); // a writer between creating the file and writing its pid
      continue;
    }
    if (!holder || holderGone(path, holder)) {
      // a dead writer's lock (or a torn one): remove it and try again
      try {
        unlinkSync(path);
      } catch {
        // another process reclaimed it first
      }
      continue;
    }
    if (Date.now() >= deadline)
      throw new QuarryError(
        'LOCKED',
        `another quarry (pid ${holder!.pid}) is indexing this project: wait for it, or run with --wait (it runs on ${holder!.host}${holder!.host === me.host ? '' : `; its lock expires ${STALE_MS / 1000} s after its heartbeat stops`})`,
      );
    await sleep(200);
  }
  let released = false;
  const ours = () => {
    const holder = readLock(path);
    return holder !== undefined && holder.pid === me.pid && holder.startedAt === me.startedAt;
  };
  // the heartbeat: the lock's mtime says the writer still runs, to other hosts that cannot ask for its pid
  const heartbeat = setInterval(() => {
    try {
      if (ours()) utimesSync(path, new Date(), new Date());
    } catch {
      // the lock is gone: release will find nothing to remove
    }
  }, HEARTBEAT_MS);
  heartbeat.unref();
  const release = () => {
    if (released) return;
    released = true;
    clearInterval(heartbeat);
    process.off('exit', release);
    if (ours()) {
      try {
        unlinkSync(path);
      } catch {
        // already gone
      }
    }
  };
  process.on('exit', release);
  return { release };
}

/** The live writer recorded in a lock file, or undefined when there is none (or its process is gone). */
export function readLiveLock(path: string): { pid: number; host: string } | undefined {
  const holder = readLock(path);
  if (!holder) return undefined;
  if (holderGone(path, holder)) return undefined;
  return { pid: holder.pid, host: holder.host };
}

/**
 * A watcher keeping a checkout's index fresh (`quarry watch`, `serve`, `mcp`, `chat`) leaves a file named by its pid
 * in the index's folder (`watchers/<pid>`), so that a search in another process, which does not walk a large tree
 * for edits, knows whether something indexes them. The returned function removes it (a crash leaves a file whose pid
 * is dead, which no one believes).
 */
export function announceWatcher(indexDir: string): () => void {
  const path = `${indexDir}/watchers/${process.pid}`;
  try {
    mkdirSync(dirname(path), { recursive: true });
    closeSync(openSync(path, 'w'));
  } catch {
    return () => undefined; // a read-only checkout: searches elsewhere keep saying that nothing watches
  }
  return () => {
    try {
      unlinkSync(path);
    } catch {
      // gone already
    }
  };
}

/** Whether a watcher of this machine other than this process keeps the index in `indexDir` fresh. */
export function watcherElsewhere(indexDir: string): boolean {
  try {
    return readdirSync(`${indexDir}/watchers`).some((name) => {
      const pid = Number(name);
      return Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid);
    });
  } catch {
    return false;
  }
}
