import { lintSource } from '@secretlint/core';
import { creator as recommended } from '@secretlint/secretlint-rule-preset-recommend';

/**
 * Secrets inside ordinary files (a cloud key in `settings.py`, a token in a kubeconfig, a password in a config file)
 * are indexed like any code, but never leave the machine as written: text that quarry sends to a model (assembled
 * context) or to an agent (MCP answers, search snippets, grep lines, file views) has them replaced by
 * `[REDACTED …]`, line for line, so that line numbers and citations still hold.
 *
 * Two rule sets, one step:
 * - secretlint's recommended preset (a maintained, widely used rule set, version pinned in package.json) finds the
 *   providers' token formats (AWS, GCP, Azure, GitHub, GitLab, npm, Slack, SendGrid, OpenAI, Anthropic, …),
 *   connection strings with passwords and private keys;
 * - quarry's own rules find what a format cannot: a value assigned to a secret-sounding name anywhere on a line, in a
 *   comment, a compose or YAML list item, XML or a properties file; URL credentials; password flags on command
 *   lines; HTTP Basic and Bearer credentials; the default of an environment lookup. Such a value counts when it looks
 *   random (entropy, mixed characters) and is no placeholder.
 * The figures on a corpus of realistic secrets and look-alikes are in docs/reliability.md (test/secrets.test.ts).
 */

interface Rule {
  name: string;
  re: RegExp;
  /** Index of the capture group holding the secret (0: the whole match). */
  group: number;
  /** Take it only when it looks random (values of secret-sounding names; formats are exact and need no test). */
  check?: boolean;
}

/** Names whose values are secrets: password = "…", api_key: …, AWS_SECRET_ACCESS_KEY=…, "auth": "…". */
const SECRET_NAME =
  '(?:[a-z0-9_.-]*(?:password|passwd|passphrase|pass(?![a-z])|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|auth(?!or)|credential|account[_-]?key)s?[a-z0-9_]*)';
/** Where a name may start: the line's start, after a comment marker, a list dash, an export, or any separator. */
const BEFORE = String.raw`(?:^|[\s,;:({\[<"'$]|\b(?:export|set|setx|ENV)\s+)`;
/** An assignment on one line (a name at the end of a line is no assignment of the next line's text). */
const ASSIGN = String.raw`[ \t]*(?::=|=>|==?|:(?!:))[ \t]*`;

const RULES: Rule[] = [
  // provider formats, exact (no entropy test): secretlint's preset covers most of them, but its stricter patterns
  // (lengths, checksums) pass by some realistic keys, so these stay as a second net
  { name: 'AWS access key', re: /\b((?:AKIA|ASIA)(?!\w*EXAMPLE)[0-9A-Z]{16})\b/g, group: 1 },
  {
    name: 'GitHub token',
    re: /\b((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b/g,
    group: 1,
  },
  { name: 'GitLab token', re: /\b(glpat-[A-Za-z0-9_-]{20,})\b/g, group: 1 },
  { name: 'npm token', re: /\b(npm_[A-Za-z0-9]{30,})\b/g, group: 1 },
  { name: 'Slack token', re: /\b(xox[abprs]-[A-Za-z0-9-]{10,})\b/g, group: 1 },
  { name: 'Slack webhook', re: /(https:\/\/hooks\.slack\.com\/services\/[A-Za-z0-9/_-]{20,})/g, group: 1 },
  { name: 'Stripe key', re: /\b((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})\b/g, group: 1 },
  { name: 'Google API key', re: /\b(AIza[0-9A-Za-z_-]{35})\b/g, group: 1 },
  { name: 'SendGrid key', re: /\b(SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,50})\b/g, group: 1 },
  { name: 'Twilio key', re: /\b(SK[0-9a-f]{32})\b/g, group: 1 },
  { name: 'API key', re: /\b(sk-(?:proj-|ant-(?:api\d+-)?)?[A-Za-z0-9_-]{32,})\b/g, group: 1 },
  { name: 'Azure account key', re: /AccountKey=([A-Za-z0-9+/]{40,}={0,2})/g, group: 1 },
  { name: 'JWT', re: /\b(eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})\b/g, group: 1 },
  // a password inside a URL: scheme://user:password@host
  { name: 'password', re: /\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@'"]*:([^\s@/'"]{3,})@/gi, group: 1, check: true },
  // HTTP credentials: Authorization: Basic …, Bearer …
  {
    name: 'credentials',
    re: /\b(?:Basic|Bearer|Token)\s+([A-Za-z0-9+/._~-]{12,}={0,2})/g,
    group: 1,
    check: true,
  },
  // password flags on command lines: --password=x, --password x, -p'x' (mysql), -u user:x (curl), sshpass -p x
  {
    name: 'password',
    re: /(?:--(?:password|passwd|pass|token|secret|api-key)[= ]|\bsshpass\s+-p\s*|\bmysql(?:dump|admin)?\b[^\n]*?\s-p)(["']?)([^\s"']{6,})\1/g,
    group: 2,
    check: true,
  },
  {
    name: 'password',
    re: /\b(?:docker|podman|helm|oras|buildah)\s+(?:registry\s+)?login\b[^\n]*?\s(?:-p|--password)[= ]\s*(["']?)([^\s"']{6,})\1/g,
    group: 2,
    check: true,
  },
  {
    name: 'password',
    re: /\bcurl\b[^\n]*?\s(?:-u|--user)\s+(["']?)[^\s:"']+:([^\s"']{6,})\1/g,
    group: 2,
    check: true,
  },
  // the default of an environment lookup: os.getenv("DB_PASSWORD", "…"), ENV.fetch("SECRET", "…")
  {
    name: 'secret',
    re: new RegExp(
      String.raw`(?:getenv|environ\.get|ENV\.fetch|env)\(\s*["']${SECRET_NAME}["']\s*,\s*(["'])([^"'\n]{6,})\1`,
      'gi',
    ),
    group: 2,
    check: true,
  },
  {
    name: 'secret',
    re: new RegExp(
      String.raw`(?:getOrDefault|define|setdefault)\(\s*["']${SECRET_NAME}["']\s*,\s*(["'])([^"'\n]{6,})\1`,
      'gi',
    ),
    group: 2,
    check: true,
  },
  // a shell default: ${DB_PASSWORD:-…}
  {
    name: 'secret',
    re: new RegExp(String.raw`\$\{${SECRET_NAME}:?-([^}\s]{6,})\}`, 'gi'),
    group: 1,
    check: true,
  },
  {
    name: 'secret',
    re: new RegExp(String.raw`process\.env\.${SECRET_NAME}\s*(?:\|\||\?\?)\s*(["'])([^"'\n]{6,})\1`, 'gi'),
    group: 2,
    check: true,
  },
  // XML: <password>…</password>, <add key="ApiKey" value="…"/>
  {
    name: 'secret',
    re: new RegExp(String.raw`<(${SECRET_NAME})>([^<\n]{6,})</\1>`, 'gi'),
    group: 2,
    check: true,
  },
  {
    name: 'secret',
    re: new RegExp(String.raw`key=["']${SECRET_NAME}["']\s+value=(["'])([^"'\n]{6,})\1`, 'gi'),
    group: 2,
    check: true,
  },
  // a quoted value of a secret-sounding name anywhere on a line: name = "…", "name": "…", Name: "…",
  {
    name: 'secret',
    re: new RegExp(`${BEFORE}["']?${SECRET_NAME}["']?${ASSIGN}(["'\`])([^"'\`\\n]{8,})\\1`, 'gi'),
    group: 2,
    check: true,
  },
  // a bare value: PASSWORD=… (env, compose list items, commented out), password: … (YAML), jdbc.password=…
  {
    name: 'secret',
    re: new RegExp(`${BEFORE}${SECRET_NAME}${ASSIGN}([^\\s"'\`#;,<>{}()\\[\\]]{8,})(?=\\s|$|[;,])`, 'gim'),
    group: 1,
    check: true,
  },
];

const PLACEHOLDER =
  /^(?:\$\{?[\w.:-]+\}?|<[^>]*>|\{\{.*\}\}|%\(?\w+\)?s?|x{4,}|\*{4,}|\.{3,}|changeme|change[-_]?me|password\d*|secret|token|example\w*|\w*example|dummy[\w-]*|fake[\w-]*|placeholder|your[-_\w]*|null|none|nil|true|false|undefined|test[\w-]*|todo|redacted.*|process\.env\..*|os\.environ.*|env\(.*|getenv.*|getpass.*)$/i;

/** Bits per character: random keys have 4+, words and identifiers 2.5–3.5. */
function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

/** Does a value assigned to a secret-sounding name look like a real secret? */
export function looksSecret(value: string): boolean {
  if (PLACEHOLDER.test(value)) return false;
  if (/^[a-z_.]+$/i.test(value) && !/\d/.test(value)) return false; // a word or an identifier
  if (/example/i.test(value)) return false; // AWS's documented example keys, example.com
  if (/^[\w.$]+\(/.test(value)) return false; // a call
  // a member or a path of names (`self.password`, `config.db.pass`): each part a word, digits only at its end
  if (/^[A-Za-z_$][a-z_$]*(?:[A-Z][a-z_]*)*\d*(?:\.[A-Za-z_$][a-z_$]*(?:[A-Z][a-z_]*)*\d*)+$/.test(value))
    return false;
  if (/^(?:[a-z][a-z0-9+.-]*:\/\/|\/)[\w./%?=&:-]*$/i.test(value)) return false; // a URL or a path
  if (/^urn:/i.test(value)) return false; // a URN (`urn:ietf:params:oauth:token-type:jwt`)
  if (/^&?(?:[A-Za-z_]\w*::)+[A-Za-z_]\w*$/.test(value)) return false; // a path of names (`lsp::ProgressToken`)
  if (/^[A-Za-z]+(?:[-_ ][A-Za-z]+)+$/.test(value)) return false; // words joined (`X-Api-Key`, a header's name)
  if (/^[A-Z_][A-Z0-9_]*$/.test(value)) return false; // a constant's name
  if (/^\d+$/.test(value)) return false; // a number
  if (/^(?:[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12})$/i.test(value)) return false; // a UUID
  const classes = [/[a-z]/, /[A-Z]/, /\d/, /[^A-Za-z0-9]/].filter((re) => re.test(value)).length;
  return entropy(value) >= 2.8 && classes >= 2;
}

const PRIVATE_KEY_BLOCK =
  /(-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)([\s\S]*?)(-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)/g;

export interface Redacted {
  text: string;
  /** What was replaced, by kind (`AWS access key: 1`). */
  found: Map<string, number>;
}

const SECRETLINT_RULES = [{ id: '@secretlint/secretlint-rule-preset-recommend', rule: recommended }];

/** The spans secretlint's recommended preset reports, as [start, end) offsets, with their rule's name. */
async function secretlintSpans(text: string): Promise<Array<{ start: number; end: number; name: string }>> {
  const result = await lintSource({
    source: { content: text, filePath: '/quarry/context.txt', ext: '.txt', contentType: 'text' },
    options: { config: { rules: SECRETLINT_RULES }, maskSecrets: false },
  });
  const spans: Array<{ start: number; end: number; name: string }> = [];
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
    if (/connection-string/.test(String(m.ruleId))) {
      const password = /:\/\/[^\s:/@]*:([^\s@]+)@/.exec(text.slice(start, end))?.[1];
      if (!password || !looksSecret(password)) continue;
    }
    spans.push({ start, end, name: labelOf(String(m.ruleId), String(m.messageId)) });
  }
  return spans;
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

/** The text with every secret found replaced, line count kept. */
export async function redactSecrets(text: string): Promise<Redacted> {
  const found = new Map<string, number>();
  const note = (name: string) => {
    found.set(name, (found.get(name) ?? 0) + 1);
    return `[REDACTED ${name}]`;
  };
  // secretlint first, on the text as written (its offsets are the text's); a span over several lines keeps them
  let out = text;
  const spans = (await secretlintSpans(text)).sort((a, b) => b.start - a.start);
  let last = Number.POSITIVE_INFINITY;
  for (const s of spans) {
    if (s.end > last) continue; // overlapping: the later one already covers it
    const inner = out.slice(s.start, s.end);
    const lines = inner.split('\n').length - 1;
    out = `${out.slice(0, s.start)}${note(s.name)}${'\n'.repeat(lines)}${out.slice(s.end)}`;
    last = s.start;
  }
  out = out.replace(PRIVATE_KEY_BLOCK, (_m, begin: string, body: string, end: string) => {
    if (body.includes('[REDACTED')) return `${begin}${body}${end}`;
    const lines = body.split('\n').length - 1;
    const marker = note('private key');
    return `${begin}\n${marker}${'\n'.repeat(Math.max(0, lines - 1))}${end}`;
  });
  for (const rule of RULES)
    out = out.replace(rule.re, (match: string, ...groups: unknown[]) => {
      const secret = rule.group ? String(groups[rule.group - 1]) : match;
      if (!secret || secret.includes('[REDACTED') || (rule.check && !looksSecret(secret))) return match;
      const at = match.lastIndexOf(secret);
      return `${match.slice(0, at)}${note(rule.name)}${match.slice(at + secret.length)}`;
    });
  return { text: out, found };
}
