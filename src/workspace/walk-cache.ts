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
 * special, `x` a secret), `i<0|1><source>:` an ignore (a folder or not, and the rule's source by number).
 */
const FORMAT = 3;

/** Where a project's walks keep their folders, or undefined when the config turns it off (`walk_cache`). */
export function folderMemoFile(root: string, config: QuarryConfig): string | undefined {
  return config.walkCache ? join(indexPaths(root).dir, 'walk.json') : undefined;
}

type Row = [path: string, stamp: string, rules: string, ignoreFiles: string[], entries: string];

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

/** The folders a walk may take as they were: empty when there is no file or it cannot be read. */
export function loadFolderMemos(file: string | undefined): FolderMemos {
  const last = new Map<string, FolderMemo>();
  if (file) {
    try {
      const data = JSON.parse(readFileSync(file, 'utf8')) as {
        format?: number;
        sources?: string[];
        folders?: Row[];
      };
      const sources = data.sources ?? [];
      if (data.format === FORMAT && Array.isArray(data.folders))
        for (const [path, stamp, rules, ignoreFiles, text] of data.folders) {
          let entries: Decision[] | undefined;
          last.set(path, {
            stamp,
            rules,
            ignoreFiles,
            get entries() {
              entries ??= decode(text, sources);
              return entries;
            },
          });
        }
    } catch {
      last.clear(); // no file yet, or not ours to trust: every folder is read
    }
  }
  return { last, next: new Map(), reused: 0, read: 0 };
}

/** Keeps what a walk found for the next one (written whole, then renamed over the last); best effort. */
export function saveFolderMemos(file: string, memos: FolderMemos): void {
  if (!memos.fresh && memos.next.size === memos.last.size) return; // nothing new: every folder kept was known
  const sources = new Map<string, number>();
  const folders: Row[] = [];
  for (const [path, m] of memos.next)
    folders.push([path, m.stamp, m.rules, m.ignoreFiles, encode(m.entries, sources)]);
  // a name of its own: two index runs of one tree (the local index and a team's overlay) may save at once
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, JSON.stringify({ format: FORMAT, sources: [...sources.keys()], folders }));
    renameSync(tmp, file);
  } catch {
    rmSync(tmp, { force: true }); // a read-only index folder: the next walk reads every folder, as this one did
  }
}
