/**
 * The ignore matcher's memos: each folder's decisions as a walk made them, remembered under the folder's stamp and
 * the rules' fingerprint, and kept between walks in `.quarry/walk.json`.
 */
import { createHash } from 'node:crypto';
import { lstatSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { QuarryConfig } from '../../config/config.ts';
import { indexPaths } from '../root.ts';
import { BUILD_FOLDERS } from './build-folders.ts';
import { IGNORE_FILES } from './matcher.ts';
import { rulesText } from './rules.ts';

/**
 * What a walk decided about one entry of a folder, before a file's own stat: a file to stat (`f`), a folder to
 * visit with the matchers (by index in the folder's list) whose say inside it is overridden (`d`), a skip (`s`), or
 * an ignore and the rule's source (`i`).
 */
export type Decision =
  | [name: string, kind: 'f']
  | [name: string, kind: 'd', overridden: number[]]
  | [name: string, kind: 's', reason: 'symlink' | 'special' | 'secret']
  | [name: string, kind: 'i', dir: boolean, rule: string];

/** One folder as a walk found it: its stat, the rules in force in it, its ignore files, and its entries decided. */
export interface FolderMemo {
  /** The folder's device, inode, mtime and ctime (ms with their fraction) when its entries were read. */
  stamp: readonly number[];
  rules: string;
  ignoreFiles: string[];
  entries: Decision[];
}

/** Folders by repository-relative path ('' for the root): what the last walk found, and what this one finds. */
export interface FolderMemos {
  last: ReadonlyMap<string, FolderMemo>;
  next: Map<string, FolderMemo>;
  /** Folders taken from `last` without reading them. */
  reused: number;
  /** Folders read. */
  read: number;
  /** Folders read and remembered anew (a walk that remembers none anew and forgets none leaves the file as it is). */
  fresh?: number;
  /** Folders changed at or after this time (ms) are not remembered; default: the walk's start less RACY_MS. */
  settledBefore?: number;
  /**
   * What the last walk that kept these folders knew of every file: a time before which it saw each file's stat (it
   * stat-ed the file, or took a record git confirmed of a file unchanged since the walk before it), and the files
   * that their stat left out (a hard link, too large, unreadable). A file kept then whose status (ctime) last changed
   * before that time has the links it had then. Read with `last`; `checked` and `statSkips` are this walk's, kept
   * with `next` (a walk of some paths sees some files, and sets neither).
   */
  lastChecked?: number;
  lastStatSkips?: ReadonlySet<string>;
  checked?: number;
  statSkips?: string[];
}

/** Raise when the walk decides differently from the same rules: remembered folders are then read again. */
const WALK_RULES_VERSION = 2;

/**
 * A folder changed within this long before a walk is not remembered: a file system stamps times in ticks, and an
 * entry added in the same tick as the listing would leave the folder's stamp as it was (git's "racy" entries).
 */
export const RACY_MS = 2_000;

/**
 * A folder's identity and last change: its device and inode, and the times any change of its entries sets. Times in
 * milliseconds with their fraction (a double keeps a quarter of a microsecond at today's dates), not BigInt
 * nanoseconds: a stat with BigInts costs about twice as much, and a change after a folder was remembered comes at
 * least RACY_MS later.
 */
export function folderStamp(dirAbs: string): { stamp: number[]; changedMs: number } | undefined {
  try {
    const st = lstatSync(dirAbs, { throwIfNoEntry: false });
    if (!st?.isDirectory()) return undefined;
    return {
      stamp: [st.dev, st.ino, st.mtimeMs, st.ctimeMs],
      changedMs: st.mtimeMs > st.ctimeMs ? st.mtimeMs : st.ctimeMs,
    };
  } catch {
    return undefined;
  }
}

/** Whether remembered rules (`<fingerprint>|<overridden>`, from a file: anything) are these, without joining them. */
export function sameRules(known: unknown, rules: string, overriddenAt: string): boolean {
  return (
    typeof known === 'string' &&
    known.length === rules.length + 1 + overriddenAt.length &&
    known.startsWith(rules) &&
    known.charCodeAt(rules.length) === 124 && // '|'
    known.endsWith(overriddenAt)
  );
}

/** Whether a remembered stamp (read from a file: anything) is this one. */
export function sameStamp(known: unknown, now: readonly number[]): boolean {
  if (!Array.isArray(known) || known.length !== now.length) return false;
  for (let i = 0; i < now.length; i++) if (known[i] !== now[i]) return false;
  return true;
}

const SKIPS = new Set(['symlink', 'special', 'secret']);

/** A remembered folder's ignore files, when they are among the names a walk reads. */
export function rememberedIgnoreFiles(names: unknown): boolean {
  return Array.isArray(names) && names.every((n) => IGNORE_FILES.includes(n));
}

/**
 * A remembered folder's decisions, when each is one a walk could have made there (the file is a hint, read from
 * disk: a damaged or edited one must not crash a walk, nor lead it out of the folder); undefined otherwise.
 */
export function rememberedDecisions(known: FolderMemo, matchers: number): readonly Decision[] | undefined {
  let entries: readonly Decision[];
  try {
    entries = known.entries;
  } catch {
    return undefined;
  }
  if (!Array.isArray(entries)) return undefined;
  for (const d of entries) {
    const name = d[0];
    if (typeof name !== 'string' || !name || name === '.' || name === '..' || name.includes('/'))
      return undefined;
    const ok =
      d[1] === 'f' ||
      (d[1] === 'd' &&
        Array.isArray(d[2]) &&
        d[2].every((i) => Number.isInteger(i) && i >= 0 && i < matchers)) ||
      (d[1] === 's' && SKIPS.has(d[2])) ||
      (d[1] === 'i' && typeof d[2] === 'boolean' && typeof d[3] === 'string');
    if (!ok) return undefined;
  }
  return entries;
}

/** The rules' fingerprint once a folder's ignore file (its path and text) is added to them. */
export function addRules(fingerprint: string, source: string, text: string): string {
  return createHash('sha1')
    .update(fingerprint)
    .update('\0')
    .update(source)
    .update('\0')
    .update(text)
    .digest('hex');
}

/**
 * What every folder's decisions depend on besides its own ignore files: a change of any (the config, git's exclude
 * file, quarry's own rules) lists every folder again.
 */
export function baseFingerprint(
  config: QuarryConfig,
  exclude: string | undefined,
  noIgnore: boolean | undefined,
  inGit: boolean,
): string {
  const rules = noIgnore ? 'none' : [config.ignore, exclude ?? null];
  return createHash('sha1')
    .update(
      JSON.stringify([
        WALK_RULES_VERSION,
        rulesText(),
        [...BUILD_FOLDERS],
        rules,
        config.includeSecrets,
        // outside a git checkout no build folder is walked: a `git init` decides them again
        inGit,
      ]),
    )
    .digest('hex');
}

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
