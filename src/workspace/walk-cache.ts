import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { QuarryConfig } from '../config/config.ts';
import { indexPaths } from './root.ts';
import type { Decision, FolderMemo, FolderMemos } from './walk.ts';

/**
 * Folders remembered between walks, in the index's folder (`.quarry/walk.json`), like git's untracked cache: a folder
 * whose inode, modification and change times are what they were holds the same entries (adding, removing or renaming
 * one sets both times), so a walk stats it and its files but neither lists it again nor runs the ignore rules over
 * it. A folder's ignore files are read every time and are part of what it is remembered under. The file is a hint:
 * a missing, stale or unreadable one only means the folders are read.
 *
 * A folder's entries are kept as one string, decoded only when the folder is used: entries joined by `/` (which no
 * name holds), each a kind and the name: `f` a file, `d<matchers>:` a folder, `s<reason>` a skip (`l` a link, `p`
 * special, `x` a secret), `i<0|1><source>:` an ignore (a folder or not, and the rule's source by number). A folder's
 * stamp is its device, inode, mtime and ctime as numbers. With the folders: the time before which the walk that
 * wrote the file saw every file's stat (`checked`), and the files their stat left out (`statSkips`), for git's
 * records (`delta.ts`).
 */
const FORMAT = 4;

/** Where a project's walks keep their folders, or undefined when the config turns it off (`walk_cache`). */
export function folderMemoFile(root: string, config: QuarryConfig): string | undefined {
  return config.walkCache ? join(indexPaths(root).dir, 'walk.json') : undefined;
}

type Row = [path: string, stamp: readonly number[], rules: string, ignoreFiles: string[], entries: string];

const REASONS = { symlink: 'l', special: 'p', secret: 'x' } as const;
const REASON_OF: Record<string, 'symlink' | 'special' | 'secret'> = {
  l: 'symlink',
  p: 'special',
  x: 'secret',
};

function encode(entries: readonly Decision[], sources: Map<string, number>): string {
  const out: string[] = [];
  for (const d of entries) {
    if (d[1] === 'f') out.push(`f${d[0]}`);
    else if (d[1] === 'd') out.push(`d${d[2].join(',')}:${d[0]}`);
    else if (d[1] === 's') out.push(`s${REASONS[d[2]]}${d[0]}`);
    else {
      const n = sources.get(d[3]) ?? sources.size;
      sources.set(d[3], n);
      out.push(`i${d[2] ? 1 : 0}${n}:${d[0]}`);
    }
  }
  return out.join('/');
}

function decode(text: string, sources: readonly string[]): Decision[] {
  if (!text) return [];
  return text.split('/').map((e): Decision => {
    const kind = e[0];
    if (kind === 'f') return [e.slice(1), 'f'];
    if (kind === 's') return [e.slice(2), 's', REASON_OF[e[1]!]!];
    const colon = e.indexOf(':');
    if (kind === 'd')
      return [e.slice(colon + 1), 'd', colon > 1 ? e.slice(1, colon).split(',').map(Number) : []];
    if (kind === 'i') return [e.slice(colon + 1), 'i', e[1] === '1', sources[Number(e.slice(2, colon))]!];
    throw new Error(`walk cache: an entry of kind ${kind}`);
  });
}

/** A folder as the file keeps it: its entries decoded when a walk takes them (most folders' never are). */
class Remembered implements FolderMemo {
  #entries: Decision[] | undefined;
  constructor(
    readonly stamp: readonly number[],
    readonly rules: string,
    readonly ignoreFiles: string[],
    private readonly text: string,
    private readonly sources: readonly string[],
  ) {}
  get entries(): Decision[] {
    this.#entries ??= decode(this.text, this.sources);
    return this.#entries;
  }
}

/** The folders a walk may take as they were: empty when there is no file or it cannot be read. */
export function loadFolderMemos(file: string | undefined): FolderMemos {
  const last = new Map<string, FolderMemo>();
  let checked: number | undefined;
  let statSkips: Set<string> | undefined;
  if (file) {
    try {
      const data = JSON.parse(readFileSync(file, 'utf8')) as {
        format?: number;
        checked?: unknown;
        statSkips?: unknown;
        sources?: string[];
        folders?: Row[];
      };
      const sources = data.sources ?? [];
      if (
        data.format === FORMAT &&
        typeof data.checked === 'number' &&
        Array.isArray(data.statSkips) &&
        data.statSkips.every((p) => typeof p === 'string')
      ) {
        checked = data.checked;
        statSkips = new Set(data.statSkips as string[]);
      }
      if (data.format === FORMAT && Array.isArray(data.folders))
        for (const [path, stamp, rules, ignoreFiles, text] of data.folders)
          last.set(path, new Remembered(stamp, rules, ignoreFiles, text, sources));
    } catch {
      last.clear(); // no file yet, or not ours to trust: every folder is read
      checked = undefined;
    }
  }
  return {
    last,
    next: new Map(),
    reused: 0,
    read: 0,
    ...(checked !== undefined && statSkips ? { lastChecked: checked, lastStatSkips: statSkips } : {}),
  };
}

/** How old the kept check time may grow before a walk that found nothing new writes the file again (for it). */
const CHECKED_REFRESH_MS = 3_600_000;

/** Keeps what a walk found for the next one (written whole, then renamed over the last); best effort. */
export function saveFolderMemos(file: string, memos: FolderMemos): void {
  // nothing new (every folder kept was known), and the time every file was seen at not much later than the kept one
  const stale = memos.checked !== undefined && (memos.lastChecked ?? 0) < memos.checked - CHECKED_REFRESH_MS;
  if (!memos.fresh && memos.next.size === memos.last.size && !stale) return;
  const sources = new Map<string, number>();
  const folders: Row[] = [];
  for (const [path, m] of memos.next)
    folders.push([path, m.stamp, m.rules, m.ignoreFiles, encode(m.entries, sources)]);
  // a name of its own: two index runs of one tree (the local index and a team's overlay) may save at once
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(
      tmp,
      JSON.stringify({
        format: FORMAT,
        ...(memos.checked !== undefined && memos.statSkips
          ? { checked: memos.checked, statSkips: memos.statSkips }
          : {}),
        sources: [...sources.keys()],
        folders,
      }),
    );
    renameSync(tmp, file);
  } catch {
    rmSync(tmp, { force: true }); // a read-only index folder: the next walk reads every folder, as this one did
  }
}
