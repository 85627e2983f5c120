import ignore from 'ignore';
import { redactSecrets } from '../chunk/redact.ts';
import { QuarryError } from '../errors.ts';
import { foldCase } from '../store/trigram-terms.ts';
import type { SearchFilter } from '../store/types.ts';
import { typeLanguages } from '../workspace/languages.ts';
import { passesFilter } from './filter.ts';
import {
  GREP_LIMITS,
  type GrepLine,
  type GrepMatch,
  type GrepQuery,
  type GrepResponse,
} from './grep-rows.ts';
import { compilePattern, type LinePattern } from './regex.ts';
import { planTrigrams, type TrigramPlan } from './trigrams.ts';

export {
  GREP_LIMITS,
  type GrepLine,
  type GrepMatch,
  type GrepQuery,
  type GrepResponse,
  type GrepRow,
  grepRows,
} from './grep-rows.ts';

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
  options: { redact?: boolean } = {},
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
  else if (q.filesWithMatches) out.paths = [];
  // -l needs one matching line a file: the rest of the file is not looked at
  const perFile =
    q.filesWithMatches && !q.count ? { ...q, maxPerFile: 1, before: 0, after: 0, context: 0 } : q;
  // a line that lacks every group's literals cannot match: a JavaScript substring test spares the call into RE2
  // (which converts the line to UTF-8 each time) for nearly every line of a candidate file
  // (ASCII literals only: lower-casing is exact on them, where a Greek capital sigma lower-cases by its context;
  // without regard to case, a line is also folded as RE2 folds it, so that `static` finds `ſtatic`)
  const needles = plan?.flat().every((l) => /^[\x20-\x7e]*$/.test(l))
    ? {
        groups: plan!.map((g) => g.map((l) => l.toLowerCase())),
        fold: q.ignoreCase ? foldCase : (line: string) => line.toLowerCase(),
      }
    : null;
  const BATCH = 64;
  for (let i = 0; i < paths.length && !out.truncated; i += BATCH) {
    const batch = paths.slice(i, i + BATCH);
    const texts = await source.readLines(batch);
    for (const path of batch) {
      const raw = texts.get(path);
      if (!raw) continue;
      out.scanned++;
      // a minified file's one long line is cut around the match unless the query says how wide
      const fileQ = minified.has(path)
        ? { ...perFile, maxColumns: q.maxColumns ?? DEFAULT_MAX_COLUMNS }
        : perFile;
      let found = matchLines(path, raw, pattern, fileQ, needles);
      // secrets are matched as shown, redacted (chunk/redact.ts): no pattern can find, confirm or extract one, and
      // ranges are offsets into the line shown. Only a file that matches as written is redacted and matched again.
      if (found.length && options.redact)
        found = matchLines(path, await redactedLines(raw, path), pattern, fileQ, needles);
      if (!found.length) continue;
      out.files++;
      if (out.counts) {
        out.counts.push({ path, count: found.length });
        continue;
      }
      if (out.paths) {
        out.paths.push(path);
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

/** A file's lines with the secrets inside them redacted, line for line. */
async function redactedLines(lines: string[], path: string): Promise<string[]> {
  const { text } = await redactSecrets(lines.join('\n'), { path });
  return text.split('\n');
}

/** The matching lines of one file, with their context. */
function matchLines(
  path: string,
  lines: string[],
  pattern: LinePattern,
  q: GrepQuery,
  needles: { groups: string[][]; fold: (line: string) => string } | null,
): GrepMatch[] {
  const out: GrepMatch[] = [];
  const before = q.before ?? q.context ?? 0;
  const after = q.after ?? q.context ?? 0;
  const bare = Boolean(q.count); // a count needs the lines that match, not their context
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n] as string;
    if (needles) {
      const lower = needles.fold(line);
      if (!needles.groups.some((g) => g.every((l) => lower.includes(l)))) continue;
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
