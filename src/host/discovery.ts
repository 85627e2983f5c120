import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { alive } from '../store/lock.ts';
import { writeAtomic } from '../workspace/atomic.ts';
import { indexPaths } from '../workspace/root.ts';
import { isLoopback } from './guard.ts';

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

/**
 * The server announced for this checkout, if its process still runs. A note that a server of this user wrote: the
 * user's own file, readable by its owner only (a server writes 0600; a file that came with a clone, a tarball or a
 * copy is not), naming a server on this machine (a loopback address). So a repository that ships a
 * `.quarry/server.json` cannot send a search, or the token sent with it, anywhere.
 */
export function findServer(root: string, o: { alive?: boolean } = {}): ServerNote | undefined {
  try {
    const st = statSync(file(root));
    if ((st.mode & 0o077) !== 0 || (process.getuid && st.uid !== process.getuid())) return undefined;
    const note = JSON.parse(readFileSync(file(root), 'utf8')) as ServerNote;
    if (typeof note.pid !== 'number' || typeof note.url !== 'string' || note.pid <= 1) return undefined;
    if (!onLoopback(note.url)) return undefined;
    if (o.alive !== false && (note.pid === process.pid || !alive(note.pid))) return undefined;
    return note;
  } catch {
    return undefined;
  }
}

/** A URL of this machine: a loopback name the server's guard knows, or any address of 127.0.0.0/8. */
function onLoopback(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return isLoopback(host) || /^127(?:\.\d{1,3}){3}$/.test(host);
  } catch {
    return false;
  }
}
