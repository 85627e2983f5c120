import ignore from 'ignore';
import { QuarryError } from '../errors.ts';
import type { SearchFilter } from '../store/types.ts';
import { compilePattern, type LinePattern } from './regex.ts';
import { passesFilter } from './search.ts';
import { planTrigrams, type TrigramPlan } from './trigrams.ts';

/** What `quarry grep` (and the MCP tool and HTTP route of that name) asks for: ripgrep's options, over the index. */
export interface GrepQuery {
  pattern: string;
  /** -F: the pattern is a literal string. */
  fixed?: boolean;
  /** -i */
  ignoreCase?: boolean;
  /** -w: only matches with a word boundary on each side. */
  word?: boolean;
  /** -g: ripgrep's globs (gitignore syntax): a file passes when it matches one of them; `!glob` excludes. */
  globs?: string[];
  /** -t: languages or ripgrep's type names (py, ts, rust, …). */
  types?: string[];
  /** --path and --lang, as search has them. */
  filter?: SearchFilter;
  /** -C: lines of context before and after each matching line. */
  context?: number;
  /** -B and -A: lines of context before, and after, each matching line (each overrides -C on its side). */
  before?: number;
  after?: number;
  /** -c: count the matching lines of each file instead of returning them (`counts`; no overall limit applies). */
  count?: boolean;
  /** --files: list the files a search would read (`paths`), searching nothing; the pattern may be empty. */
  listFiles?: boolean;
  /** --hidden: search hidden files and folders too (a name starting with a dot), which ripgrep leaves out. */
  hidden?: boolean;
  /**
   * --no-ignore: search files that ignore rules leave out of the index (.gitignore, .quarryignore, quarry's defaults),
   * read from disk. Files with a secret-looking name and symbolic links are still never read.
   */
  noIgnore?: boolean;
  /** At most this many matching lines in all (the answer says when more were left out). */
  limit?: number;
  /** -m: at most this many matching lines per file. */
  maxPerFile?: number;
  /** Longest line shown, in characters (a longer one is cut around its first match). */
  maxColumns?: number;
  /** -a/--text: search binary files too, as text (ripgrep's flag). */
  binary?: boolean;
}

export interface GrepLine {
  line: number;
  text: string;
}

export interface GrepMatch {
  /** Repository-relative path. */
  path: string;
  /** 1-based line and column (UTF-16 code units) of the first match on the line. */
  line: number;
  column: number;
  text: string;
  /** Each match on the line, [start, end) in `text`. */
  ranges: Array<[number, number]>;
  before: GrepLine[];
  after: GrepLine[];
}

export interface GrepResponse {
  pattern: string;
  matches: GrepMatch[];
  /** Files with a match (among those read before the limit was reached). */
  files: number;
  /** Files read to verify: the trigram index's candidates, or every file that passes the filters. */
  scanned: number;
  /** Whether the trigram index narrowed the files (false: the pattern needs no literal of 3+ characters). */
  indexed: boolean;
  /** More matches exist than were returned. */
  truncated: boolean;
  /**
   * Files within the filters that were not searched, by why: binary (`binary: true` searches them) and holding a
   * secret (never). Minified files are text: they are searched, as ripgrep does, their long lines cut around the
   * match.
   */
  notSearched?: { binary: number; secret: number };
  /** With `count`: the matching lines of each file with a match, in path order. */
  counts?: Array<{ path: string; count: number }>;
  /** With `listFiles`: the files a search would read, in path order. */
  paths?: string[];
  /**
   * Files read from disk because they changed since the last index (modified or new), and indexed files left out
   * because they are gone from disk: grep answers from the working tree, as ripgrep does.
   */
  fromDisk?: { changed: number; deleted: number };
}

/** One printed row of a grep answer: a matching line, a context line, or a gap between groups that do not touch. */
export type GrepRow =
  | { kind: 'match'; match: GrepMatch }
  | { kind: 'context'; path: string; line: GrepLine }
  | { kind: 'gap' };

/**
 * The rows ripgrep prints for these matches, in order: each context line once (context shared by neighbouring
 * matches is not repeated, and a following match prints itself rather than as context), a gap where a group does not
 * touch the one before it. Every face that prints text (the CLI, the MCP tool) walks these.
 */
export function grepRows(matches: GrepMatch[]): GrepRow[] {
  const rows: GrepRow[] = [];
  const matched = new Set(matches.map((m) => `${m.line}:${m.path}`));
  let last: { path: string; line: number } | undefined;
  for (const m of matches) {
    const fresh = (l: number) => !last || last.path !== m.path || l > last.line;
    const first = m.before[0]?.line ?? m.line;
    if (last && (last.path !== m.path || first > last.line + 1)) rows.push({ kind: 'gap' });
    for (const b of m.before) if (fresh(b.line)) rows.push({ kind: 'context', path: m.path, line: b });
    if (fresh(m.line)) rows.push({ kind: 'match', match: m });
    last = { path: m.path, line: m.line };
    for (const a of m.after) {
      if (a.line <= last.line) continue;
      if (matched.has(`${a.line}:${m.path}`)) break; // the next match prints itself
      rows.push({ kind: 'context', path: m.path, line: a });
      last = { path: m.path, line: a.line };
    }
  }
  return rows;
}

/** Where a grep reads from: the index's trigram candidates, the indexed paths, and the files' lines. */
export interface GrepSource {
  /** Files that may match the plan (a superset), or undefined when the store keeps no trigram index. */
  candidates(plan: string[][]): Promise<string[] | undefined>;
  /** Every indexed path (files with text). */
  paths(): Promise<string[]>;
  readLines(paths: string[]): Promise<Map<string, string[]>>;
  /** Files indexed without chunks (binary, minified, a secret inside) that `keep` lets through, by what their bytes
   * are now (only those files are read). */
  skipped?(
    keep: (path: string) => boolean,
  ): Promise<Array<{ path: string; reason: 'binary' | 'minified' | 'secret' }>>;
  /** How many files the source read from disk instead of the index, and how many indexed files it left out as gone. */
  fromDisk?(): { changed: number; deleted: number };
}

/** Longest line of a minified file a grep answer shows by default: cut around its match. */
export const DEFAULT_MAX_COLUMNS = 500;

/** Upper bounds that every face applies, so that no caller can ask for an unbounded answer. */
export const GREP_LIMITS = { pattern: 1000, context: 20, limit: 10_000 };

/** ripgrep's type names for quarry's languages. */
const TYPE_ALIASES: Record<string, string[]> = {
  py: ['python'],
  ts: ['typescript', 'tsx'],
  js: ['javascript'],
  rs: ['rust'],
  rb: ['ruby'],
  cs: ['csharp'],
  sh: ['bash'],
  kt: ['kotlin'],
  md: ['markdown'],
  cc: ['cpp'],
  'c++': ['cpp'],
  yml: ['yaml'],
  hs: ['haskell'],
  ex: ['elixir'],
  ml: ['ocaml'],
};

/** The languages a -t value names. */
/** The languages a ripgrep type name or a language names (`ts` → typescript and tsx), or the name itself. */
export function languageAliases(type: string): string[] {
  const t = type.toLowerCase();
  return TYPE_ALIASES[t] ?? [t];
}

export function typeLanguages(type: string, known: readonly string[]): string[] {
  const t = type.toLowerCase();
  if (TYPE_ALIASES[t]) return TYPE_ALIASES[t];
  if (known.includes(t)) return [t];
  throw new QuarryError(
    'BAD_INPUT',
    `unknown file type "${type}": use a language (${known.slice(0, 12).join(', ')}, …) or ${Object.keys(TYPE_ALIASES).join(', ')}`,
  );
}

/** Which paths a query's globs, types and filter let through. */
function pathTest(q: GrepQuery, languages: string[] | undefined): (path: string) => boolean {
  const include = (q.globs ?? []).filter((g) => !g.startsWith('!'));
  const exclude = (q.globs ?? []).filter((g) => g.startsWith('!')).map((g) => g.slice(1));
  const inc = include.length ? ignore().add(include) : undefined;
  const exc = exclude.length ? ignore().add(exclude) : undefined;
  const filter: SearchFilter | undefined = languages
    ? { ...q.filter, languages: [...(q.filter?.languages ?? []), ...languages] }
    : q.filter;
  return (path) =>
    (q.hidden || !isHidden(path)) &&
    passesFilter(path, filter) &&
    (!inc || inc.ignores(path)) &&
    !(exc?.ignores(path) ?? false);
}

/** ripgrep's hidden files: any part of the path starts with a dot (`.github/workflows/ci.yml`, `src/.eslintrc`). */
export function isHidden(path: string): boolean {
  return path.startsWith('.') || path.includes('/.');
}

/**
 * Paths in the order ripgrep's `--sort path` prints them: part by part, so a folder's files come before a sibling
 * whose name extends the folder's (`a/b.ts` before `a-c.ts`, where a plain string sort puts `-` before `/`).
 */
export function comparePaths(a: string, b: string): number {
  const pa = a.split('/');
  const pb = b.split('/');
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const x = pa[i] as string;
    const y = pb[i] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return pa.length - pb.length;
}

/** Checks a query's bounds and compiles its pattern (BAD_INPUT, with what to do, when it cannot be used). */
export function prepareGrep(q: GrepQuery): { pattern: LinePattern; plan: TrigramPlan } {
  if (q.listFiles && !q.pattern) return { pattern: { ranges: () => [] }, plan: null };
  if (!q.pattern) throw new QuarryError('BAD_INPUT', 'grep needs a pattern: quarry grep PATTERN');
  if (q.pattern.length > GREP_LIMITS.pattern)
    throw new QuarryError('BAD_INPUT', `the pattern is over ${GREP_LIMITS.pattern} characters: shorten it`);
  if (Math.max(q.context ?? 0, q.before ?? 0, q.after ?? 0) > GREP_LIMITS.context)
    throw new QuarryError('BAD_INPUT', `context is at most ${GREP_LIMITS.context} lines`);
  const pattern = compilePattern(q.pattern, {
    fixed: q.fixed ?? false,
    ignoreCase: q.ignoreCase ?? false,
    word: q.word ?? false,
  });
  return { pattern, plan: planTrigrams(q.pattern, { fixed: q.fixed ?? false }) };
}

/**
 * ripgrep over the index: the trigram index names the files that may match, and each is read and verified line by
 * line with a linear-time regular expression engine (so a hostile pattern cannot hang a server). Files in path order.
 */
export async function grep(
  source: GrepSource,
  q: GrepQuery,
  known: readonly string[],
): Promise<GrepResponse> {
  const { pattern, plan } = prepareGrep(q);
  const languages = q.types?.length ? q.types.flatMap((t) => typeLanguages(t, known)) : undefined;
  const passes = pathTest(q, languages);
  const fromIndex = plan ? await source.candidates(plan) : undefined;
  // files indexed without chunks are in no trigram index: minified text is searched (and binary with `binary`),
  // a secret never; what is left out is counted, so the answer can say why a file was not searched
  const skipped = (await source.skipped?.(passes)) ?? [];
  const notSearched = { binary: 0, secret: 0 };
  const extra: string[] = [];
  for (const f of skipped)
    if (f.reason === 'minified' || (f.reason === 'binary' && q.binary)) extra.push(f.path);
    else notSearched[f.reason === 'binary' ? 'binary' : 'secret']++;
  const paths = [...new Set([...(fromIndex ?? (await source.paths())).filter(passes), ...extra])].sort(
    comparePaths,
  );
  const minified = new Set(extra);
  const limit = Math.min(q.limit ?? GREP_LIMITS.limit, GREP_LIMITS.limit);
  const out: GrepResponse = {
    pattern: q.pattern,
    matches: [],
    files: 0,
    scanned: 0,
    indexed: Boolean(fromIndex),
    truncated: false,
    ...(notSearched.binary || notSearched.secret ? { notSearched } : {}),
    ...(source.fromDisk ? { fromDisk: source.fromDisk() } : {}),
  };
  // ripgrep's --files lists what it would read, binary files included (it reads no content to list them)
  if (q.listFiles)
    return { ...out, paths: [...new Set([...paths, ...skipped.map((f) => f.path)])].sort(comparePaths) };
  if (q.count) out.counts = [];
  // a line that lacks every group's literals cannot match: a JavaScript substring test spares the call into RE2
  // (which converts the line to UTF-8 each time) for nearly every line of a candidate file
  // (ASCII literals only: lower-casing is exact on them, where a Greek capital sigma lower-cases by its context)
  const needles = plan?.flat().every((l) => /^[\x20-\x7e]*$/.test(l))
    ? plan!.map((g) => g.map((l) => l.toLowerCase()))
    : null;
  const BATCH = 64;
  for (let i = 0; i < paths.length && !out.truncated; i += BATCH) {
    const batch = paths.slice(i, i + BATCH);
    const texts = await source.readLines(batch);
    for (const path of batch) {
      const lines = texts.get(path);
      if (!lines) continue;
      out.scanned++;
      // a minified file's one long line is cut around the match unless the query says how wide
      const found = matchLines(
        path,
        lines,
        pattern,
        minified.has(path) ? { ...q, maxColumns: q.maxColumns ?? DEFAULT_MAX_COLUMNS } : q,
        needles,
      );
      if (!found.length) continue;
      out.files++;
      if (out.counts) {
        out.counts.push({ path, count: found.length });
        continue;
      }
      const room = limit - out.matches.length;
      if (found.length > room) {
        out.matches.push(...found.slice(0, room));
        out.truncated = true;
        break;
      }
      out.matches.push(...found);
    }
  }
  return out;
}

/** The matching lines of one file, with their context. */
function matchLines(
  path: string,
  lines: string[],
  pattern: LinePattern,
  q: GrepQuery,
  needles: string[][] | null,
): GrepMatch[] {
  const out: GrepMatch[] = [];
  const before = q.before ?? q.context ?? 0;
  const after = q.after ?? q.context ?? 0;
  const bare = Boolean(q.count); // a count needs the lines that match, not their context
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n] as string;
    if (needles) {
      const lower = line.toLowerCase();
      if (!needles.some((g) => g.every((l) => lower.includes(l)))) continue;
    }
    const ranges = pattern.ranges(line);
    if (!ranges.length) continue;
    const first = ranges[0] as [number, number];
    const shown = clip(line, first, q.maxColumns);
    out.push({
      path,
      line: n + 1,
      column: first[0] + 1,
      text: shown.text,
      ranges: ranges.map(([s, e]) => [s - shown.offset, e - shown.offset] as [number, number]),
      before: bare ? [] : around(lines, Math.max(0, n - before), n, q.maxColumns),
      after: bare ? [] : around(lines, n + 1, Math.min(lines.length, n + 1 + after), q.maxColumns),
    });
    if (q.maxPerFile && out.length >= q.maxPerFile) break;
  }
  return out;
}

function around(lines: string[], from: number, to: number, max: number | undefined): GrepLine[] {
  const out: GrepLine[] = [];
  for (let i = from; i < to; i++) out.push({ line: i + 1, text: clip(lines[i] as string, [0, 0], max).text });
  return out;
}

/** A line cut to `max` characters around a match, and where the cut starts. */
function clip(
  line: string,
  match: [number, number],
  max: number | undefined,
): { text: string; offset: number } {
  if (!max || line.length <= max) return { text: line, offset: 0 };
  const start = Math.max(0, Math.min(match[0] - Math.floor(max / 4), line.length - max));
  return { text: line.slice(start, start + max), offset: start };
}
