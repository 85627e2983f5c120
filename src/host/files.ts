import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { QuarryConfig } from '../config/config.ts';
import { contentVerdict } from '../indexing/process-file.ts';
import { SKIP_REASONS, trackedByDefaults, type WalkIgnore, type WalkSkip, walk } from '../workspace/walk.ts';

// `quarry files`: what the indexer would do with each file under a root, and why, without indexing anything.

export interface FileVerdict {
  path: string;
  status: 'index' | 'no-chunks' | 'skip' | 'ignore';
  reason: string;
}

/** Every file under `root` with its verdict; `content` reads each indexable file for binaries, minified code, keys. */
export function listFiles(root: string, config: QuarryConfig, content: boolean): FileVerdict[] {
  const ignored: WalkIgnore[] = [];
  const { files, skipped } = walk(root, config, { onIgnore: (i) => ignored.push(i) });
  const out: FileVerdict[] = [];
  for (const f of files) {
    let verdict: FileVerdict = { path: f.path, status: 'index', reason: '' };
    if (content) {
      try {
        // the walk kept only files within the size limit: read each whole, as the indexer does
        const v = contentVerdict(readFileSync(join(root, f.path)), config);
        if (v.skip)
          verdict = {
            path: f.path,
            status: 'no-chunks',
            reason:
              v.skip === 'secret'
                ? 'holds a private key (--include-secrets to index it)'
                : `${v.skip}: recorded by name, no chunks`,
          };
      } catch (err) {
        verdict = {
          path: f.path,
          status: 'skip',
          reason: `cannot be read (${(err as NodeJS.ErrnoException).code})`,
        };
      }
    }
    out.push(verdict);
  }
  for (const s of skipped as WalkSkip[])
    out.push({
      path: s.path,
      status: 'skip',
      reason: `${SKIP_REASONS[s.reason]}${s.detail ? ` (${s.detail})` : ''}`,
    });
  const tracked = trackedByDefaults(root, ignored);
  for (const i of ignored) {
    const n = tracked.get(i.path);
    const git = n ? ` (${n} file${n === 1 ? '' : 's'} git tracks)` : '';
    out.push({ path: i.dir ? `${i.path}/` : i.path, status: 'ignore', reason: `by ${i.rule}${git}` });
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
