/**
 * Secrets inside ordinary files (a cloud key in `settings.py`, a token in a kubeconfig, a password in a config file)
 * are indexed like any code, but never leave the machine as written: text that quarry sends to a model (assembled
 * context) or to an agent (MCP answers) has them replaced by `[REDACTED …]`, line for line, so that line numbers and
 * citations still hold. Known token formats are matched exactly; a value assigned to a secret-sounding name counts
 * when it looks random (entropy, mixed characters) and is no placeholder.
 */

interface Rule {
  name: string;
  re: RegExp;
  /** Index of the capture group holding the secret (0: the whole match). */
  group: number;
}

const RULES: Rule[] = [
  // provider token formats: exact, so no entropy test
  { name: 'AWS access key', re: /\b((?:AKIA|ASIA)[0-9A-Z]{16})\b/g, group: 1 },
  {
    name: 'GitHub token',
    re: /\b((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b/g,
    group: 1,
  },
  { name: 'Slack token', re: /\b(xox[abprs]-[A-Za-z0-9-]{10,})\b/g, group: 1 },
  { name: 'Slack webhook', re: /(https:\/\/hooks\.slack\.com\/services\/[A-Za-z0-9/_-]{20,})/g, group: 1 },
  { name: 'Stripe key', re: /\b((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})\b/g, group: 1 },
  { name: 'Google API key', re: /\b(AIza[0-9A-Za-z_-]{35})\b/g, group: 1 },
  { name: 'API key', re: /\b(sk-(?:proj-|ant-(?:api\d+-)?)?[A-Za-z0-9_-]{32,})\b/g, group: 1 },
  { name: 'JWT', re: /\b(eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})\b/g, group: 1 },
  // a password inside a URL: scheme://user:password@host
  { name: 'password', re: /\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@'"]+:([^\s@/'"]{3,})@/gi, group: 1 },
];

/** Names whose values are secrets: password = "…", api_key: …, AWS_SECRET_ACCESS_KEY=…, "auth": "…". */
const SECRET_NAME =
  '(?:[a-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|auth|credential)s?[a-z0-9_]*)';
/** Quoted values: `name = "value"`, `"name": "value"`, `name: 'value'`. */
const QUOTED = new RegExp(`(["']?${SECRET_NAME}["']?\\s*(?::=|=>|[:=])\\s*)(["'])([^"'\\n]{8,})\\2`, 'gi');
/** Bare values at the end of a line: `token: abc…` (YAML), `PASSWORD=abc…` (env, INI). */
const BARE = new RegExp(`^(\\s*(?:export\\s+)?${SECRET_NAME}\\s*[:=]\\s*)([^\\s"'#;,]{12,})\\s*$`, 'gim');

const PLACEHOLDER =
  /^(?:\$\{?[\w.]+\}?|<[^>]*>|\{\{.*\}\}|%\(?\w+\)?s?|x{4,}|\*{4,}|changeme|change[-_]?me|password|secret|token|example|dummy|placeholder|your[-_].*|null|none|true|false|undefined|test|todo|redacted.*|process\.env\..*|os\.environ.*|env\(.*|getenv.*)$/i;

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
function looksSecret(value: string): boolean {
  if (PLACEHOLDER.test(value)) return false;
  if (/^[a-z_.]+$/i.test(value) && !/\d/.test(value)) return false; // a word or an identifier
  if (/^[\w.]+\(/.test(value)) return false; // a call
  const classes = [/[a-z]/, /[A-Z]/, /\d/, /[^A-Za-z0-9]/].filter((re) => re.test(value)).length;
  return entropy(value) >= 3 && classes >= 2;
}

const PRIVATE_KEY_BLOCK =
  /(-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)([\s\S]*?)(-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)/g;

export interface Redacted {
  text: string;
  /** What was replaced, by kind (`AWS access key: 1`). */
  found: Map<string, number>;
}

/** The text with every secret found replaced, line count kept. */
export function redactSecrets(text: string): Redacted {
  const found = new Map<string, number>();
  const note = (name: string) => {
    found.set(name, (found.get(name) ?? 0) + 1);
    return `[REDACTED ${name}]`;
  };
  let out = text.replace(PRIVATE_KEY_BLOCK, (_m, begin: string, body: string, end: string) => {
    const lines = body.split('\n').length - 1;
    const marker = note('private key');
    return `${begin}\n${marker}${'\n'.repeat(Math.max(0, lines - 1))}${end}`;
  });
  for (const rule of RULES)
    out = out.replace(rule.re, (match: string, ...groups: unknown[]) => {
      const secret = rule.group ? String(groups[rule.group - 1]) : match;
      return match.replace(secret, note(rule.name));
    });
  out = out.replace(QUOTED, (match: string, head: string, quote: string, value: string) =>
    value.startsWith('[REDACTED') || !looksSecret(value) ? match : `${head}${quote}${note('secret')}${quote}`,
  );
  out = out.replace(BARE, (match: string, head: string, value: string) =>
    value.startsWith('[REDACTED') || !looksSecret(value) ? match : `${head}${note('secret')}`,
  );
  return { text: out, found };
}
