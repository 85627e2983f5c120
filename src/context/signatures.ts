/**
 * A definition's signature as the repository map prints it: the line that names the definition (not the doc comment
 * the chunker joined to it, not a decorator or attribute that spells the name), with the lines its brackets open
 * joined onto it (a Python `def request(` whose parameters and return type follow on their own lines), and the
 * decorators just above it, each on its own row.
 */

/** Lines after a definition's first that may hold its name (a doc comment, a template or attribute line above it). */
export const SIGNATURE_SCAN = 24;
/** Lines a signature or a decorator may span (its brackets still open). */
export const SIGNATURE_SPAN = 12;
/** Longest signature shown, in characters, joined onto one line; longer ones end in `…`. */
const SIGNATURE_CHARS = 160;
/**
 * Longest decorator shown, and how many of a definition's decorators are (the nearest: `@classmethod` of
 * `@overload @classmethod`); each costs a row of the map's budget.
 */
const DECORATOR_CHARS = 80;
const DECORATORS = 1;

/** A line that is only a comment, or a comment's continuation (`//`, `#`, `--`, `/*`, ` * `, a docstring's quotes). */
const COMMENT_LINE = /^\s*(?:\/\/|\/\*|\*(?!\w)|#(?![[!]|include|define|if|pragma)|--|"""|'''|<!--)/;
/** A decorator, an annotation or an attribute: `@property`, `@app.get("/x")`, `@Override`, `#[derive(Debug)]`. */
const DECORATOR = /^\s*(?:@[A-Za-z_$][\w$.]*|#!?\[)/;

export interface SignatureRow {
  line: number;
  /** The last line the row stands for (a signature joined from several). */
  end: number;
  text: string;
}
export interface Signature extends SignatureRow {
  decorators: SignatureRow[];
}

/**
 * A definition's signature: the first line within a few of `start` that is code, not a decorator, and names the
 * definition (else the first that is code and not a decorator, else the first), joined with the lines its brackets
 * open (not for constants and variables: a table's rows are not its signature), with the decorators right above it.
 */
export function signatureAt(
  lines: Map<number, string> | undefined,
  start: number,
  name: string,
  kind = 'function',
  path = '',
): Signature | undefined {
  const first = lines?.get(start);
  if (!lines || first === undefined) return undefined;
  const join = kind !== 'constant' && kind !== 'variable';
  const lifetimes = path.endsWith('.rs');
  let fallback: Signature | undefined;
  let decorators: SignatureRow[] = [];
  for (let n = start; n <= start + SIGNATURE_SCAN; ) {
    const text = lines.get(n);
    if (text === undefined) break;
    if (!text.trim() || COMMENT_LINE.test(text)) {
      n++;
      continue;
    }
    if (DECORATOR.test(text)) {
      // a decorator whose brackets do not close within SIGNATURE_SPAN lines (a quote read wrong) is one line
      const { closed, ...d } = joined(lines, n, DECORATOR_CHARS, true, lifetimes);
      decorators.push(closed ? d : { line: n, end: n, text: clip(text.trimEnd(), DECORATOR_CHARS) });
      n = (closed ? d.end : n) + 1;
      continue;
    }
    const { closed: _, ...row } = joined(lines, n, SIGNATURE_CHARS, join, lifetimes);
    const sig = { ...row, decorators: decorators.slice(-DECORATORS) };
    if (!name || namesWord(text, name)) return sig;
    fallback ??= sig;
    decorators = [];
    n++;
  }
  return (
    fallback ?? { line: start, end: start, text: clip(first.trimEnd(), SIGNATURE_CHARS), decorators: [] }
  );
}

/** Line `n` with the lines its open brackets take to close (at most SIGNATURE_SPAN), comments left out. */
function joined(
  lines: Map<number, string>,
  n: number,
  limit: number,
  join: boolean,
  lifetimes = false,
): SignatureRow & { closed: boolean } {
  const parts: string[] = [];
  let depth = 0;
  let end = n;
  for (let m = n; m < n + SIGNATURE_SPAN; m++) {
    const raw = lines.get(m);
    if (raw === undefined) break;
    const { code, delta } = scan(raw, lifetimes);
    if (m > n && !code.trim()) continue;
    parts.push(m === n ? code.trimEnd() : code.trim());
    end = m;
    depth += delta;
    if (!join || depth <= 0) break;
  }
  const indent = /^\s*/.exec(parts[0] ?? '')![0];
  const text = parts
    .join(' ')
    .slice(indent.length)
    .replace(/\s+/g, ' ')
    .replace(/([([]) /g, '$1')
    .replace(/,? ([)\]])/g, '$1');
  return { line: n, end, text: clip(indent + text, limit), closed: depth <= 0 };
}

function clip(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

/**
 * A line's code without a trailing comment (`// …`, ` # …`), and how many brackets (round and square) it leaves
 * open; quotes are followed so that a bracket or `#` in a string counts for nothing (in Rust, a `'` that starts a
 * lifetime opens no string).
 */
function scan(line: string, lifetimes: boolean): { code: string; delta: number } {
  let delta = 0;
  let quote = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = '';
      continue;
    }
    if (c === "'" && lifetimes && /^'[A-Za-z_]\w*(?!['\w])/.test(line.slice(i))) continue; // Rust's `&'a str`
    if (c === '"' || c === "'" || c === '`') quote = c;
    else if (c === '(' || c === '[') delta++;
    else if (c === ')' || c === ']') delta--;
    else if (
      (c === '/' && line[i + 1] === '/') ||
      (c === '#' && i > 0 && /\s/.test(line[i - 1]!) && !/[[!]/.test(line[i + 1] ?? ''))
    )
      return { code: line.slice(0, i).trimEnd(), delta };
  }
  return { code: line, delta };
}

/** Does `text` hold `name` as a whole word (no identifier character on either side)? */
export function namesWord(text: string, name: string): boolean {
  const word = (c: string | undefined) => c !== undefined && /[\w$]/.test(c);
  for (let at = text.indexOf(name); at >= 0; at = text.indexOf(name, at + 1))
    if (!word(text[at - 1]) && !word(text[at + name.length])) return true;
  return false;
}
