import { join, resolve } from 'node:path';
import { findProjectRoot, indexedMainWorktree, indexPaths } from '../workspace/root.ts';

// Where a face's project is: the folder a command means, the main worktree it may overlay, and the project's own
// data folder. Faces ask these here rather than reading the workspace layer themselves.

/** The project a command means: `root` when given (made absolute), else the nearest one at or above `cwd`. */
export function projectRootFor(root: string | undefined, cwd = process.cwd()): string | undefined {
  return root ? resolve(root) : findProjectRoot(cwd);
}

/** Where a linked worktree of an indexed repository finds the main tree's index; undefined otherwise. */
export function mainWorktreeOf(root: string): string | undefined {
  return indexedMainWorktree(resolve(root));
}

/** A file of quarry's own beside the project's index (`.quarry/<name>`), such as the chat's history. */
export function projectDataFile(root: string, name: string): string {
  return join(indexPaths(root).dir, name);
}
