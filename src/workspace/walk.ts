import { type Dirent, existsSync, lstatSync, readdirSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import type { QuarryConfig } from '../config/config.ts';
import {
  addRules,
  BUILD_FOLDERS,
  baseFingerprint,
  baseMatchers,
  DEFAULTS_SOURCE,
  type Decision,
  defaultsMatcher,
  type FolderMemos,
  folderStamp,
  IGNORE_FILES,
  ignoredBy,
  ignoreFile,
  isIgnored,
  liftedBuildFolder,
  looksLikeSecretPath,
  type Matcher,
  NONE,
  RACY_MS,
  readPatterns,
  rememberedDecisions,
  rememberedIgnoreFiles,
  sameRules,
  sameStamp,
  VERSION_CONTROL_IGNORES,
  verdict,
  type WalkIgnore,
} from './ignore/index.ts';
import { underAny } from './scope.ts';
import type { SkipReason } from './skips.ts';

export {
  type Decision,
  defaultsMatcher,
  type FolderMemo,
  type FolderMemos,
  trackedByDefaults,
  trackedUnder,
  type WalkIgnore,
} from './ignore/index.ts';
export { SKIP_REASONS, type SkipReason } from './skips.ts';

export interface WalkEntry {
  /** Repository-relative POSIX path. */
  path: string;
  size: number;
  mtimeMs: number;
}

export interface WalkSkip {
  path: string;
  reason: SkipReason;
  detail?: string;
}

export interface WalkResult {
  /** Files to index, sorted by path. */
  files: WalkEntry[];
  skipped: WalkSkip[];
}

/** Stats known without a stat (`WalkOptions.recorded`): each path's slot, and by slot its size and mtime. */
export interface KnownStats {
  readonly at: ReadonlyMap<string, number>;
  readonly size: ArrayLike<number>;
  readonly mtimeMs: ArrayLike<number>;
}

export interface WalkOptions {
  /** Called for every skipped path as the walk meets it. */
  onSkip?: (skip: WalkSkip) => void;
  /** Called for every path an ignore rule leaves out (a folder once, not its contents). */
  onIgnore?: (ignored: WalkIgnore) => void;
  /**
   * Past every ignore rule (ripgrep's --no-ignore): no default, config, exclude or ignore file applies, only the
   * folders of version control and quarry's own. Secret-looking names, links and size limits still apply.
   */
  noIgnore?: boolean;
  /**
   * Folders remembered from an earlier walk (`ignore/memo.ts`): a folder whose own stat and ignore rules are what they
   * were is not read again, only its files' stats. The walk leaves in it what it read this time.
   */
  memo?: FolderMemos;
  /**
   * Only files under these paths (`--path`: folders or files from the root, by whole segments, as `underPrefix`):
   * the walk goes down only the folders that lead to them, reading the ignore files on the way, so a grep of one
   * folder of 100,000 files stats that folder's files, not the tree's.
   */
  under?: readonly string[];
  /**
   * Files whose stat is known to be current without stat-ing them (repository-relative path → size and mtime): git's
   * record of a tracked file that `git diff-files` does not name (`git-index.ts`). A file among them is taken as
   * recorded; the others are stat-ed. A record does not say how many links the file has: the caller gives only files
   * whose status has not changed since a walk saw them kept (`delta.ts`), as a link made since would change it.
   */
  recorded?: KnownStats;
  /**
   * Told when a decision could not ask git (what git tracks in a build folder): the last verdict stands, and this
   * says so. Without it, the notice goes to stderr once per folder until git answers again.
   */
  onNotice?: (message: string) => void;
}

/** The matchers in force in a folder (its own ignore files added) and their fingerprint. */
function withOwnRules(
  dirRel: string,
  dirAbs: string,
  names: readonly string[],
  inherited: Matcher[],
  rules: string,
): { matchers: Matcher[]; rules: string } {
  let matchers = inherited;
  for (const name of names) {
    const text = readPatterns(join(dirAbs, name));
    if (!text) continue;
    const m = ignoreFile(dirRel, name, text);
    matchers = [...matchers, m];
    if (rules) rules = addRules(rules, m.source, text);
  }
  return { matchers, rules };
}

/**
 * A folder's entries, decided: what is ignored, skipped, walked into, or a file to stat. `volatile` when a decision
 * depends on more than the folder and its rules (what git tracks in a build folder of a git checkout, `inGit`).
 */
function decide(
  root: string,
  config: QuarryConfig,
  dirRel: string,
  entries: readonly Dirent[],
  matchers: Matcher[],
  overridden: ReadonlySet<Matcher>,
  inGit: boolean,
  onNotice?: (message: string) => void,
): { decisions: Decision[]; volatile: boolean } {
  const out: Decision[] = [];
  let volatile = false;
  for (const entry of entries) {
    const name = entry.name;
    const rel = dirRel ? `${dirRel}/${name}` : name;
    const symlink = entry.isSymbolicLink();
    if (entry.isDirectory() && !symlink) {
      const by = ignoredBy(matchers, rel, true, overridden);
      // whether a build folder is walked depends on what git tracks, which no folder's stamp shows
      if (inGit && by?.source === DEFAULTS_SOURCE && BUILD_FOLDERS.has(name)) volatile = true;
      const lifted = liftedBuildFolder(root, by, rel, onNotice);
      if (by && !lifted) {
        out.push([name, 'i', true, by.source]);
        continue;
      }
      const next: number[] = [];
      matchers.forEach((m, i) => {
        // a lifted build folder keeps the defaults inside it (its own node_modules/ is still skipped)
        if (overridden.has(m) || (!(lifted && m === by) && verdict(m, rel, true)?.ignored)) next.push(i);
      });
      out.push([name, 'd', next]);
      continue;
    }
    const by = ignoredBy(matchers, rel, false, overridden);
    if (by) out.push([name, 'i', false, by.source]);
    else if (symlink) out.push([name, 's', 'symlink']);
    else if (!entry.isFile()) out.push([name, 's', 'special']);
    else if (!config.includeSecrets && looksLikeSecretPath(rel)) out.push([name, 's', 'secret']);
    else out.push([name, 'f']);
  }
  return { decisions: out, volatile };
}

/** The matchers (by index) whose say inside a folder is overridden; none in nearly every folder. */
function overriddenOf(matchers: readonly Matcher[], at: readonly number[]): ReadonlySet<Matcher> {
  return at.length ? new Set(at.map((i) => matchers[i]!)) : NONE;
}

/** A file the walk keeps, by its own stat, or the reason it skips it (undefined: gone, or no regular file now). */
function statFile(
  config: QuarryConfig,
  rel: string,
  abs: string,
  name: string,
): WalkEntry | WalkSkip | undefined {
  let st: Stats | undefined;
  try {
    // no exception for a file gone since the listing (a thrown error costs more than the stat)
    st = lstatSync(abs, { throwIfNoEntry: false });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') return { path: rel, reason: 'unreadable', detail: code ?? String(err) };
  }
  if (!st) {
    // a name that is not UTF-8 comes back with U+FFFD in it, and no file has that name: say so, do not drop it
    return name.includes('\uFFFD') ? { path: rel, reason: 'bad-name' } : undefined;
  }
  if (!st.isFile()) return undefined;
  // git never makes hard links in a checkout; one may be another name of a file outside the root (/etc/passwd)
  if (st.nlink > 1 && !config.includeHardLinks) return { path: rel, reason: 'hard-link' };
  if (st.size > config.maxFileBytes) return { path: rel, reason: 'too-large', detail: `${st.size} bytes` };
  return { path: rel, size: st.size, mtimeMs: st.mtimeMs };
}

/**
 * Lists the files of `root` that quarry indexes. Symbolic links are never followed (like git, which stores a link,
 * not its target), so the walk cannot loop or leave the root. Works the same with or without a `.git` folder.
 */
export function walk(root: string, config: QuarryConfig, options: WalkOptions = {}): WalkResult {
  const files: WalkEntry[] = [];
  const skipped: WalkSkip[] = [];
  const { onSkip, onIgnore, memo, recorded } = options;
  const inScope = underAny(options.under);
  // a folder above one of the paths: walked for the way down (and its ignore rules), its own files left out
  const leadsTo = (dirRel: string) => Boolean(options.under?.some((p) => p.startsWith(`${dirRel}/`)));
  const started = Date.now();
  const rootDir = root.endsWith('/') ? root : `${root}/`;
  // what git tracks decides a build folder's fate only in a git checkout (`gitTracked`)
  const inGit = existsSync(join(root, '.git'));
  // the files a stat left out, when this walk sees every file (kept with the folders)
  const statSkips: string[] | undefined = memo && !options.under ? [] : undefined;
  // git's exclude file read once: the matchers and the fingerprint they are remembered under come from one text
  const exclude = options.noIgnore ? undefined : readPatterns(join(root, '.git', 'info', 'exclude'));
  const base: Matcher[] = options.noIgnore
    ? [{ base: '', ig: defaultsMatcher(VERSION_CONTROL_IGNORES), source: 'version control' }]
    : baseMatchers(root, config, exclude);

  const skip = (s: WalkSkip): void => {
    skipped.push(s);
    onSkip?.(s);
  };

  /** Acts on a folder's decisions: reports its skips and ignores, stats its files, walks into its folders. */
  const apply = (
    dirRel: string,
    inDir: string,
    decisions: readonly Decision[],
    matchers: Matcher[],
    rules: string,
  ) => {
    for (const d of decisions) {
      const rel = dirRel ? `${dirRel}/${d[0]}` : d[0];
      if (inScope && !inScope(rel)) {
        if (d[1] === 'd' && leadsTo(rel)) visit(rel, matchers, overriddenOf(matchers, d[2]), rules);
        continue;
      }
      if (d[1] === 'i') onIgnore?.({ path: rel, dir: d[2], rule: d[3] });
      else if (d[1] === 's') skip({ path: rel, reason: d[2] });
      else if (d[1] === 'd') visit(rel, matchers, overriddenOf(matchers, d[2]), rules);
      else {
        const k = recorded?.at.get(rel);
        const size = k === undefined ? 0 : recorded!.size[k]!;
        const found: WalkEntry | WalkSkip | undefined =
          k === undefined
            ? statFile(config, rel, inDir + d[0], d[0])
            : size > config.maxFileBytes
              ? { path: rel, reason: 'too-large', detail: `${size} bytes` }
              : { path: rel, size, mtimeMs: recorded!.mtimeMs[k]! };
        if (found && 'reason' in found) {
          skip(found);
          statSkips?.push(rel);
        } else if (found) files.push(found);
      }
    }
  };

  const visit = (
    dirRel: string,
    inherited: Matcher[],
    overridden: ReadonlySet<Matcher>,
    rules: string,
  ): void => {
    // a name from readdir holds no separator: a path is the folder's and the name (path.join was 4% of a no-op)
    const dirAbs = dirRel ? rootDir + dirRel : root;
    const inDir = dirRel ? `${dirAbs}/` : rootDir;
    // the stamp before the listing: a change while it is read leaves the stamp remembered out of date
    const stamp = memo ? folderStamp(dirAbs) : undefined;
    const overriddenAt =
      memo && overridden.size ? [...overridden].map((m) => inherited.indexOf(m)).join(',') : '';
    const known = stamp ? memo?.last.get(dirRel) : undefined;
    if (known && stamp && sameStamp(known.stamp, stamp.stamp) && rememberedIgnoreFiles(known.ignoreFiles)) {
      const own = withOwnRules(dirRel, dirAbs, known.ignoreFiles, inherited, rules);
      const decisions =
        sameRules(known.rules, own.rules, overriddenAt) && rememberedDecisions(known, own.matchers.length);
      if (decisions) {
        memo!.reused++;
        memo!.next.set(dirRel, known);
        apply(dirRel, inDir, decisions, own.matchers, own.rules);
        return;
      }
    }
    let entries: Dirent[];
    try {
      entries = readdirSync(dirAbs, { withFileTypes: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return; // removed while walking
      skip({ path: dirRel || '.', reason: 'unreadable', detail: code ?? String(err) });
      return;
    }
    const ignoreFiles = options.noIgnore ? [] : IGNORE_FILES.filter((n) => entries.some((e) => e.name === n));
    const own = withOwnRules(dirRel, dirAbs, ignoreFiles, inherited, rules);
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const { decisions, volatile } = decide(
      root,
      config,
      dirRel,
      entries,
      own.matchers,
      overridden,
      inGit,
      options.onNotice,
    );
    if (memo) {
      memo.read++;
      if (stamp && !volatile && stamp.changedMs < (memo.settledBefore ?? started - RACY_MS)) {
        memo.fresh = (memo.fresh ?? 0) + 1;
        memo.next.set(dirRel, {
          stamp: stamp.stamp,
          rules: `${own.rules}|${overriddenAt}`,
          ignoreFiles,
          entries: decisions,
        });
      }
    }
    apply(dirRel, inDir, decisions, own.matchers, own.rules);
  };
  // without memos no fingerprint is kept ('')
  visit('', base, NONE, memo ? baseFingerprint(config, exclude, options.noIgnore, inGit) : '');
  // every file of the tree seen (a walk of some paths sees some)
  if (memo && statSkips) {
    memo.checked = memo.settledBefore ?? started - RACY_MS;
    memo.statSkips = statSkips;
  }
  return { files, skipped };
}

/**
 * The walk's verdict on a few paths, without walking: for each repository-relative path, whether quarry indexes it
 * (with its size and mtime) under the same rules as `walk` (ignore files of every folder above it, defaults, secrets,
 * size, no symlinks). Paths that are missing, ignored or not regular files are listed in `excluded`. The watcher
 * uses this so that a saved file is indexed without a walk of the whole tree.
 */
export function statPaths(
  root: string,
  config: QuarryConfig,
  paths: readonly string[],
  onNotice?: (message: string) => void,
): { files: WalkEntry[]; excluded: string[] } {
  const base = baseMatchers(root, config);
  // per folder: the matchers in force inside it, and the overridden set (null: the folder itself is ignored)
  const dirs = new Map<string, { matchers: Matcher[]; overridden: ReadonlySet<Matcher> } | null>();
  const stateOf = (dirRel: string): { matchers: Matcher[]; overridden: ReadonlySet<Matcher> } | null => {
    const cached = dirs.get(dirRel);
    if (cached !== undefined) return cached;
    let state: { matchers: Matcher[]; overridden: ReadonlySet<Matcher> } | null;
    if (!dirRel) state = { matchers: base, overridden: NONE };
    else {
      const slash = dirRel.lastIndexOf('/');
      const parent = stateOf(slash < 0 ? '' : dirRel.slice(0, slash));
      const by = parent ? ignoredBy(parent.matchers, dirRel, true, parent.overridden) : undefined;
      const lifted = liftedBuildFolder(root, by, dirRel, onNotice);
      if (!parent || (by && !lifted)) state = null;
      else {
        let next = parent.overridden;
        for (const m of parent.matchers) {
          if (lifted && m === by) continue;
          if (next.has(m) || !verdict(m, dirRel, true)?.ignored) continue;
          if (next === parent.overridden) next = new Set(parent.overridden);
          (next as Set<Matcher>).add(m);
        }
        state = { matchers: parent.matchers, overridden: next };
      }
    }
    if (state) {
      let matchers = state.matchers;
      for (const name of IGNORE_FILES) {
        const text = readPatterns(join(root, dirRel, name));
        if (text) matchers = [...matchers, ignoreFile(dirRel, name, text)];
      }
      state = { matchers, overridden: state.overridden };
    }
    dirs.set(dirRel, state);
    return state;
  };
  const files: WalkEntry[] = [];
  const excluded: string[] = [];
  for (const rel of [...new Set(paths)].sort()) {
    const slash = rel.lastIndexOf('/');
    const dir = stateOf(slash < 0 ? '' : rel.slice(0, slash));
    let st: ReturnType<typeof lstatSync> | undefined;
    try {
      st = lstatSync(join(root, rel));
    } catch {
      st = undefined;
    }
    if (
      !dir ||
      !st?.isFile() ||
      isIgnored(dir.matchers, rel, false, dir.overridden) ||
      (!config.includeSecrets && looksLikeSecretPath(rel)) ||
      (st.nlink > 1 && !config.includeHardLinks) ||
      st.size > config.maxFileBytes
    ) {
      excluded.push(rel);
      continue;
    }
    files.push({ path: rel, size: st.size, mtimeMs: st.mtimeMs });
  }
  return { files, excluded };
}
