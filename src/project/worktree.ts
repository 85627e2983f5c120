import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import {
  ensureIndexDir,
  gitChangesSince,
  gitHead,
  indexedMainWorktree,
  indexPaths,
} from '../workspace/root.ts';
import { openProject } from './local/index.ts';
import { type OverlayProject, openOverlay } from './overlay.ts';
import type { Project } from './types.ts';

// Every worktree, one index. A linked git worktree (`git worktree add`) of a repository whose main working tree
// quarry has indexed does not get an index of its own: it is an overlay on the main tree's index (project/overlay.ts),
// the machinery a team index uses, over a local store. Only the overlay's lexical index of this tree (seconds) and the
// vectors of the files that differ from the commit the main index was built at (the expensive part) are made here;
// every other vector comes from the main index. `quarry index --own` makes a full index instead.

export interface WorktreeOptions {
  onNotice?: (message: string) => void;
  /** The main tree, when the caller has already asked `indexedMainWorktree` (it runs git). */
  main?: string;
}

/**
 * This checkout as an overlay on its main worktree's index, or undefined when it is no linked worktree of an indexed
 * main tree (or has an index of its own). When it does not differ from the main index at all, the main index is this
 * tree's, and is returned as it is.
 */
export async function openWorktree(
  root: string,
  options: WorktreeOptions = {},
): Promise<Project | undefined> {
  const main = options.main ?? indexedMainWorktree(root);
  if (!main) return undefined;
  const notice = (m: string) => options.onNotice?.(m);
  const base = await openProject({ root: main });
  try {
    // a copy that fails (a full disk) costs the head start, never the overlay: it then indexes this tree afresh
    await seedOverlay(main, root).catch(() => undefined);
    // the main tree's own uncommitted edits are in its index: this tree's versions of those files are searched here
    const built = JSON.parse((await base.store.getMeta('source')) ?? '{}') as {
      git?: { commit?: string | null };
    };
    const commit = built.git?.commit;
    // a failing git is no "the main tree has no uncommitted edits": the overlay keeps what it read last, and says so
    const baseChanged = (): { changed: string[] } | { error: string } => {
      if (!commit) return { changed: [] };
      const r = gitChangesSince(main, commit);
      if ('error' in r) return { error: `the main tree's changes: ${r.error}` };
      return { changed: 'changed' in r ? r.changed : [] };
    };
    let said = false;
    const overlay = await openOverlay(base, {
      root,
      onNotice: (m) => {
        said = true;
        notice(m);
      },
      baseChanged,
    });
    if (overlay) return overlay;
    // no overlay and no word why: nothing differs, and the main tree's index is this tree's
    if (!said)
      notice(
        `this worktree matches ${main}'s index (${(gitHead(root)?.commit ?? commit ?? '').slice(0, 12)}): searching it`,
      );
    return base;
  } catch (err) {
    await base.close();
    throw err;
  }
}

/**
 * The first time, the overlay's lexical index starts as a copy of the main tree's, without its vectors (SQLite's
 * online backup: a consistent snapshot even while the main tree is being indexed). The overlay's first run then
 * re-reads every file (a new checkout's mtimes all differ) but hashes match for all but the files that differ, so
 * only those are parsed: seconds, where indexing the tree afresh parses every file.
 */
async function seedOverlay(main: string, root: string): Promise<void> {
  const dir = join(indexPaths(root).dir, 'overlay');
  const dest = join(dir, 'index.db');
  if (existsSync(dest)) return;
  ensureIndexDir(root);
  mkdirSync(dir, { recursive: true });
  const tmp = `${dest}.${process.pid}.seed`;
  const source = new Database(indexPaths(main).db, { readonly: true, fileMustExist: true });
  try {
    await source.backup(tmp);
  } finally {
    source.close();
  }
  const copy = new Database(tmp);
  try {
    sqliteVec.load(copy);
    // the main index's vectors are read from it; the overlay makes only the differing files' own
    copy.exec(`
      DROP TABLE IF EXISTS chunk_vectors;
      DROP TABLE IF EXISTS file_vectors;
      DELETE FROM chunk_codes;
      UPDATE files SET vec_phase = 0;
      DELETE FROM meta WHERE key IN ('embedder_id', 'embedder_dim', 'embed_progress');
    `);
    copy.exec('VACUUM');
  } finally {
    copy.close();
  }
  if (existsSync(dest)) rmSync(tmp, { force: true });
  else renameSync(tmp, dest);
}

export type { OverlayProject };
