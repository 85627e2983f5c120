/**
 * Which literal text a pattern cannot match without: the query a trigram index answers with a superset of the files
 * that match (Russ Cox's "Regular Expression Matching with a Trigram Index", the plan behind Google Code Search and
 * zoekt, kept conservative). A plan is an OR of AND-groups of literals of three characters or more; `null` means the
 * pattern requires nothing the index can look for (`\w+`, `a|b.`), and every file must be read.
 */
export type TrigramPlan = string[][] | null;

/** Shortest literal a trigram index can look up. */
export const MIN_LITERAL = 3;

/** The literals a fixed string or a regular expression (JavaScript / RE2 syntax) needs in every match. */
export function planTrigrams(pattern: string, options: { fixed?: boolean } = {}): TrigramPlan {
  if (options.fixed) {
    const pieces = usable([pattern]);
    return pieces.length ? [pieces] : null;
  }
  const branches = splitTopLevel(pattern);
  if (!branches) return null;
  const plan: string[][] = [];
  for (const b of branches) {
    const group = usable(requiredLiterals(b) ?? []);
    if (!group.length) return null; // one branch the index cannot narrow: every file may match
    plan.push(group);
  }
  return plan;
}

/** Literals split at control characters (a NUL or a line break is nothing a line of text holds), 3+ long. */
function usable(literals: string[]): string[] {
  return literals
    .flatMap((l) => l.split(/[\u0000-\u0008\u000a-\u001f]/))
    .filter((l) => l.length >= MIN_LITERAL);
}

/** The pattern's top-level alternatives, or null when it cannot be read (an unbalanced group or class). */
function splitTopLevel(pattern: string): string[] | null {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') i++;
    else if (c === '[') {
      const end = classEnd(pattern, i);
      if (end < 0) return null;
      i = end;
    } else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === '|' && depth === 0) {
      out.push(pattern.slice(start, i));
      start = i + 1;
    }
    if (depth < 0) return null;
  }
  if (depth !== 0) return null;
  out.push(pattern.slice(start));
  return out;
}

/** Index of the `]` that closes the class opened at `open`, or -1. */
function classEnd(p: string, open: number): number {
  let i = open + 1;
  if (p[i] === '^') i++;
  if (p[i] === ']') i++; // a leading ] is literal
  for (; i < p.length; i++) {
    if (p[i] === '\\') i++;
    else if (p[i] === ']') return i;
  }
  return -1;
}

/** Index of the `)` that closes the group opened at `open`, or -1. */
function groupEnd(p: string, open: number): number {
  let depth = 0;
  for (let i = open; i < p.length; i++) {
    const c = p[i];
    if (c === '\\') i++;
    else if (c === '[') {
      i = classEnd(p, i);
      if (i < 0) return -1;
    } else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i;
  }
  return -1;
}

/** Escapes whose meaning is a set of characters or a position, not a literal character. */
const CLASS_ESCAPES = new Set('dDwWsSbBpPkKAzZQEx0123456789nrtfvcu'.split(''));

/** How many characters after `\e` belong to the escape (`\x41`, `\u{1F600}`, `\p{Lu}`, `\k<name>`, `\cJ`). */
function escapeTail(p: string, at: number, e: string): number {
  const rest = p.slice(at);
  const m =
    e === 'x'
      ? /^(\{[0-9a-fA-F]+\}|[0-9a-fA-F]{0,2})/.exec(rest)
      : e === 'u'
        ? /^(\{[0-9a-fA-F]+\}|[0-9a-fA-F]{0,4})/.exec(rest)
        : e === 'p' || e === 'P'
          ? /^(\{[^}]*\}|[A-Za-z])/.exec(rest)
          : e === 'k'
            ? /^<[^>]*>/.exec(rest)
            : e === 'c'
              ? /^[A-Za-z]/.exec(rest)
              : /^\d*/.exec(e >= '0' && e <= '9' ? rest : '');
  return m ? m[0].length : 0;
}

/** What follows an atom at `i`: how many characters the quantifier spans and whether the atom may be absent. */
function quantifier(p: string, i: number): { length: number; optional: boolean; repeated: boolean } {
  const c = p[i];
  let length = 0;
  let optional = false;
  let repeated = false;
  if (c === '*' || c === '?') [length, optional, repeated] = [1, true, c === '*'];
  else if (c === '+') [length, repeated] = [1, true];
  else if (c === '{') {
    const m = /^\{(\d*)(,?)(\d*)\}/.exec(p.slice(i));
    if (m) {
      length = m[0].length;
      optional = !m[1] || Number(m[1]) === 0;
      repeated = Boolean(m[2]) || Number(m[1]) > 1;
    }
  }
  if (length && (p[i + length] === '?' || p[i + length] === '+')) length++; // lazy or possessive
  return { length, optional, repeated };
}

/**
 * The literal runs every match of one alternative contains (runs shorter than MIN_LITERAL dropped); null when the
 * alternative cannot be read.
 */
function requiredLiterals(p: string): string[] | null {
  const out: string[] = [];
  let run = '';
  const flush = () => {
    if (run.length >= MIN_LITERAL) out.push(run);
    run = '';
  };
  for (let i = 0; i < p.length; ) {
    const c = p[i] as string;
    let atom: string | null = null; // a literal character, or null for anything else
    let next = i + 1;
    let inner: string[] | null = null;
    if (c === '\\') {
      const e = p[i + 1];
      if (e === undefined) return null;
      atom = CLASS_ESCAPES.has(e) || /[a-zA-Z0-9]/.test(e) ? null : e;
      next = i + 2 + escapeTail(p, i + 2, e);
    } else if (c === '[') {
      const end = classEnd(p, i);
      if (end < 0) return null;
      next = end + 1;
    } else if (c === '(') {
      const end = groupEnd(p, i);
      if (end < 0) return null;
      const body = p.slice(i + 1, end);
      next = end + 1;
      // lookarounds and inline flags require nothing; a capture or non-capture group without alternatives requires
      // what its body requires
      if (!/^\?[=!<]|^\?[a-zA-Z-]*\)?$/.test(body) || /^\?<[a-zA-Z_]/.test(body)) {
        const inside = body.replace(/^\?(?::|<[a-zA-Z_]\w*>|P<[a-zA-Z_]\w*>)/, '');
        const alts = splitTopLevel(inside);
        inner = alts && alts.length === 1 ? requiredLiterals(inside) : null;
      }
    } else if (c === '.' || c === '^' || c === '$') atom = null;
    else atom = c;
    const q = quantifier(p, next);
    next += q.length;
    if (atom !== null && !q.optional && !q.repeated) run += atom;
    else {
      if (atom !== null && !q.optional) run += atom; // at least once: the run ends after it
      flush();
      if (inner && !q.optional) out.push(...inner);
    }
    i = next;
  }
  flush();
  return out;
}
