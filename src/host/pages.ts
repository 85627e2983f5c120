/**
 * A page of a file's lines for a face to send: at most `maxChars` characters, always something. A line longer than a
 * page (a minified bundle's one line, a data file's) is sent in pieces: the page ends inside it and says at which
 * column to read on, so every file, one with chunks or without, is served within the same limits.
 */
export interface Page {
  /** The lines sent, the first from `column` on, the last cut at `nextColumn` when it goes on. */
  lines: string[];
  /** The last line sent (1-based). */
  end: number;
  /** Where the last line sent goes on (1-based column), when it was cut. */
  nextColumn?: number;
}

export function pageOf(start: number, lines: readonly string[], column: number, maxChars: number): Page {
  const out: string[] = [];
  let chars = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const from = i === 0 ? Math.min(line.length, Math.max(0, column - 1)) : 0;
    const rest = line.length - from;
    if (out.length && chars + rest + 1 > maxChars) break;
    if (rest > maxChars - chars) {
      // a line longer than the room left (the first one, or one alone): cut, never split a surrogate pair
      let cut = from + Math.max(1, maxChars - chars);
      if (/[\uD800-\uDBFF]/.test(line[cut - 1] ?? '')) cut++;
      out.push(line.slice(from, cut));
      return cut < line.length
        ? { lines: out, end: start + i, nextColumn: cut + 1 }
        : { lines: out, end: start + i };
    }
    out.push(from ? line.slice(from) : line);
    chars += rest + 1;
  }
  return { lines: out, end: start + out.length - 1 };
}
