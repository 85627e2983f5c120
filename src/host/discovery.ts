import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { alive } from '../store/lock.ts';
import { writeAtomic } from '../workspace/atomic.ts';
import { indexPaths } from '../workspace/root.ts';

/**
 * A running `quarry serve` or `quarry mcp --http` for a checkout says where it listens in `.quarry/server.json`, so
 * that a `quarry search` in the same checkout can ask it (its model is loaded) instead of loading ONNX again.
 * `quarry serve` announces itself when it needs no token (loopback, no tokens file); `quarry mcp --http` always, with
 * its token in the URL, so the note is readable by its owner only (0600).
 */
export interface ServerNote {
  pid: number;
  url: string;
  kind: 'serve' | 'mcp';
  startedAt: string;
  /** The repository the server keeps open for this checkout (an older server's note lacks it: then ask its status). */
  repo?: string;
}

const file = (root: string) => join(indexPaths(root).dir, 'server.json');

export function announceServer(root: string, note: Omit<ServerNote, 'pid' | 'startedAt'>): () => void {
  const path = file(root);
  const mine: ServerNote = { ...note, pid: process.pid, startedAt: new Date().toISOString() };
  try {
    // a note left by an earlier server keeps its mode through writeAtomic: it goes first, and this one is its owner's
    rmSync(path, { force: true });
    writeAtomic(path, `${JSON.stringify(mine)}\n`, 0o600);
  } catch {
    return () => undefined; // a read-only checkout: nobody finds this server, nothing breaks
  }
  return () => {
    // only our own note: another server may have started since
    if (findServer(root, { alive: false })?.pid === process.pid) rmSync(path, { force: true });
  };
}

/** The server announced for this checkout, if its process still runs. */
export function findServer(root: string, o: { alive?: boolean } = {}): ServerNote | undefined {
  try {
    const note = JSON.parse(readFileSync(file(root), 'utf8')) as ServerNote;
    if (typeof note.pid !== 'number' || typeof note.url !== 'string') return undefined;
    if (o.alive !== false && (note.pid === process.pid || !alive(note.pid))) return undefined;
    return note;
  } catch {
    return undefined;
  }
}
