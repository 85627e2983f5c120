import type { SearchFilter } from '../store/types.ts';

// What a grep asks and answers, and the rows a face prints: apart from the grep itself (its regular expressions,
// trigram plans and file reads), so that a face that prints another quarry's answer loads none of it.

/** Upper bounds that every face applies, so that no caller can ask for an unbounded answer. */
export const GREP_LIMITS = { pattern: 1000, context: 20, limit: 10_000 };

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
  /**
   * -l: the files with a match (`paths`), each read only to its first matching line; no overall limit applies (a
   * list of files is bounded by the index, where a limit on lines cut it at whichever file reached it).
   */
  filesWithMatches?: boolean;
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
