import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { lintSource } from '@secretlint/core';
import { secretLintProfiler } from '@secretlint/profiler';
import { creator as recommended } from '@secretlint/secretlint-rule-preset-recommend';
import type RE2 from 're2';
import { DESCRIPTOR, FORMAT_RE, FORMATS, PLACEHOLDER, PRIVATE_KEY_BLOCK, RULES } from './secret-rules.ts';
import {
  looksLikeKey,
  looksSecret,
  NOT_SECRET_PART,
  nameStrength,
  STRONG_NAME,
  WEAK_NAME,
} from './secret-values.ts';

/**
 * Secrets inside ordinary files (a cloud key in `settings.py`, a token in a kubeconfig, a password in a `.env`) never
 * enter the index and never leave the machine: a file's text is redacted before it is chunked, so chunk text, the
 * lexical tables, symbols, snippets and what any embedder is sent hold `[REDACTED …]` where the value was, line for
 * line (line numbers and citations hold); grep over files on disk redacts each file before it matches; what goes to a
 * model or an agent is redacted once more on the way out.
 *
 * Two rule sets, one list of spans:
 * - secretlint's recommended preset (a maintained rule set, version pinned in package.json) finds providers' token
 *   formats, connection strings with passwords and private keys;
 * - quarry's own rules, each an RE2 pattern (linear time in the text, whatever it holds), find what a format cannot:
 *   a value assigned to a secret-sounding name (any assignment form, a type annotation between, quoted or bare),
 *   more providers' formats, URL credentials, password flags on command lines, HTTP credentials and key headers,
 *   `.netrc` and `.pgpass` lines, the default of an environment lookup. A value of a secret-sounding name counts when
 *   it looks random (`looksSecret`) and the name describes the secret rather than names a property of it
 *   (`password_hash_algorithm`, `token_type`).
 * The figures on a corpus of secrets and look-alikes are in docs/reliability.md (bench/secrets-eval.ts).
 */

export interface Span {
  start: number;
  end: number;
  name: string;
}

/** A bare value ends at whitespace; a trailing `;`, `,`, `)` or `}` and a `#` comment after a space are no part of it. */
function trimBare(value: string): string {
  let v = value.replace(/&[A-Za-z_]\w*=.*$/, '');
  for (;;) {
    const last = v.at(-1) ?? '';
    const opener = { ')': '(', ']': '[', '}': '{', '>': '<' }[last];
    if (last === ';' || last === ',' || (opener && !v.includes(opener))) v = v.slice(0, -1);
    else return v;
  }
}

/**
 * Calls `fn` for each match of an RE2 pattern: its groups and where it starts. A replace with a function is the fastest
 * way through RE2's binding (a quarter of an exec loop's time with indices, on a line of 45,000 matches).
 */
function eachMatch(
  re: RE2,
  text: string,
  fn: (match: string, groups: Array<string | undefined>, at: number) => void,
) {
  re.lastIndex = 0;
  if (!NON_ASCII.test(text)) {
    text.replace(re as unknown as RegExp, (match: string, ...rest: unknown[]) => {
      const at = rest.findIndex((v) => typeof v === 'number');
      fn(match, rest.slice(0, at) as Array<string | undefined>, rest[at] as number);
      return '';
    });
    return;
  }
  // past ASCII, RE2's binding finds each match's offset in a string by counting from its start (quadratic in the
  // matches): the text is matched as UTF-8 bytes once, and byte offsets become string offsets in one forward pass
  const buf = Buffer.from(text, 'utf8');
  let byte = 0;
  let char = 0;
  for (let m = re.exec(buf as unknown as string); m; m = re.exec(buf as unknown as string)) {
    const bytes = m as unknown as Buffer[] & { index: number };
    char += buf.toString('utf8', byte, bytes.index).length;
    byte = bytes.index;
    const groups = bytes.slice(1).map((g) => (g === undefined ? undefined : g.toString('utf8')));
    fn(bytes[0]!.toString('utf8'), groups, char);
    if (bytes[0]!.length === 0) re.lastIndex++;
  }
}
const NON_ASCII = /[^\x00-\x7f]/;

function formatSpans(text: string, out: Span[]): void {
  eachMatch(FORMAT_RE, text, (match, groups, at) => {
    const g = groups.findIndex((v) => v !== undefined);
    const token = groups[g];
    // providers' documented example keys, and placeholders in a format's shape (`ghp_xxxx…`, `AKIAXXXX…`)
    if (!token || /EXAMPLE/i.test(token) || /(.)\1{7,}/.test(token.slice(-12))) return;
    const start = at + match.lastIndexOf(token);
    out.push({ start, end: start + token.length, name: FORMATS[g]![0] });
  });
}

/**
 * What a line must hold for any rule but the formats to apply: a secret-sounding word, a URL, a command that takes a
 * password, a key block, or a `.pgpass` line's shape. One JavaScript pass over plain alternatives (linear); the RE2
 * rules then read only those lines, so a file of code pays for its few lines that name a secret, not for every line.
 */
const TRIGGER =
  /pass|pwd|secret|token|auth|credential|key|_pat\b|\bpat_|(?:api|access|private|account|signing|encryption|master|session|shared.?access)[_-]?key|apikey|dsn|webhook|:\/\/|basic|bearer|mysql|mariadb|twine|redis-cli|login|curl|smbclient|sqlcmd|ldap|identified|securestring|\bsig=|-----BEGIN|^[^:\s]{1,100}:(?:\d{1,5}|\*):/gim;

/** Lines after a trigger's line read with it. */
const FOLLOWING = 4;

/** The lines of the text that hold a trigger (and the few after each), joined, and where each part starts in the text. */
function triggerLines(text: string): { sub: string; starts: number[]; subStarts: number[] } {
  const parts: string[] = [];
  const starts: number[] = [];
  const subStarts: number[] = [];
  let subAt = 0;
  TRIGGER.lastIndex = 0;
  let start = -1;
  let end = -1;
  const close = () => {
    parts.push(text.slice(start, end));
    starts.push(start);
    subStarts.push(subAt);
    subAt += end - start + 1;
  };
  for (let m = TRIGGER.exec(text); m; m = TRIGGER.exec(text)) {
    const lineStart = text.lastIndexOf('\n', m.index) + 1;
    let lineEnd = text.indexOf('\n', m.index);
    if (lineEnd < 0) lineEnd = text.length;
    // the line and the few after it: a name and its value can sit on two lines (`name:` / `value:`); a trigger
    // inside the window stretches it, so the line after a window's last trigger is read too
    let to = lineEnd;
    for (let n = 0; n < FOLLOWING && to < text.length; n++) {
      const next = text.indexOf('\n', to + 1);
      to = next < 0 ? text.length : next;
    }
    if (start >= 0 && lineStart <= end) end = Math.max(end, to);
    else {
      if (start >= 0) close();
      start = lineStart;
      end = to;
    }
    TRIGGER.lastIndex = lineEnd + 1;
    if (lineEnd >= text.length) break;
  }
  if (start >= 0) close();
  return { sub: parts.join('\n'), starts, subStarts };
}

/** A span of the joined lines, back in the text. */
function toText(at: number, subStarts: number[], starts: number[]): number {
  let lo = 0;
  let hi = subStarts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (subStarts[mid]! <= at) lo = mid;
    else hi = mid - 1;
  }
  return starts[lo]! + (at - subStarts[lo]!);
}

/** Key blocks over several lines: `-----BEGIN … PRIVATE KEY-----` to its `END`, the lines between redacted. */
function keyBlockSpans(text: string, out: Span[]): void {
  eachMatch(PRIVATE_KEY_BLOCK, text, (_match, groups, at) => {
    const body = groups[1]!;
    const start = at + groups[0]!.length + (body.length - body.trimStart().length);
    const end = at + groups[0]!.length + body.trimEnd().length;
    if (end > start) out.push({ start, end, name: 'private key' });
  });
}

export function ruleSpans(whole: string, out: Span[], code = false): void {
  formatSpans(whole, out);
  if (/PRIVATE KEY|Static key V1|PuTTY-User-Key-File/.test(whole)) keyBlockSpans(whole, out);
  const { sub: text, starts, subStarts } = triggerLines(whole);
  if (!text) return;
  const found: Span[] = [];
  namedSpans(text, found, code);
  for (const f of found) {
    const start = toText(f.start, subStarts, starts);
    out.push({ start, end: start + (f.end - f.start), name: f.name });
  }
}

function namedSpans(text: string, out: Span[], code: boolean): void {
  for (const r of RULES) {
    if (r.needs && !r.needs.test(text)) continue;
    eachMatch(r.re, text, (match, groups, at) => {
      const g = r.groups.find((i) => groups[i - 1] !== undefined);
      if (g === undefined) return;
      const raw = groups[g - 1]!;
      const start = at + match.lastIndexOf(raw);
      // a value in no quotes ends at whitespace; its trailing `;`, `,` or unmatched bracket is no part of it
      const quoted = /["'`]$/.test(match.slice(0, start - at));
      const secret = quoted ? raw : trimBare(raw);
      if (!secret || /\[REDACTED/.test(secret)) return;
      const strength = r.check === 'named' ? nameStrength(groups[0]!) : r.name === 'password' ? 2 : 1;
      if (!strength || (r.strongOnly && strength < 2)) return;
      // in code a value in no quotes is an expression (`token := oauth2.Token{}`, `auth = &authorization{}`): it
      // counts only when it looks random, whatever its name; in a config file (.env, YAML, properties) it is a value
      if (!quoted && (code || strength < 2) && !looksLikeKey(secret, code)) return;
      if (r.check && !looksSecret(secret, strength === 2, code)) return;
      if (r.context) {
        // what comes just before (the line and the ones above it: `.netrc` puts `machine` and `login` there) and
        // just after, a bounded window: a long line is never read whole per match (that made 1,000 matches quadratic)
        if (!r.context.test(text.slice(Math.max(0, start - 300), start + 100))) return;
      }
      out.push({ start, end: start + secret.length, name: r.name });
    });
  }
}

const SECRETLINT_RULES = [{ id: '@secretlint/secretlint-rule-preset-recommend', rule: recommended }];

// secretlint's profiler marks every lint in Node's performance timeline and keeps every mark it sees, searching them
// all on each new one: a long-lived process (a server, a chat, an evaluation) slowed by the hour (20 of 26 s of CPU
// in one profile) and grew. quarry reads none of its measures: its marks are not made.
(secretLintProfiler as unknown as { mark: (marker: unknown) => void }).mark = () => {};

/** The spans secretlint's recommended preset reports, as [start, end) offsets, with their rule's name. */
async function secretlintSpans(text: string, out: Span[]): Promise<void> {
  const result = await lintSource({
    source: { content: text, filePath: '/quarry/context.txt', ext: '.txt', contentType: 'text' },
    options: { config: { rules: SECRETLINT_RULES }, maskSecrets: false },
  });
  for (const m of result.messages) {
    let [start, end] = m.range;
    // the secret itself where the rule names it: some rules' ranges start at the match, not at the secret (the AWS
    // rule reports `AWS_SECRET_ACCESS_KEY = "q8Zt…` for the key's length), so the key is looked up near the range:
    // first the copy that starts inside it, since an earlier copy close by (two snippets or grep lines joined) is
    // another finding's, and taking it would leave this one as written
    const key = (m.data as { KEY?: unknown } | undefined)?.KEY;
    if (typeof key === 'string' && key.length >= 8) {
      const inside = text.indexOf(key, start);
      const at =
        inside >= 0 && inside <= m.range[1]
          ? inside
          : text.indexOf(key, Math.max(0, start - key.length - 200));
      if (at >= 0) [start, end] = [at, at + key.length];
    }
    if (end <= start) continue;
    // a template's placeholder where the password would be (`postgresql://app:%(DB_PASSWORD)s@db`) is no secret
    if (/%\(\w+\)s|\$\{?\w+\}?@|\{\{[^}]*\}\}/.test(text.slice(m.range[0], m.range[1]))) continue;
    // a connection string's password must look like one: `scott:tiger` and `<password>` are documentation
    if (/connection-string|basicauth/.test(String(m.ruleId))) {
      const password = /:\/\/[^\s:/@]*:([^\s@]+)@/.exec(text.slice(start, end))?.[1];
      if (!password || !looksSecret(password)) continue;
    }
    out.push({ start, end, name: labelOf(String(m.ruleId), String(m.messageId)) });
  }
}

/** How a secretlint finding reads in the text (`[REDACTED GitHub token]`), by its rule (and, for AWS, its kind). */
const LABELS: Record<string, string> = {
  github: 'GitHub token',
  gitlab: 'GitLab token',
  npm: 'npm token',
  slack: 'Slack token',
  stripe: 'Stripe key',
  sendgrid: 'SendGrid key',
  openai: 'API key',
  anthropic: 'API key',
  gcp: 'Google key',
  privatekey: 'private key',
  basicauth: 'credentials',
  'database-connection-string': 'password',
  docker: 'credentials',
};

function labelOf(ruleId: string, messageId: string): string {
  const rule = ruleId.replace(/^@secretlint\/secretlint-rule-/, '');
  if (rule === 'aws') return /AccessKeyId/i.test(messageId) ? 'AWS access key' : 'AWS secret key';
  return LABELS[rule] ?? `${rule.replace(/-/g, ' ')} token`;
}

/** Lines longer than this are looked at in windows that overlap by WINDOW_OVERLAP, for secretlint's sake. */
const WINDOW = 262_144;
const WINDOW_OVERLAP = 4_096;

/** Every secret's span in the text, sorted, overlapping ones merged (the first finding's name kept). */
/** Code (a value in no quotes is an expression there) or not (a config file, a document, text of unknown origin). */
const CODE_FILE =
  /\.(?:[cm]?[jt]sx?|py|pyi|go|rs|java|kt|kts|scala|sc|groovy|gradle|c|h|cc|cpp|cxx|hpp|hh|m|mm|cs|fs|vb|rb|php|swift|dart|lua|ex|exs|erl|hs|ml|mli|clj|cljs|jl|r|pl|pm|zig|nim|v|sol|vue|svelte)$/i;

export interface RedactOptions {
  /** The file the text comes from: in code, a value in no quotes must look random to count. */
  path?: string;
}

export async function findSecrets(text: string, options: RedactOptions = {}): Promise<Span[]> {
  const spans: Span[] = [];
  if (!text) return spans;
  // secretlint's own patterns are JavaScript's: given at most WINDOW characters at a time, no input can hold it
  if (text.length <= WINDOW) await secretlintSpans(text, spans);
  else
    for (let at = 0; at < text.length; at += WINDOW - WINDOW_OVERLAP) {
      const part: Span[] = [];
      await secretlintSpans(text.slice(at, at + WINDOW), part);
      for (const s of part) spans.push({ start: s.start + at, end: s.end + at, name: s.name });
    }
  ruleSpans(text, spans, options.path !== undefined && CODE_FILE.test(options.path));
  // a placeholder in a token's shape (`ghp_xxxx…`, `AKIAXXXX…`) is no secret, whichever rule took it
  const kept = spans.filter((s) => !/(.)\1{7,}$/.test(text.slice(s.start, s.end)));
  kept.sort((a, b) => a.start - b.start || b.end - a.end);
  const merged: Span[] = [];
  for (const s of kept) {
    const last = merged.at(-1);
    if (last && s.start < last.end) last.end = Math.max(last.end, s.end);
    else merged.push({ ...s });
  }
  return merged;
}

export interface Redacted {
  text: string;
  /** What was replaced, by kind (`AWS access key: 1`). */
  found: Map<string, number>;
}

/** The text with every secret found replaced by `[REDACTED kind]`, line count kept. */
export async function redactSecrets(text: string, options: RedactOptions = {}): Promise<Redacted> {
  const found = new Map<string, number>();
  const spans = await findSecrets(text, options);
  if (!spans.length) return { text, found };
  const parts: string[] = [];
  let at = 0;
  for (const s of spans) {
    parts.push(text.slice(at, s.start));
    const inner = text.slice(s.start, s.end);
    const lines = inner.split('\n').length - 1;
    found.set(s.name, (found.get(s.name) ?? 0) + 1);
    parts.push(`[REDACTED ${s.name}]${'\n'.repeat(lines)}`);
    at = s.end;
  }
  parts.push(text.slice(at));
  return { text: parts.join(''), found };
}

function presetVersion(): string {
  try {
    return (
      createRequire(import.meta.url)('@secretlint/secretlint-rule-preset-recommend/package.json') as {
        version: string;
      }
    ).version;
  } catch {
    return 'unknown';
  }
}

/** Raised by hand when a rule's judgement (not its pattern) changes: `looksSecret`, `nameStrength` and the like. */
const JUDGEMENT_REVISION = 3;

/**
 * The rule set's version: the judgement's revision, and a hash of every pattern and of secretlint's preset version.
 * An index made with another version is redacted again (indexing/indexer.ts).
 */
export const REDACTION_VERSION = `${JUDGEMENT_REVISION}-${createHash('sha256')
  .update(
    JSON.stringify([
      FORMATS,
      RULES.map((r) => [r.name, r.re.source, r.re.flags, r.groups, r.check, r.strongOnly, String(r.context)]),
      PRIVATE_KEY_BLOCK.source,
      TRIGGER.source,
      [PLACEHOLDER, DESCRIPTOR, STRONG_NAME, WEAK_NAME, NOT_SECRET_PART, CODE_FILE].map(String),
      presetVersion(),
    ]),
  )
  .digest('hex')
  .slice(0, 12)}`;
