// Whether a value looks like a secret and a name describes one (see chunk/redact.ts): entropy, word-likeness,
// references and placeholders, the name's strength; verdicts on values and names seen lately are remembered.
import { DESCRIPTOR, PLACEHOLDER } from './secret-rules.ts';

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
  const pieces = humps(value);
  let wordy = 0;
  for (const p of pieces) {
    if (p.length >= 3 && wordLike(p, 0.25, 4)) wordy += p.length;
    else if (p.length <= 2 && /^[A-Z]?[a-z]*$/.test(p) && pieces.length <= 3) wordy += p.length;
  }
  const letters = value.replace(/[-_.]/g, '').length;
  return letters >= 12 && wordy / letters < 0.7 && entropy(value) >= 3.2;
}

/** A bare value that looks like a key rather than an expression: no brackets or operators, long, mixed or dense. */
export function looksLikeKey(value: string, code: boolean): boolean {
  if (/[(){}[\]<>,;]|::|->|\$\{|#\{/.test(value)) return false;
  if (code && /^[A-Za-z_$][\w$]*$/.test(value)) return false; // an identifier
  if (/^[&*.!@]/.test(value)) return false; // a pointer, a member, a negation, an annotation
  return looksSecret(value, false);
}

/** Letters that read as words: most of them in pieces with vowels and short consonant runs. */
function wordyLetters(letters: string): boolean {
  let wordy = 0;
  for (const p of humps(letters)) if (p.length >= 3 && wordLike(p)) wordy += p.length;
  return wordy / letters.length >= 0.6;
}

/** A name's humps: split at separators and case changes (`getHTTPServer_v` is get, HTTP, Server, v). */
function humps(value: string): string[] {
  return value.split(/[-_.]+|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])/).filter(Boolean);
}

/** Pronounceable, like a word: vowels at least `vowelShare` of it, no consonant run over `maxRun`. */
function wordLike(value: string, vowelShare = 0.3, maxRun = 3): boolean {
  const lower = value.toLowerCase();
  const vowels = (lower.match(/[aeiouy]/g) ?? []).length;
  const run = Math.max(0, ...(lower.match(/[^aeiouy]+/g) ?? []).map((r) => r.length));
  return vowels / lower.length >= vowelShare && run <= maxRun;
}

/** A regular expression (a password policy) rather than a value: lookaheads, classes, quantifiers. */
function looksLikeRegex(value: string): boolean {
  const marks = [/\(\?[=!<:]/, /\.[*+]/, /\\[dwsS.]/, /\[[^\]]{1,20}\]/, /\{\d+,?\d*\}/, /^\^|\$$/].filter(
    (re) => re.test(value),
  ).length;
  return marks >= 2;
}

/** A reference to another value in code, not a value: a call, a member path, an environment lookup, a type. */
function looksLikeReference(value: string): boolean {
  if (/^[\w.$:>-]+\(.*\)[?!;]*$/.test(value) || /^[\w.$]+\(/.test(value)) return true; // a call
  if (/^[\w.$]+\[["']?[\w.$:-]+["']?\]$/.test(value)) return true; // a subscript (`environment["API_KEY"]`)
  if (/^[\w.$:]+[[(]$/.test(value)) return true; // an expression cut at its quote (`Configuration["…"]`)
  // a member or a path of names (`self.password`, `config.db.pass`, `lsp::ProgressToken`)
  if (/^&?(?:[A-Za-z_]\w*::)+[A-Za-z_]\w*$/.test(value)) return true;
  if (
    /^(?:self|this|cls|config|conf|cfg|settings|env|os|process|props|params|args|options|opts|request|req|ctx|context|app|user|credentials|secrets|vars|data|form|values)\.[\w.$]+$/i.test(
      value,
    )
  )
    return true;
  // names in camelCase or PascalCase, members of them (`currentUser.password`), a generic type (`Option<String>`):
  // humps of word-like letters, digits only at a part's end
  const words = value.replace(/<[\w<>, ?]+>|[?!]$/g, '');
  if (
    /^[A-Za-z_$][a-z_$]*(?:[A-Z][a-z_]+)*\d*(?:\.[A-Za-z_$][a-z_$]*(?:[A-Z][a-z_]+)*\d*)*$/.test(words) &&
    !lettersLookRandom(words.replace(/[\d.$]/g, ''))
  )
    return true;
  if (/^[A-Z_][A-Z0-9_]*$/.test(value) && !lettersLookRandom(value)) return true; // a constant's name
  // a member path of names that read as words (`b.CopySourceSSECustomerKeyMD5`, `libhttp.AuthConfig`)
  if (
    /^[A-Za-z_$][A-Za-z_$]*\d*(?:\.[A-Za-z_$][A-Za-z_$]*\d*)+$/.test(value) &&
    wordyLetters(value.replace(/[^A-Za-z]/g, ''))
  )
    return true;
  return false;
}

/** Not a value at all, whatever it is assigned to: placeholders, paths, numbers, versions, regexes, prose. */
function looksLikeNoValue(value: string): boolean {
  if (PLACEHOLDER.test(value)) return true;
  if (/^[<{$%]/.test(value) || /(?:\.\.\.|…)$/.test(value)) return true;
  if (/^\(.*\)$/.test(value)) return true; // a remark in parentheses (`(obscured)`)
  if (/^[^@\s]*@[\w-]+(?:\.[\w-]+)+(?:[/:]\S*)?$/.test(value)) return true; // a mail address, a host after a user
  if (/\$\{|#\{|\{\{|%\(\w+\)/.test(value)) return true; // an interpolation (`"#{user}:#{token}"`)
  if (/^(?:classpath|file|env|vault|secret|arn|ssm|projects)[:/]/i.test(value)) return true; // a reference to a secret
  if (/\/[\w.-]+\.(?:pem|key|crt|cer|p12|pfx|jks|json|ya?ml|txt|env|der|pub)$/i.test(value)) return true; // a file // a template's place (`<paste your token>`, `{{ .Values.x }}`, `$X`)
  if (/example/i.test(value)) return true; // AWS's documented example keys, example.com
  if (/^(.)\1{5,}$/.test(value)) return true; // xxxxxxxx: one character
  if (/^(?:[a-z][a-z0-9+.-]*:\/\/|\/|\.\.?\/|~\/)[\w./%?=&:@-]*$/i.test(value)) return true; // a URL or a path
  if (/^[a-z0-9_.-]+(?:\/[a-z0-9_.-]+)+\/?$/.test(value)) return true; // a relative path, a secret's name in a vault
  if (/^urn:/i.test(value)) return true; // a URN (`urn:ietf:params:oauth:token-type:jwt`)
  if (/^[A-Za-z][a-z']*(?:[ ,]+[A-Za-z][a-z']*)+[.?!:]?$/.test(value)) return true; // words with spaces (a label)
  if (/^[\d.:,_ -]+$/.test(value)) return true; // a number, a version, a time
  if (/^[~^<>=]*v?\d+(?:\.\d+)+(?:[-+][\w.]+)?$/.test(value)) return true; // a version, a version range
  if (/^#?[0-9a-f]{3,8}$/i.test(value) && value.length <= 9) return true; // a colour
  if (/^(?:sha\d+|md5)[-:]/i.test(value)) return true; // an integrity hash (`sha512-…`)
  if (looksLikeRegex(value)) return true;
  return false;
}

/**
 * Does a value assigned to a secret-sounding name look like a real secret? Under a name that can only hold a secret
 * (`password`, `api_token`: `strong`) any value that is no reference and no placeholder counts, a lower-case word or a
 * passphrase too; under a name that may hold other things (`cache_key`, `auth`) only a random-looking one does.
 */
export function looksSecret(value: string, strong = false, code = false): boolean {
  const key = `${strong ? 1 : 0}${code ? 1 : 0}${value}`;
  let known = verdicts.get(key);
  if (known === undefined) {
    if (verdicts.size > 4096) verdicts.clear();
    known = valueLooksSecret(value, strong, code);
    verdicts.set(key, known);
  }
  return known;
}
/** Verdicts on values and names seen lately: a file (or a hostile line) repeats them. */
const verdicts = new Map<string, boolean>();

function valueLooksSecret(value: string, strong: boolean, code: boolean): boolean {
  if (value.length < 6 || value.length > 8192) return false;
  if (looksLikeNoValue(value) || looksLikeReference(value)) return false;
  const uuid = /^(?:[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12})$/i.test(value);
  if (strong) {
    if (uuid) return true; // Heroku's, Snyk's and Codecov's keys are UUIDs
    if (/\s/.test(value)) return false;
    if (/^[A-Za-z]+[.!?:]$/.test(value)) return false; // a word ending a sentence
    if (/^[a-z]+$/.test(value))
      return (value.length >= 10 && !wordLike(value)) || value.length >= 16 || lettersLookRandom(value);
    // words joined: a passphrase in a config file; in code a name, a slug or a test's stand-in (`my-app-id`,
    // `will-be-overwritten`), and anywhere a name when they name a secret themselves (`session-refresh-token`)
    if (/^[A-Za-z]+(?:[-_.][A-Za-z]+)+$/.test(value) && (code || nameStrength(value))) return false;
    return true;
  }
  if (uuid || /\s/.test(value) || value.length < 12) return false;
  if (/^[A-Za-z_.-]+$/.test(value)) return lettersLookRandom(value);
  // an identifier, or a slug of words with a number (`exhaustivity-i12358`, `_mm512_xor_si512`): letters that read
  // as words and few digits
  const letters = value.replace(/[^A-Za-z]/g, '');
  const digits = value.replace(/\D/g, '').length;
  if (
    letters.length >= 4 &&
    !lettersLookRandom(letters) &&
    wordyLetters(letters) &&
    digits / value.length < 0.3
  )
    return false;
  const classes = [/[a-z]/, /[A-Z]/, /\d/, /[^A-Za-z0-9]/].filter((re) => re.test(value)).length;
  // a name that may hold other things (`key`, `auth`) takes a key-like value only: long, and mixed or dense
  return value.length >= 16 && entropy(value) >= (classes >= 3 ? 3 : 3.4) && classes >= 2;
}

/** A name's words, lower-cased: `dbPassword` is db, password; `X-Api-Key` is x, api, key. */
function nameParts(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

export const STRONG_NAME =
  /password|passwd|passphrase|secret|token|credential|apikey|requirepass|masterauth|(?:^|_)(?:pwd|pass|(?:api|access|private|account|signing|encryption|master|session|secret|license|client|app|admin|service|storage|write|read|ingest|insert|deploy)_(?:key|secret|token))(?:_|$)/;
export const WEAK_NAME = /(?:^|_)(?:auth|key|keys|pat|sig|signature|dsn|webhook_url|cookie)(?:_|$)|^auth/;
export const NOT_SECRET_PART =
  /(?:^|_)(?:public|pub|publishable|bypass|passthrough|passenger|compass|passive|tokenizer|tokenize|tokenized|author|authors|authority|keyboard|keyword|keywords|keystore_type|monkey|turkey|hotkey|keybinding)(?:_|$)/;

/**
 * How surely a name holds a secret: 2 for one that can hold nothing else (`DB_PASSWORD`, `apiToken`,
 * `new_relic_license_key`), 1 for one that may (`cosmosDbKey`, `GITHUB_PAT`, `auth`), 0 for one that describes a
 * secret rather than holds it (`password_hash_algorithm`, `token_type`, `public_key`).
 */
export function nameStrength(name: string): 0 | 1 | 2 {
  let known = strengths.get(name);
  if (known === undefined) {
    if (strengths.size > 4096) strengths.clear();
    known = strengthOf(name);
    strengths.set(name, known);
  }
  return known;
}
const strengths = new Map<string, 0 | 1 | 2>();

function strengthOf(name: string): 0 | 1 | 2 {
  const bare = name.replace(/^[$@.-]+|["'`]+$/g, '');
  const parts = nameParts(bare).join('_');
  if (DESCRIPTOR.test(`_${parts}`)) return 0;
  if (NOT_SECRET_PART.test(parts)) return 0;
  if (/(?:^|_)tokens?_(?:count|usage|limit|budget)/.test(parts)) return 0;
  if (STRONG_NAME.test(parts)) return 2;
  if (WEAK_NAME.test(parts) && !/^author/.test(parts)) return 1;
  return 0;
}
