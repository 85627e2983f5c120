/**
 * The ignore matcher: rules from quarry's defaults, the config, git's exclude file and each folder's `.gitignore` and
 * `.quarryignore`, and the verdict they give a path, decided like git's (the highest-priority matcher that says
 * anything about a path decides).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ignore, { type Ignore } from 'ignore';
import type { QuarryConfig } from '../../config/config.ts';
import { DEFAULT_IGNORES } from './rules.ts';

/** A path left out by an ignore rule, and the rule's source. Folders are reported once, not their contents. */
export interface WalkIgnore {
  path: string;
  dir: boolean;
  /** `quarry's defaults`, `quarry.toml ignore`, `.git/info/exclude`, or the ignore file (`src/.gitignore`). */
  rule: string;
}

interface Verdict {
  ignored: boolean;
  unignored: boolean;
}

export interface Matcher {
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

/** An ignore file's text, or undefined when there is none (or it cannot be read). */
export function readPatterns(file: string): string | undefined {
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
export function verdict(
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
export function ignoredBy(
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

export function isIgnored(
  matchers: readonly Matcher[],
  rel: string,
  isDir: boolean,
  overridden: ReadonlySet<Matcher>,
): boolean {
  return ignoredBy(matchers, rel, isDir, overridden) !== undefined;
}

export const NONE: ReadonlySet<Matcher> = new Set();

export const DEFAULTS_SOURCE = "quarry's defaults";

/** The rules every folder starts from: quarry's defaults, the config's `ignore`, git's exclude file. */
export function baseMatchers(
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

export function ignoreFile(dirRel: string, name: string, text: string): Matcher {
  return { base: dirRel, ig: ignore().add(text), source: dirRel ? `${dirRel}/${name}` : name };
}

/** The ignore files a folder may hold, lowest priority first. */
export const IGNORE_FILES = ['.gitignore', '.quarryignore'];
