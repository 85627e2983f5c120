import { createHash } from 'node:crypto';
import { type Dirent, existsSync, lstatSync, readdirSync, readFileSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import ignore, { type Ignore } from 'ignore';
import type { QuarryConfig } from '../config/config.ts';
import { DEFAULT_IGNORES, looksLikeSecretPath, rulesText, VERSION_CONTROL_IGNORES } from './ignore-rules.ts';
import { detectLanguage } from './languages.ts';
import { underAny } from './scope.ts';
import type { SkipReason } from './skips.ts';
import { gitTracked, recallVerdict, rememberVerdict } from './tracked.ts';

export { SKIP_REASONS, type SkipReason } from './skips.ts';

export interface WalkEntry {
  /** Repository-relative POSIX path. */
  path: string;
  size: number;
  mtimeMs: number;
}

/** A path left out by an ignore rule, and the rule's source. Folders are reported once, not their contents. */
export interface WalkIgnore {
  path: string;
  dir: boolean;
  /** `quarry's defaults`, `quarry.toml ignore`, `.git/info/exclude`, or the ignore file (`src/.gitignore`). */
  rule: string;
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

interface Verdict {
  ignored: boolean;
  unignored: boolean;
}

interface Matcher {
  /** Directory the patterns are relative to ('' for the root). */
  base: string;
  ig: Pick<Ignore, 'test'>;
  /** Where the patterns come from, for `quarry files`. */
  source: string;
}

const NO_VERDICT: Verdict = { ignored: false, unignored: false };
const IGNORED: Verdict = { ignored: true, unignored: false };

/**
 * The default ignores as sets instead of ~150 regular expressions: they are only folder names (`node_modules/`),
 * extensions (`*.png`, `*.min.js`), folder suffixes (`*.egg-info/`) and file names, so a lookup per path suffices.
 * This keeps a walk of a large repository fast (the regular expressions were most of its time).
 */
export function defaultsMatcher(patterns: readonly string[]): Pick<Ignore, 'test'> {
  const dirs = new Set<string>();
  const dirSuffixes: string[] = [];
  const names = new Set<string>();
  const suffixes: string[] = [];
  for (const p of patterns) {
    if (p.endsWith('/')) {
      const d = p.slice(0, -1);
      if (d.startsWith('*')) dirSuffixes.push(d.slice(1));
      else dirs.add(d);
    } else if (p.startsWith('*')) suffixes.push(p.slice(1));
    else names.add(p);
  }
  return {
    test(path: string) {
      const isDir = path.endsWith('/');
      const clean = isDir ? path.slice(0, -1) : path;
      const name = clean.slice(clean.lastIndexOf('/') + 1);
      if (isDir) {
        if (dirs.has(name) || dirSuffixes.some((x) => name.endsWith(x))) return IGNORED;
        return NO_VERDICT;
      }
      if (names.has(name) || suffixes.some((x) => name.endsWith(x))) return IGNORED;
      return NO_VERDICT;
    },
  };
}

function readPatterns(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Decides whether `rel` is ignored. Matchers are ordered lowest to highest priority (defaults, config, git's
 * exclude file, then `.gitignore` and `.quarryignore` from the root down); like git, the highest-priority matcher
 * that says anything about a path decides, so a nested `!negation` re-includes what a parent ignored.
 */
function verdict(
  m: Matcher,
  rel: string,
  isDir: boolean,
): { ignored: boolean; unignored: boolean } | undefined {
  let sub = rel;
  if (m.base) {
    if (!rel.startsWith(m.base + '/')) return undefined;
    sub = rel.slice(m.base.length + 1);
  }
  return m.ig.test(isDir ? sub + '/' : sub);
}

/**
 * `overridden` holds the matchers that ignore a parent folder that a higher-priority matcher re-included: their
 * say about the folder's contents comes from that parent rule, which no longer applies.
 */
function ignoredBy(
  matchers: readonly Matcher[],
  rel: string,
  isDir: boolean,
  overridden: ReadonlySet<Matcher>,
): Matcher | undefined {
  for (let i = matchers.length - 1; i >= 0; i--) {
    const m = matchers[i]!;
    if (overridden.has(m)) continue;
    const r = verdict(m, rel, isDir);
    if (!r) continue;
    if (r.ignored) return m;
    if (r.unignored) return undefined;
  }
  return undefined;
}

function isIgnored(
  matchers: readonly Matcher[],
  rel: string,
  isDir: boolean,
  overridden: ReadonlySet<Matcher>,
): boolean {
  return ignoredBy(matchers, rel, isDir, overridden) !== undefined;
}

const NONE: ReadonlySet<Matcher> = new Set();

const DEFAULTS_SOURCE = "quarry's defaults";

/**
 * Build-output folders that quarry's defaults skip only while git tracks no source file in them: a project's own
 * `build/` scripts (fastify's `build/*.js`, which generate `lib/`) are code to search. `dist/` is not among them: a
 * committed `dist/` is a generated bundle. Vendored folders are skipped whatever git tracks: that is what they are for.
 */
const BUILD_FOLDERS = new Set(['build', 'out', 'target', 'obj']);

/**
 * The files git tracks under a folder of `root` (repository-relative), or undefined outside a git work tree or when
 * git cannot say (tried twice; a failure is not cached: the next call asks again). Cached for a few seconds.
 */
export function trackedUnder(root: string, dirRel: string): string[] | undefined {
  const t = gitTracked(root, dirRel);
  return 'files' in t ? t.files : undefined;
}

/**
 * How many files git tracks in each path quarry's defaults left out (a folder counts the files under it): what the
 * defaults hid that the project keeps in version control, for `status` and `files --ignored` to name. Paths with
 * none are left out; empty outside a git work tree. One `git ls-files` for the whole tree; when it fails (twice),
 * the counts of the last time it answered.
 */
export function trackedByDefaults(root: string, ignored: readonly WalkIgnore[]): Map<string, number> {
  const out = new Map<string, number>();
  const wanted = ignored.filter((i) => i.rule === DEFAULTS_SOURCE && !/^\.(git|quarry)$/.test(i.path));
  if (!wanted.length || !existsSync(join(root, '.git'))) return out;
  const tracked = gitTracked(root, '');
  if ('none' in tracked) return out;
  if ('error' in tracked) {
    const last = recallVerdict(root, 'tracked by defaults');
    if (last && typeof last === 'object')
      for (const i of wanted) {
        const n = (last as Record<string, unknown>)[i.path];
        if (typeof n === 'number') out.set(i.path, n);
      }
    return out;
  }
  const dirs = new Set(wanted.filter((i) => i.dir).map((i) => i.path));
  const files = new Set(wanted.filter((i) => !i.dir).map((i) => i.path));
  for (const f of tracked.files) {
    if (files.has(f)) out.set(f, 1);
    for (let at = f.indexOf('/'); at > 0; at = f.indexOf('/', at + 1)) {
      const d = f.slice(0, at);
      if (dirs.has(d)) out.set(d, (out.get(d) ?? 0) + 1);
    }
  }
  rememberVerdict(root, 'tracked by defaults', Object.fromEntries(out));
  return out;
}

/** Where a walk's notices go when its caller takes none: stderr, once per folder until git answers again. */
const told = new Set<string>();
function defaultNotice(key: string): (message: string) => void {
  return (m) => {
    if (told.has(key)) return;
    told.add(key);
    process.stderr.write(`quarry: warning: ${m}\n`);
  };
}

/**
 * A default-ignored build folder that git tracks source files in is searched like any other. When git cannot say
 * (tried twice), the last verdict it gave stands, and the notice says so: a failing git never drops a tracked build
 * folder's source from an index, nor adds an untracked one's.
 */
function liftedBuildFolder(
  root: string,
  m: Matcher | undefined,
  rel: string,
  onNotice?: (message: string) => void,
): boolean {
  if (!m || m.source !== DEFAULTS_SOURCE) return false;
  if (!BUILD_FOLDERS.has(rel.slice(rel.lastIndexOf('/') + 1))) return false;
  const name = `lift ${rel}`;
  const tracked = gitTracked(root, rel);
  if ('none' in tracked) return false;
  if ('files' in tracked) {
    told.delete(`${root}\0${rel}`);
    const lifted = tracked.files.some((f) => detectLanguage(f).grammar !== undefined);
    rememberVerdict(root, name, lifted);
    return lifted;
  }
  const last = recallVerdict(root, name);
  const said = `what git tracks in ${rel}/ could not be read (${tracked.error})`;
  (onNotice ?? defaultNotice(`${root}\0${rel}`))(
    typeof last === 'boolean'
      ? `${said}: ${last ? 'walked' : 'left out'} as last known (git ${last ? 'tracked source in it' : 'tracked no source in it'})`
      : `${said}, and no earlier answer is known: left out by quarry's defaults until git answers`,
  );
  return last === true;
}

/** The rules every folder starts from: quarry's defaults, the config's `ignore`, git's exclude file. */
function baseMatchers(
  root: string,
  config: QuarryConfig,
  exclude = readPatterns(join(root, '.git', 'info', 'exclude')),
): Matcher[] {
  const base: Matcher[] = [{ base: '', ig: defaultsMatcher(DEFAULT_IGNORES), source: DEFAULTS_SOURCE }];
  if (config.ignore.length)
    base.push({ base: '', ig: ignore().add(config.ignore), source: 'quarry.toml ignore' });
  if (exclude) base.push({ base: '', ig: ignore().add(exclude), source: '.git/info/exclude' });
  return base;
}

function ignoreFile(dirRel: string, name: string, text: string): Matcher {
  return { base: dirRel, ig: ignore().add(text), source: dirRel ? `${dirRel}/${name}` : name };
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
   * Folders remembered from an earlier walk (`walk-cache.ts`): a folder whose own stat and ignore rules are what they
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

const IGNORE_FILES = ['.gitignore', '.quarryignore'];

/** Raise when the walk decides differently from the same rules: remembered folders are then read again. */
const WALK_RULES_VERSION = 2;

/**
 * A folder changed within this long before a walk is not remembered: a file system stamps times in ticks, and an
 * entry added in the same tick as the listing would leave the folder's stamp as it was (git's "racy" entries).
 */
const RACY_MS = 2_000;

/**
 * A folder's identity and last change: its device and inode, and the times any change of its entries sets. Times in
 * milliseconds with their fraction (a double keeps a quarter of a microsecond at today's dates), not BigInt
 * nanoseconds: a stat with BigInts costs about twice as much, and a change after a folder was remembered comes at
 * least RACY_MS later.
 */
function folderStamp(dirAbs: string): { stamp: number[]; changedMs: number } | undefined {
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
function sameRules(known: unknown, rules: string, overriddenAt: string): boolean {
  return (
    typeof known === 'string' &&
    known.length === rules.length + 1 + overriddenAt.length &&
    known.startsWith(rules) &&
    known.charCodeAt(rules.length) === 124 && // '|'
    known.endsWith(overriddenAt)
  );
}

/** Whether a remembered stamp (read from a file: anything) is this one. */
function sameStamp(known: unknown, now: readonly number[]): boolean {
  if (!Array.isArray(known) || known.length !== now.length) return false;
  for (let i = 0; i < now.length; i++) if (known[i] !== now[i]) return false;
  return true;
}

const SKIPS = new Set(['symlink', 'special', 'secret']);

/** A remembered folder's ignore files, when they are among the names a walk reads. */
function rememberedIgnoreFiles(names: unknown): boolean {
  return Array.isArray(names) && names.every((n) => IGNORE_FILES.includes(n));
}

/**
 * A remembered folder's decisions, when each is one a walk could have made there (the file is a hint, read from
 * disk: a damaged or edited one must not crash a walk, nor lead it out of the folder); undefined otherwise.
 */
function rememberedDecisions(known: FolderMemo, matchers: number): readonly Decision[] | undefined {
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
function addRules(fingerprint: string, source: string, text: string): string {
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
function baseFingerprint(
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
