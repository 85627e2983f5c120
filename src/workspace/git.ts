import { execFileSync } from 'node:child_process';

// Running git. A git command can fail for reasons that pass: another git command's `index.lock`, a timeout on a busy
// machine, a repository being rewritten under it. Every caller treats a failure as "git could not say", never as an
// answer ("no changes", "not tracked"): it is tried once more after a short pause, then reported in one line, and the
// caller keeps what git last said (or says the answer may be stale) and asks again on its next call.

/** The pause before a failed git command's second try: long enough for another git command to drop its lock. */
const RETRY_MS = 150;

export interface GitOptions {
  timeoutMs?: number;
  maxBuffer?: number;
  /** Exit 1 with nothing on stderr answers null (`rev-parse --verify --quiet`'s "no such object"), not a failure. */
  missingIsOk?: boolean;
}

/** git's output in `root`, or null (see `missingIsOk`); a failure throws one line: what ran and what git said. */
export function runGit(root: string, args: string[], options: GitOptions = {}): string | null {
  try {
    return execFileSync('git', ['-C', root, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: options.maxBuffer ?? 256 * 1024 * 1024,
      timeout: options.timeoutMs ?? 60_000,
      windowsHide: true,
    });
  } catch (err) {
    const e = err as { status?: number; stderr?: string };
    if (options.missingIsOk && e.status === 1 && !String(e.stderr ?? '').trim()) return null;
    throw new Error(gitFailure(args, err));
  }
}

/** `f` (which runs git and throws one line when it fails), tried once more after a short pause; its last error. */
export function gitTwice<T>(f: () => T): { ok: T } | { error: string } {
  let last = '';
  for (let i = 0; i < 2; i++) {
    if (i) pause(RETRY_MS);
    try {
      return { ok: f() };
    } catch (err) {
      last = (err as Error).message;
    }
  }
  return { error: last };
}

/** One line for a failed git command: what ran and what it said. */
export function gitFailure(args: string[], err: unknown): string {
  const e = err as { stderr?: string | Buffer; code?: string; signal?: string; message?: string };
  const said =
    String(e.stderr ?? '')
      .trim()
      .split('\n')
      .pop() ||
    (e.code === 'ETIMEDOUT' ? 'timed out' : e.signal ? `killed by ${e.signal}` : (e.message ?? 'failed'));
  return `git ${args.slice(0, 2).join(' ')} failed: ${said}`;
}

/** Blocks this thread for `ms` (git is run synchronously here; the pause is as short as a retry needs). */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
