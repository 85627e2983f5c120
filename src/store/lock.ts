import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
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
    if (!holder || (holder.host === me.host && !alive(holder.pid))) {
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
        `another quarry (pid ${holder!.pid}) is indexing this project: wait for it, or run with --wait`,
      );
    await sleep(200);
  }
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    process.off('exit', release);
    const holder = readLock(path);
    if (holder && holder.pid === me.pid && holder.startedAt === me.startedAt) {
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
  if (holder.host === hostname() && !alive(holder.pid)) return undefined;
  return { pid: holder.pid, host: holder.host };
}
