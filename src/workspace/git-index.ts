import { execFile } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gitDirs } from './root.ts';
import { knownTracked } from './tracked.ts';

// What git already knows of a checkout's files: its index records each tracked file's size and times as git last
// saw them, and `git diff-files` (one process, C-fast: it stats every tracked file on several threads) names the
// tracked files whose stat is no longer what the index records. A tracked file that it does not name is, to the
// nanosecond, as git recorded it; a walk can take that record instead of stat-ing the file in Node. Only a
// confirmation: a file git names, or whose record differs from what the caller knows, or that git does not track,
// is stat-ed as before. What it saves is a stat's ~7 µs a file in a cold process (the call and a `Stats` with four
// `Date`s), against ~1–2 µs a file to read the index in JavaScript and a process started: a gain from about 10,000
// files (docs/benchmarks.md, "A one-shot command's catch-up").

/**
 * What git's index records of its regular files: each path's slot, and by slot the file's size, and its modification
 * and status change times (ms with their fraction, as Node's `mtimeMs`). Numbers in typed arrays, not an object a
 * file: a 30,000-file index is read in a third of the time, and leaves the collector little.
 */
export class GitRecords {
  readonly at = new Map<string, number>();
  readonly size: Float64Array;
  readonly mtimeMs: Float64Array;
  readonly ctimeMs: Float64Array;
  constructor(count: number) {
    this.size = new Float64Array(count);
    this.mtimeMs = new Float64Array(count);
    this.ctimeMs = new Float64Array(count);
  }
  /** One path's record (for a reader of a few). */
  get(path: string): { size: number; mtimeMs: number; ctimeMs: number } | undefined {
    const i = this.at.get(path);
    return i === undefined
      ? undefined
      : { size: this.size[i]!, mtimeMs: this.mtimeMs[i]!, ctimeMs: this.ctimeMs[i]! };
  }
}

/** How long git may take before the walk stats the files itself. */
const GIT_TIMEOUT_MS = 5_000;

/** The index file's identity and last change: a git command that rewrites it (renames a new one over it) changes it. */
function indexStamp(file: string): string | undefined {
  try {
    const st = statSync(file);
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  } catch {
    return undefined;
  }
}

/**
 * The tracked files of `root` whose stat is what git's index records for them (git compares every field, whatever
 * the repository's settings), with that record: path (repository-relative, as the walk names files) → size and
 * times. git runs while this reads its index (and while the caller does whatever it does until it awaits this).
 * Undefined when there is no git checkout whose top is `root`, when git fails or times out, when the index changed
 * while it was read, or when it is of a kind not read here (a split index, an unknown version): the caller then
 * stats every file.
 */
export async function gitCleanStats(root: string): Promise<GitRecords | undefined> {
  // git told to look elsewhere (a hook's environment): its answer would not be about this tree
  if (process.env.GIT_DIR || process.env.GIT_WORK_TREE || process.env.GIT_INDEX_FILE) return undefined;
  const dirs = gitDirs(root);
  if (!dirs) return undefined;
  const file = join(dirs.gitDir, 'index');
  const before = indexStamp(file);
  if (!before) return undefined;
  let data: Buffer;
  try {
    data = readFileSync(file);
  } catch {
    return undefined;
  }
  const dirty = new Promise<string | undefined>((resolve) => {
    try {
      execFile(
        'git',
        [
          '-C',
          root,
          // every stat field compared, and no file monitor trusted: "not named" then means "not changed"
          '-c',
          'core.checkStat=default',
          '-c',
          'core.trustctime=true',
          '-c',
          'core.fsmonitor=false',
          'diff-files',
          '--name-only',
          '-z',
        ],
        {
          encoding: 'utf8',
          maxBuffer: 256 * 1024 * 1024,
          timeout: GIT_TIMEOUT_MS,
          windowsHide: true,
          // nothing written: no refresh of the index, no lock taken
          env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' },
        },
        (err, stdout) => resolve(err ? undefined : stdout),
      ).stdin?.end();
    } catch {
      resolve(undefined);
    }
  });
  const read = parseIndex(data, hashBytes(dirs.common));
  const named = await dirty;
  // the index git compared with is the one read: unchanged from before the read to after git's answer
  if (!read || named === undefined || indexStamp(file) !== before) return undefined;
  // what git tracks, for the walk's decisions on build folders: `git ls-files` would read the same index
  knownTracked(root, read.tracked);
  const { records } = read;
  if (named) for (const p of named.split('\0')) records.at.delete(p);
  return records;
}

/** The length of an object name in this repository: SHA-1's 20 bytes, or SHA-256's 32. */
function hashBytes(commonDir: string): number {
  try {
    return /^\s*objectformat\s*=\s*sha256\s*$/im.test(readFileSync(join(commonDir, 'config'), 'utf8'))
      ? 32
      : 20;
  } catch {
    return 20;
  }
}

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;

/**
 * The regular files an index (versions 2 to 4) records at stage 0, with the size and mtime it holds for each; entries
 * git does not stat (assumed unchanged, skip-worktree, intent-to-add) are left out. Undefined for an index this does
 * not read (another signature or version, a split index whose entries live in another file, a cut-off file).
 */
export function parseIndex(
  data: Buffer,
  hashLength = 20,
): { records: GitRecords; tracked: string[] } | undefined {
  if (data.length < 12 || data.toString('latin1', 0, 4) !== 'DIRC') return undefined;
  const version = data.readUInt32BE(4);
  if (version < 2 || version > 4) return undefined;
  const count = data.readUInt32BE(8);
  // no more entries than the bytes could hold (a damaged count must not allocate gigabytes)
  if (count > data.length / 62) return undefined;
  const out = new GitRecords(count);
  // every path, as `git ls-files` lists them (an unmerged one once)
  const tracked: string[] = [];
  const end = data.length - hashLength;
  // read through a DataView, and paths cut from the whole index read as Latin-1 (a slice, not a call into the
  // runtime per path), decoded as UTF-8 only when one holds a byte over 0x7f: half the time of a cold parse
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const latin1 = version < 4 ? data.toString('latin1') : '';
  let at = 12;
  let previous = Buffer.alloc(0);
  for (let i = 0; i < count; i++) {
    // ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size: ten 32-bit fields; then the object name and flags
    const flagsAt = at + 40 + hashLength;
    if (flagsAt + 2 > end) return undefined;
    const ctimeS = view.getUint32(at);
    const ctimeNs = view.getUint32(at + 4);
    const mtimeS = view.getUint32(at + 8);
    const mtimeNs = view.getUint32(at + 12);
    const mode = view.getUint32(at + 24);
    const size = view.getUint32(at + 36);
    const flags = view.getUint16(flagsAt);
    let pathAt = flagsAt + 2;
    let extended = 0;
    if (flags & 0x4000) {
      if (version < 3 || pathAt + 2 > end) return undefined;
      extended = view.getUint16(pathAt);
      pathAt += 2;
    }
    let path: string;
    if (version === 4) {
      // the path is the previous one, less N bytes from its end (N a varint), then this entry's own part
      let strip = 0;
      let byte: number;
      do {
        if (pathAt >= end) return undefined;
        byte = data[pathAt++]!;
        strip = (strip << 7) | (byte & 0x7f);
        if (byte & 0x80) strip++;
      } while (byte & 0x80);
      const nul = data.indexOf(0, pathAt);
      if (nul < 0 || nul >= end || strip > previous.length) return undefined;
      // bytes, not text: a name that is not UTF-8 is cut where git cut it
      previous = Buffer.concat([previous.subarray(0, previous.length - strip), data.subarray(pathAt, nul)]);
      path = previous.toString('utf8');
      at = nul + 1;
    } else {
      // the flags hold the path's length when it is under 4095 bytes
      const length = flags & 0xfff;
      const nul = length < 0xfff ? pathAt + length : data.indexOf(0, pathAt);
      if (nul < 0 || nul >= end || data[nul] !== 0) return undefined;
      let ascii = true;
      for (let b = pathAt; b < nul; b++)
        if (data[b]! > 0x7f) {
          ascii = false;
          break;
        }
      path = ascii ? latin1.slice(pathAt, nul) : data.toString('utf8', pathAt, nul);
      // each entry is padded with 1 to 8 NULs to a multiple of 8 bytes
      at += (nul - at + 8) & ~7;
    }
    const stage = (flags >> 12) & 3;
    // an unmerged path comes once a stage
    if (!stage || path !== tracked[tracked.length - 1]) tracked.push(path);
    const assumeValid = flags & 0x8000;
    const skipOrNew = extended & (0x4000 | 0x2000);
    if (stage || assumeValid || skipOrNew || (mode & S_IFMT) !== S_IFREG) continue;
    // what Node computes for `mtimeMs` from the same seconds and nanoseconds
    out.at.set(path, i);
    out.size[i] = size;
    out.mtimeMs[i] = mtimeS * 1e3 + mtimeNs / 1e6;
    out.ctimeMs[i] = ctimeS * 1e3 + ctimeNs / 1e6;
  }
  // extensions: a split index ("link") keeps most entries in another file
  while (at + 8 <= end) {
    const signature = data.toString('latin1', at, at + 4);
    if (signature === 'link') return undefined;
    at += 8 + data.readUInt32BE(at + 4);
  }
  return { records: out, tracked };
}
