import { lintSource } from '@secretlint/core';
import { creator as recommended } from '@secretlint/secretlint-rule-preset-recommend';
import RE2 from 're2';

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

/** Changes with any rule: an index made with another version is redacted again (indexing/indexer.ts). */
export const REDACTION_VERSION = '2';

interface Rule {
  name: string;
  re: RE2;
  /** Take it only when it looks random (values of secret-sounding names; formats are exact and need no test). */
  check?: 'random' | 'named';
  /** Groups that may hold the secret; the first one that matched is taken (0: the whole match). */
  groups: number[];
  /** A word the line must hold for the rule to apply (`.netrc`'s `machine`). */
  context?: RegExp;
}

const rule = (name: string, source: string, groups: number[], more: Partial<Rule> = {}): Rule => ({
  name,
  re: new RE2(source, 'gmd'),
  groups,
  ...more,
});
const ruleI = (name: string, source: string, groups: number[], more: Partial<Rule> = {}): Rule => ({
  name,
  re: new RE2(source, 'gimd'),
  groups,
  ...more,
});

/** Words that make a name secret-sounding (in any case, inside any identifier). */
const SECRET_WORD =
  'password|passwd|passphrase|pass|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|auth|credential|account[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|session[_-]?key|webhook[_-]?url|dsn';
/** A name holding one of them: `DB_PASSWORD`, `spring.datasource.password`, `X-Api-Key`, `$apiToken`. */
const NAME = `([A-Za-z0-9_.$-]{0,48}?(?:${SECRET_WORD})[A-Za-z0-9_.-]{0,32})`;
/** A type between a name and its value: `: string`, `: &'static str`, `: Option<String>`, Go's ` string`. */
const ANNOTATION = String.raw`(?:[ \t]*:[ \t]*[A-Za-z_&'\[\]<>.,* ]{1,40}?|[ \t]+(?:string|\[\]byte|str|String|&str))?`;
/** Assignment forms: `=`, `:=`, `?=`, `+=`, `::=`, `=>`, `==`, `<-`, `:` (YAML, JSON, headers). */
const OP = String.raw`[ \t]*(?:\?=|\+=|::?=|=>|==?|<-|:)[ \t]*`;
/** A value: quoted (groups +1..+3) or bare (group +4: up to whitespace; trailing punctuation is cut later). */
const VALUE =
  String.raw`(?:"([^"\n]{1,400})"|'([^'\n]{1,400})'|` +
  '`([^`\\n]{1,400})`' +
  String.raw`|([^\s"'` +
  '`' +
  ']{1,400}))';
/** Where a name starts: not inside another word. */
const START = '(?:^|[^A-Za-z0-9_.$-])';

/**
 * Providers' token formats, exact (no randomness test): secretlint's preset covers many, these are a second net and
 * the ones it lacks. One RE2 pass for all of them: each holds one group, the token.
 */
const FORMATS: ReadonlyArray<readonly [string, string]> = [
  ['AWS access key', String.raw`\b((?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16})\b`],
  ['GitHub token', String.raw`\b((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b`],
  ['GitLab token', String.raw`\b((?:glpat|gldt|glrt|glptt|glsoat|glcbt)-[A-Za-z0-9_-]{20,})`],
  ['npm token', String.raw`\b(npm_[A-Za-z0-9]{30,})\b`],
  ['PyPI token', String.raw`\b(pypi-AgE[A-Za-z0-9_-]{40,})`],
  ['Hugging Face token', String.raw`\b(hf_[A-Za-z0-9]{30,})\b`],
  ['Slack token', String.raw`\b(xox[abposre]-[A-Za-z0-9-]{10,})`],
  ['Slack webhook', String.raw`(https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,})`],
  [
    'Discord webhook',
    String.raw`(https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]{20,})`,
  ],
  ['Telegram bot token', String.raw`\b([0-9]{5,16}:A[A-Za-z0-9_-]{34})\b`],
  ['Stripe key', String.raw`\b((?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})\b`],
  ['Google API key', String.raw`\b(AIza[0-9A-Za-z_-]{35})`],
  ['Google OAuth secret', String.raw`\b(GOCSPX-[A-Za-z0-9_-]{28})`],
  ['SendGrid key', String.raw`\b(SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,50})`],
  ['Twilio key', String.raw`\b(SK[0-9a-f]{32})\b`],
  ['Mailgun key', String.raw`\b(key-[0-9a-f]{32})\b`],
  ['Mailchimp key', String.raw`\b([0-9a-f]{32}-us[0-9]{1,2})\b`],
  ['API key', String.raw`\b(sk-(?:proj-|svcacct-|admin-|ant-(?:api|admin)[0-9]{2}-)?[A-Za-z0-9_-]{32,})`],
  ['Shopify token', String.raw`\b(shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})\b`],
  ['DigitalOcean token', String.raw`\b(do[opr]_v1_[a-f0-9]{64})\b`],
  ['Databricks token', String.raw`\b(dapi[a-f0-9]{32}(?:-[0-9])?)\b`],
  ['Doppler token', String.raw`\b(dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44})\b`],
  ['Postman key', String.raw`\b(PMAK-[a-f0-9]{24}-[a-f0-9]{34})\b`],
  ['Pulumi token', String.raw`\b(pul-[a-f0-9]{40})\b`],
  ['Linear key', String.raw`\b(lin_(?:api|oauth)_[A-Za-z0-9]{40})\b`],
  ['Notion token', String.raw`\b((?:secret_[A-Za-z0-9]{43}|ntn_[0-9]{11}[A-Za-z0-9]{35}))\b`],
  ['Sentry token', String.raw`\b(sntr[ysu]_[A-Za-z0-9_=+/-]{40,})`],
  ['Grafana token', String.raw`\b(glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})`],
  ['New Relic key', String.raw`\b(NR(?:AK|JS|II)-[A-Za-z0-9]{19,32})\b`],
  ['Atlassian token', String.raw`\b(ATATT3[A-Za-z0-9_=-]{150,})`],
  ['age secret key', String.raw`\b(AGE-SECRET-KEY-1[0-9A-Z]{58})\b`],
  ['Square token', String.raw`\b(sq0(?:atp|csp)-[0-9A-Za-z_-]{22,43}|EAAA[A-Za-z0-9_-]{60})\b`],
  ['Heroku key', String.raw`\b(HRKU-[A-Za-z0-9_-]{60,})`],
  ['Dropbox token', String.raw`\b(sl\.[A-Za-z0-9_-]{130,})`],
  ['Discord token', String.raw`\b([MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40})\b`],
  ['Azure account key', '(?i:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{40,}={0,2})'],
  ['JWT', String.raw`\b(eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})`],
];
const FORMAT_RE = new RE2(FORMATS.map(([, source]) => source).join('|'), 'gmd');

export const RULES: Rule[] = [
  // a private key written on one line (a JSON service account's "private_key": "-----BEGIN…\n…")
  rule(
    'private key',
    String.raw`-----BEGIN[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----((?:\\n|\\r|[A-Za-z0-9+/=\s]){16,}?)-----END`,
    [1],
  ),
  // a password inside a URL: scheme://user:password@host
  ruleI('password', String.raw`\b[a-z][a-z0-9+.-]{0,20}://[^\s:/@'"]{0,100}:([^\s@/'"]{3,200})@`, [1], {
    check: 'random',
  }),
  // HTTP credentials: Authorization: Basic …, Bearer …
  rule(
    'credentials',
    String.raw`\b(?:Basic|Bearer|Token|token)[ \t]+([A-Za-z0-9+/._~-]{12,400}={0,2})`,
    [1],
    {
      check: 'random',
    },
  ),
  // password flags on command lines: --password=x, --password x, -p'x' (mysql, twine), -u user:x (curl), sshpass -p x
  ruleI(
    'password',
    String.raw`(?:--(?:password|passwd|pass|token|secret|api-key|apikey|auth-token)[= ]|\bsshpass[ \t]+-p[ \t]*|\b(?:mysql|mysqldump|mysqladmin|mariadb|twine|redis-cli)\b[^\n]{0,200}?[ \t](?:-p|-a)[ \t]?)(?:"([^"\n]{6,200})"|'([^'\n]{6,200})'|([^\s"']{6,200}))`,
    [1, 2, 3],
    { check: 'random' },
  ),
  ruleI(
    'password',
    String.raw`\b(?:docker|podman|helm|oras|buildah|nerdctl)[ \t]+(?:registry[ \t]+)?login\b[^\n]{0,200}?[ \t](?:-p|--password)[= ][ \t]*(?:"([^"\n]{6,200})"|'([^'\n]{6,200})'|([^\s"']{6,200}))`,
    [1, 2, 3],
    { check: 'random' },
  ),
  ruleI(
    'password',
    String.raw`\bcurl\b[^\n]{0,200}?[ \t](?:-u|--user)[ \t]+["']?[^\s:"']{1,100}:([^\s"']{6,200})`,
    [1],
    { check: 'random' },
  ),
  // PGPASSWORD=… psql, MYSQL_PWD=…: covered by names; `.netrc`: machine host login user password secret
  ruleI('password', String.raw`\b(?:password|passwd)[ \t]+([^\s"']{4,200})`, [1], {
    check: 'random',
    context: /\b(?:machine|login|default)\s+\S/,
  }),
  // `.pgpass`: host:port:database:user:password
  rule(
    'password',
    String.raw`^[A-Za-z0-9_.*-]{1,100}:(?:[0-9]{1,5}|\*):[A-Za-z0-9_.*-]{1,100}:[A-Za-z0-9_.*@-]{1,100}:([^\s]{6,200})$`,
    [1],
    {
      check: 'random',
    },
  ),
  // the default of an environment lookup: os.getenv("DB_PASSWORD", "…"), ENV.fetch("SECRET", "…")
  ruleI(
    'secret',
    String.raw`(?:getenv|environ\.get|ENV\.fetch|env|getOrDefault|define|setdefault|Getenv)\([ \t]*["']${NAME}["'][ \t]*,[ \t]*(?:"([^"\n]{6,200})"|'([^'\n]{6,200})')`,
    [2, 3],
    { check: 'named' },
  ),
  // a shell default: ${DB_PASSWORD:-…}
  ruleI('secret', String.raw`\$\{${NAME}:?-([^}\s]{6,200})\}`, [2], { check: 'named' }),
  ruleI(
    'secret',
    String.raw`process\.env\.${NAME}[ \t]*(?:\|\||\?\?)[ \t]*(?:"([^"\n]{6,200})"|'([^'\n]{6,200})')`,
    [2, 3],
    { check: 'named' },
  ),
  // XML: <password>…</password>, <add key="ApiKey" value="…"/>
  ruleI('secret', String.raw`<${NAME}>([^<\n]{6,400})</`, [2], { check: 'named' }),
  ruleI(
    'secret',
    String.raw`key=["']${NAME}["'][ \t]+value=(?:"([^"\n]{6,400})"|'([^'\n]{6,400})')`,
    [2, 3],
    {
      check: 'named',
    },
  ),
  // a header or directive followed by its quoted value: proxy_set_header X-API-Key "…", set $api_key "…"
  ruleI(
    'secret',
    String.raw`${START}["']?${NAME}["']?[ \t]+(?:"([^"\n]{6,400})"|'([^'\n]{6,400})')`,
    [2, 3],
    {
      check: 'named',
    },
  ),
  // a value assigned to a secret-sounding name anywhere on a line, in any assignment form, typed or not
  ruleI('secret', `${START}["'\`]?${NAME}["'\`]?${ANNOTATION}${OP}${VALUE}`, [2, 3, 4, 5], {
    check: 'named',
  }),
];

const PRIVATE_KEY_BLOCK = new RE2(
  String.raw`(-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----)([\s\S]*?)(-----END [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----)`,
  'gd',
);

const PLACEHOLDER =
  /^(?:\$\{?[\w.:-]+\}?|<[^>]*>|\{\{.*\}\}|\{[\w.]+\}|%\(?\w+\)?s?|%\w+%|x{4,}|X{4,}|\*{4,}|\.{3,}|#{4,}|changeme|change[-_]?me|password\d*|secret|token|example\w*|\w*example|dummy[\w-]*|fake[\w-]*|placeholder|your[-_\w]*|replace[-_\w]*|insert[-_\w]*|null|none|nil|true|false|undefined|test[\w-]*|todo|redacted.*|process\.env\..*|os\.environ.*|env\(.*|getenv.*|getpass.*)$/i;

/**
 * The last part of a name that says the value describes a secret rather than is one: `password_hash_algorithm`,
 * `token_type`, `secret_name`, `api_key_header`, `password_min_length`, `PASSWORD_REGEX`.
 */
const DESCRIPTOR =
  /[_.-](?:algorithm|algo|alg|policy|regex|regexp|re|pattern|length|len|min|max|minimum|maximum|format|type|kind|field|column|name|label|hint|prompt|placeholder|message|msg|error|errors|rule|rules|validator|validation|strength|complexity|expiry|expires|expiration|ttl|timeout|lifetime|age|url|uri|endpoint|path|file|dir|header|param|parameter|env|var|variable|id|ids|count|size|version|mode|scheme|method|provider|prefix|suffix|chars|charset|required|enabled|reset|changed|updated|confirm|confirmation|input|text|title|description|help|doc|docs|link|ref|arn|location|store|storage|manager|class|handler|service)$/i;

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

/**
 * Letters only (`-`, `_` and `.` between): words or an identifier (`getUserPassword`, `argon2id`, `hunter-two`), or
 * random letters (a Hugging Face token, a generated password). Words are pieces of length 3+ with vowels and short
 * consonant runs, split at case changes and separators; random letters change case mid-piece and run consonants.
 */
function lettersLookRandom(value: string): boolean {
  const pieces = value.split(/[-_.]+|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])/).filter(Boolean);
  let wordy = 0;
  for (const p of pieces) {
    const lower = p.toLowerCase();
    const vowels = (lower.match(/[aeiouy]/g) ?? []).length;
    const run = Math.max(0, ...(lower.match(/[^aeiouy]+/g) ?? []).map((r) => r.length));
    if (p.length >= 3 && vowels / p.length >= 0.25 && run <= 4) wordy += p.length;
    else if (p.length <= 2 && /^[A-Z]?[a-z]*$/.test(p) && pieces.length <= 3) wordy += p.length;
  }
  const letters = value.replace(/[-_.]/g, '').length;
  return letters >= 12 && wordy / letters < 0.7 && entropy(value) >= 3.2;
}

/** A regular expression (a password policy) rather than a value: lookaheads, classes, quantifiers. */
function looksLikeRegex(value: string): boolean {
  const marks = [/\(\?[=!<:]/, /\.[*+]/, /\\[dwsS.]/, /\[[^\]]{1,20}\]/, /\{\d+,?\d*\}/, /^\^|\$$/].filter(
    (re) => re.test(value),
  ).length;
  return marks >= 2;
}

/** Does a value assigned to a secret-sounding name look like a real secret? */
export function looksSecret(value: string): boolean {
  if (value.length < 6 || value.length > 400) return false;
  if (PLACEHOLDER.test(value)) return false;
  if (/example/i.test(value)) return false; // AWS's documented example keys, example.com
  if (/^[\w.$]+\(/.test(value) || /^\w+(?:\.\w+)*\(.*\)$/.test(value)) return false; // a call
  if (/^[A-Za-z_-]+(?:\.[A-Za-z_-]+)*$/.test(value) && !lettersLookRandom(value)) return false; // words, identifiers
  // a member or a path of names (`self.password`, `config.db.pass`): each part a word, digits only at its end
  if (/^[A-Za-z_$][a-z_$]*(?:[A-Z][a-z_]*)*\d*(?:\.[A-Za-z_$][a-z_$]*(?:[A-Z][a-z_]*)*\d*)+$/.test(value))
    return false;
  if (/^(?:[a-z][a-z0-9+.-]*:\/\/|\/|\.\.?\/|~\/)[\w./%?=&:@-]*$/i.test(value)) return false; // a URL or a path
  if (/^urn:/i.test(value)) return false; // a URN (`urn:ietf:params:oauth:token-type:jwt`)
  if (/^&?(?:[A-Za-z_]\w*::)+[A-Za-z_]\w*$/.test(value)) return false; // a path of names (`lsp::ProgressToken`)
  if (/^[A-Za-z]+(?:[ ][A-Za-z]+)+$/.test(value)) return false; // words with spaces (a label)
  if (/^[A-Z_][A-Z0-9_]*$/.test(value) && !lettersLookRandom(value)) return false; // a constant's name
  if (/^[\d.:,_ -]+$/.test(value)) return false; // a number, a version, a time
  if (/^v?\d+(?:\.\d+)+(?:[-+][\w.]+)?$/.test(value)) return false; // a version
  if (/^(?:[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12})$/i.test(value)) return false; // a UUID
  if (/^#?[0-9a-f]{3,8}$/i.test(value) && value.length <= 9) return false; // a colour
  if (/^(?:sha\d+|md5)[-:]/i.test(value)) return false; // an integrity hash (`sha512-…`)
  if (looksLikeRegex(value)) return false;
  if (/^[A-Za-z_-]+$/.test(value)) return lettersLookRandom(value);
  const classes = [/[a-z]/, /[A-Z]/, /\d/, /[^A-Za-z0-9]/].filter((re) => re.test(value)).length;
  return entropy(value) >= 2.8 && classes >= 2;
}

/** Is this name one whose value is the secret itself (not `password_hash_algorithm` or `token_type`)? */
function namesSecret(name: string): boolean {
  const bare = name.replace(/^[$@.-]+|["'`]+$/g, '');
  if (DESCRIPTOR.test(bare)) return false;
  // `pass` only as a word: `bypass`, `passthrough`, `compass` and `passenger` are no passwords
  if (
    !/password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|auth(?!or)|credential|account[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|session[_-]?key|webhook[_-]?url|dsn|(?:^|[^a-z])pass(?:[^a-z]|$)|[a-z]Pass(?:[^a-z]|$)/i.test(
      bare,
    )
  )
    return false;
  if (
    /(?:^|[^a-z])(?:bypass|passthrough|passenger|compass|passive|tokeni[sz]|tokens?_?(?:count|usage|limit))/i.test(
      bare,
    )
  )
    return false;
  return true;
}

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

function formatSpans(text: string, out: Span[]): void {
  FORMAT_RE.lastIndex = 0;
  for (let m = FORMAT_RE.exec(text); m; m = FORMAT_RE.exec(text)) {
    const g = m.findIndex((v, i) => i > 0 && v !== undefined);
    if (g < 1 || /EXAMPLE/i.test(m[g]!)) continue; // providers' documented example keys
    const [start, end] = m.indices![g]!;
    out.push({ start, end, name: FORMATS[g - 1]![0] });
  }
}

/**
 * What a line must hold for any rule but the formats to apply: a secret-sounding word, a URL, a command that takes a
 * password, a key block, or a `.pgpass` line's shape. One JavaScript pass over plain alternatives (linear); the RE2
 * rules then read only those lines, so a file of code pays for its few lines that name a secret, not for every line.
 */
const TRIGGER =
  /pass|pwd|secret|token|auth|credential|(?:api|access|private|account|signing|encryption|master|session|shared.?access)[_-]?key|apikey|dsn|webhook|:\/\/|basic|bearer|mysql|mariadb|twine|redis-cli|login|curl|-----BEGIN|^[^:\s]{1,100}:(?:\d{1,5}|\*):/gim;

/** The lines of the text that hold a trigger, joined, and where each starts in the text. */
function triggerLines(text: string): { sub: string; starts: number[]; subStarts: number[] } {
  const parts: string[] = [];
  const starts: number[] = [];
  const subStarts: number[] = [];
  let subAt = 0;
  TRIGGER.lastIndex = 0;
  for (let m = TRIGGER.exec(text); m; m = TRIGGER.exec(text)) {
    const start = text.lastIndexOf('\n', m.index) + 1;
    let end = text.indexOf('\n', m.index);
    if (end < 0) end = text.length;
    parts.push(text.slice(start, end));
    starts.push(start);
    subStarts.push(subAt);
    subAt += end - start + 1;
    TRIGGER.lastIndex = end + 1;
    if (end >= text.length) break;
  }
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
  PRIVATE_KEY_BLOCK.lastIndex = 0;
  for (let m = PRIVATE_KEY_BLOCK.exec(text); m; m = PRIVATE_KEY_BLOCK.exec(text)) {
    let [start, end] = m.indices![2]!;
    const body = m[2]!;
    start += body.length - body.trimStart().length;
    end -= body.length - body.trimEnd().length;
    if (end > start) out.push({ start, end, name: 'private key' });
  }
}

export function ruleSpans(whole: string, out: Span[]): void {
  formatSpans(whole, out);
  if (whole.includes('PRIVATE KEY')) keyBlockSpans(whole, out);
  const { sub: text, starts, subStarts } = triggerLines(whole);
  if (!text) return;
  const found: Span[] = [];
  namedSpans(text, found);
  for (const f of found) {
    const start = toText(f.start, subStarts, starts);
    out.push({ start, end: start + (f.end - f.start), name: f.name });
  }
}

function namedSpans(text: string, out: Span[]): void {
  for (const r of RULES) {
    r.re.lastIndex = 0;
    for (let m = r.re.exec(text); m; m = r.re.exec(text)) {
      const g = r.groups.find((i) => m![i] !== undefined);
      if (g === undefined) continue;
      let secret = m[g]!;
      let start = m.indices![g]![0];
      const bare = r.name === 'secret' && g === r.groups.at(-1) && r.groups.length === 4;
      if (bare) secret = trimBare(secret);
      if (!secret) continue;
      if (r.check === 'named' && !namesSecret(m[1]!)) continue;
      if (r.check && !looksSecret(secret)) continue;
      if (r.context) {
        const lineStart = text.lastIndexOf('\n', start) + 1;
        const lineEnd = text.indexOf('\n', start);
        if (!r.context.test(text.slice(lineStart, lineEnd < 0 ? undefined : lineEnd))) continue;
      }
      if (/\[REDACTED/.test(secret)) continue;
      if (start < 0) start = text.indexOf(secret, m.index);
      out.push({ start, end: start + secret.length, name: r.name });
    }
  }
}

const SECRETLINT_RULES = [{ id: '@secretlint/secretlint-rule-preset-recommend', rule: recommended }];

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
    if (/connection-string/.test(String(m.ruleId))) {
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
export async function findSecrets(text: string): Promise<Span[]> {
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
  ruleSpans(text, spans);
  spans.sort((a, b) => a.start - b.start || b.end - a.end);
  const merged: Span[] = [];
  for (const s of spans) {
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
export async function redactSecrets(text: string): Promise<Redacted> {
  const found = new Map<string, number>();
  const spans = await findSecrets(text);
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
