import { resolveConfig } from '../config/config.ts';
import type { SyncStatus } from '../watch/autosync.ts';
import { type LiveProject, openLiveProject } from '../watch/live.ts';
import { storeTraitsAt } from './admin.ts';
import { mainWorktreeOf, projectRootFor } from './checkout.ts';
import { noProjectHere } from './listen.ts';
import { openServedSet, type ProjectSet } from './set.ts';

export { type AutoSync, type SyncStatus, startAutoSync } from '../watch/autosync.ts';

// What a long-running face (`quarry serve`, `quarry mcp`) serves, decided once for both.

export interface ServingOptions {
  /** The command, for the error that names what to run instead. */
  command: string;
  root?: string;
  cwd: string;
  /** Start a new index when the folder holds no project. Default false: such a folder is refused. */
  init?: boolean;
  watch?: boolean;
  remote?: { url: string; token?: string; overlayRoot?: string };
  onStatus?: (s: SyncStatus) => void;
  log?: (m: string) => void;
  /** Learns of the live project as soon as it is open (to close it should a later step fail). */
  opened?: (live: LiveProject) => void;
}

export interface Serving {
  set: ProjectSet;
  /** The checkout kept fresh, when serving one (not a remote, a server store, or a worktree's overlay). */
  live: LiveProject | null;
}

/**
 * A remote quarry's repositories; a server store's (no checkout here); a linked worktree of an indexed repository,
 * as its overlay on the main tree's index; or this checkout, kept fresh, with the rest of its store.
 */
export async function openServing(options: ServingOptions): Promise<Serving> {
  if (options.remote) return { set: await openServedSet({ remote: options.remote }), live: null };
  const { cwd } = options;
  const root = projectRootFor(options.root, cwd);
  if (!root) {
    if (storeTraitsAt(resolveConfig({ root: cwd }), cwd).registry)
      return { set: await openServedSet({ cwd }), live: null };
    if (!options.init) throw noProjectHere(cwd, options.command);
  }
  const main = root ? mainWorktreeOf(root) : undefined;
  if (root && main) return { set: await openServedSet({ worktree: { root, main } }), live: null };
  const live = await openLiveProject({
    ...(options.root ? { root: options.root } : {}),
    create: true,
    ...(options.watch === false ? { watch: false } : {}),
    ...(options.onStatus ? { onStatus: options.onStatus } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  options.opened?.(live);
  return { set: await openServedSet({ live }), live };
}
