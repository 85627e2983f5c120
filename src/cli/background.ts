import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';

/** Starts `quarry index` for `root` as a detached, lower-priority process that outlives this one; returns its pid. */
export function spawnBackgroundIndex(root: string): number | undefined {
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, 'index', root, '--quiet'], {
    detached: true,
    stdio: 'ignore',
  });
  try {
    if (child.pid) setPriority(child.pid, 10);
  } catch {
    // not permitted: it runs at normal priority, its workers still lower their own
  }
  child.unref();
  return child.pid;
}
