import type { QuarryConfig } from '../config/config.ts';
import { underAny } from './scope.ts';
import { type WalkEntry, walk } from './walk.ts';
import { loadFolderMemos } from './walk-cache.ts';

/** An indexed file as the delta needs it: where, how big and when written, when it was indexed. */
export interface IndexedFile {
  path: string;
  size: number;
  mtimeMs: number;
}

/** The working tree against the index: what a reader that must see every edit reads from disk instead. */
export interface TreeDelta {
  /**
   * Files on disk that the index lacks or holds an older copy of: new, modified (size or mtime differ, as `status`
   * tells), or left out of the index by ignore rules that the caller lifted (`noIgnore`).
   */
  changed: Map<string, WalkEntry>;
  /** Indexed files that are gone from disk, or that the walk now leaves out. */
  gone: Set<string>;
}

export interface DeltaOptions {
  /** Walk past every ignore rule (ripgrep's --no-ignore): the index's files are still compared by size and time. */
  noIgnore?: boolean;
  /**
   * The folders the last `quarry index` remembered (`walk-cache.ts`): only folders whose stat changed since are
   * listed. Read, never written: the index run keeps it.
   */
  memoFile?: string;
  /** Only the files under these paths (a grep's `--path`): the walk goes down to them alone (walk.ts `under`). */
  under?: readonly string[];
}

/**
 * What differs between the working tree and an index of it, by one walk and a stat of each file (nothing is read).
 * The same comparison as `quarry status`'s pending counts.
 */
export function treeDelta(
  root: string,
  config: QuarryConfig,
  indexed: readonly IndexedFile[],
  options: DeltaOptions = {},
): TreeDelta {
  const known = new Map(indexed.map((f) => [f.path, f]));
  const changed = new Map<string, WalkEntry>();
  const present = new Set<string>();
  const memo = options.memoFile && !options.noIgnore ? loadFolderMemos(options.memoFile) : undefined;
  const inScope = underAny(options.under);
  const walkOptions = {
    ...(options.noIgnore ? { noIgnore: true } : memo ? { memo } : {}),
    ...(options.under ? { under: options.under } : {}),
  };
  for (const f of walk(root, config, walkOptions).files) {
    present.add(f.path);
    const k = known.get(f.path);
    if (!k || k.size !== f.size || k.mtimeMs !== f.mtimeMs) changed.set(f.path, f);
  }
  const gone = new Set<string>();
  for (const p of known.keys()) if (!present.has(p) && (!inScope || inScope(p))) gone.add(p);
  return { changed, gone };
}
