import RE2 from 're2';
import { QuarryError } from '../errors.ts';

/** A compiled grep pattern: the matches on one line, [start, end) each, in order. */
export interface LinePattern {
  ranges(line: string): Array<[number, number]>;
}

/** Matches beyond this many on one line are not listed (a minified line can hold thousands). */
const MAX_RANGES = 100;

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/**
 * Compiles a grep pattern with RE2 (through the `re2` binding): linear time in the text whatever the pattern, so a
 * hostile pattern cannot hang a server. RE2's syntax is ripgrep's, less backreferences and lookarounds (which RE2
 * refuses, with the error shown).
 */
export function compilePattern(
  pattern: string,
  options: { fixed: boolean; ignoreCase: boolean; word: boolean },
): LinePattern {
  let source = options.fixed ? escapeRegex(pattern) : pattern;
  if (options.word) source = `\\b(?:${source})\\b`;
  let re: RE2;
  try {
    re = new RE2(source, options.ignoreCase ? 'giu' : 'gu');
  } catch (err) {
    const why =
      err instanceof Error ? err.message.replace(/^Invalid regular expression:\s*/i, '') : String(err);
    throw new QuarryError(
      'BAD_INPUT',
      `not a regular expression RE2 accepts (${why}): fix it, or pass -F to search for the text as it is`,
    );
  }
  return {
    ranges(line) {
      const out: Array<[number, number]> = [];
      re.lastIndex = 0;
      for (let m = re.exec(line); m && out.length < MAX_RANGES; m = re.exec(line)) {
        const end = m.index + m[0].length;
        out.push([m.index, end]);
        if (end === m.index) {
          // an empty match (`^`, `x*`): step past it, or exec finds it again forever
          if (end >= line.length) break;
          re.lastIndex = end + 1;
        }
      }
      return out;
    },
  };
}
