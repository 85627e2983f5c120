import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { lintSource } from '@secretlint/core';
import { secretLintProfiler } from '@secretlint/profiler';
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

interface Rule {
  name: string;
  re: RE2;
  /** Take it only when it looks random (values of secret-sounding names; formats are exact and need no test). */
  check?: 'random' | 'named';
  /** Groups that may hold the secret; the first one that matched is taken (0: the whole match). */
  groups: number[];
  /** A word the text must hold somewhere for the rule to be run at all. */
  needs?: RegExp;
  /** Only under a name that can hold nothing but a secret (a directive's bare value). */
  strongOnly?: boolean;
  /** A word the line must hold for the rule to apply (`.netrc`'s `machine`). */
  context?: RegExp;
}

const rule = (name: string, source: string, groups: number[], more: Partial<Rule> = {}): Rule => ({
  name,
  re: new RE2(source, 'gm'),
  groups,
  ...more,
});
const ruleI = (name: string, source: string, groups: number[], more: Partial<Rule> = {}): Rule => ({
  name,
  re: new RE2(source, 'gim'),
  groups,
  // a rule about a secret-sounding name is skipped, at the cost of one JavaScript scan, where no such word occurs
  ...(source.includes(NAME) || source.includes(CALL_NAME) ? { needs: SECRET_WORD_JS } : {}),
  ...more,
});

/** Words that make a name secret-sounding (in any case, inside any identifier). */
const SECRET_WORD =
  'password|passwd|passphrase|pass|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|auth|credential|account[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|session[_-]?key|webhook[_-]?url|dsn|requirepass|masterauth|key|pat|sig|signature';
/** A name holding one of them: `DB_PASSWORD`, `spring.datasource.password`, `X-Api-Key`, `$apiToken`. */
const NAME = `([A-Za-z0-9_.$-]*?(?:${SECRET_WORD})[A-Za-z0-9_.-]*)`;
const SECRET_WORD_JS = new RegExp(SECRET_WORD, 'i');
/** A setter's name: the secret word ends it (`setPassword`, `.apiKey`, `withToken`; not `token_from`). */
const CALL_NAME = `([A-Za-z0-9_.$-]*?(?:${SECRET_WORD}))`;
/** A type between a name and its value: `: string`, `: &'static str`, `: Option<String>`, Go's ` string`. */
const ANNOTATION = String.raw`(?:[ \t]*:[ \t]*&?(?:'[a-z]+[ \t]+)?[A-Za-z_][A-Za-z0-9_\[\]<>.*?]*|[ \t]+(?:string|\[\]byte|str|String|&str)|[ \t]*\[[0-9]*\]|[ \t]*\{[ \t]*get;[^}\n]*\})?`;
/** Assignment forms: `=`, `:=`, `?=`, `+=`, `::=`, `=>`, `==`, `<-`, `:` (YAML, JSON, headers). */
const OP = String.raw`[ \t]*(?:\?=|\+=|::?=|=>|==?|<-|:)[ \t]*`;
/** A value: quoted (groups +1..+3) or bare (group +4: up to whitespace; trailing punctuation is cut later). */
const VALUE =
  String.raw`(?:(?:(?:String::from|String|SecretStr|SecretString|Secret|Some|Buffer\.from|bytes|str|new String|Password|SecureString)\([ \t]*|[bru]|@)?(?:\\?"([^"\\\n]{6,})\\?"|'([^'\n]{6,})'|` +
  '`([^`\\n]{6,})`)' +
  String.raw`|([^\s"':` +
  '`' +
  '][^\\s"\'`]{5,}))';
/** Where a name starts: not inside another word. */
const START = '(?:^|[^A-Za-z0-9_.$-])';

/**
 * Providers' token formats, exact (no randomness test): secretlint's preset covers many, these are a second net and
 * the ones it lacks. One RE2 pass for all of them: each holds one group, the token.
 */
const FORMATS: ReadonlyArray<readonly [string, string]> = [
  ['AWS access key', String.raw`\b((?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16})\b`],
  ['GitHub token', String.raw`\b((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b`],
  [
    'GitLab token',
    String.raw`\b((?:glpat|gldt|glrt|glptt|glsoat|glcbt|glagent|gloas|glimt|glffct)-[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9]{2}\.[A-Za-z0-9]{5,12})?|GR1348941[A-Za-z0-9_-]{20,})`,
  ],
  ['npm token', String.raw`\b(npm_[A-Za-z0-9]{30,})\b`],
  ['PyPI token', String.raw`\b(pypi-AgE[A-Za-z0-9_-]{40,})`],
  ['Hugging Face token', String.raw`\b((?:hf_|api_org_)[A-Za-z0-9]{30,})\b`],
  ['Slack token', String.raw`\b(xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})`],
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
  ['Databricks token', String.raw`\b(dapi[a-h0-9]{32}(?:-[0-9])?)\b`],
  [
    'Doppler token',
    String.raw`\b(dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_-]{1,20}\.)?[A-Za-z0-9]{40,44})\b`,
  ],
  ['Postman key', String.raw`\b(PMAK-[a-f0-9]{24}-[a-f0-9]{34})\b`],
  ['Pulumi token', String.raw`\b(pul-[a-f0-9]{40})\b`],
  ['Linear key', String.raw`\b(lin_(?:api|oauth)_[A-Za-z0-9]{40,})\b`],
  ['Notion token', String.raw`\b((?:secret_[A-Za-z0-9]{43}|ntn_[0-9]{11}[A-Za-z0-9]{35}))\b`],
  ['Sentry token', String.raw`\b(sntry[su]_[A-Za-z0-9_=+/-]{40,})`],
  ['Grafana token', String.raw`\b(glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})`],
  ['New Relic key', String.raw`\b(NR(?:AK|JS|II)-[A-Za-z0-9_-]{19,40}|[a-f0-9]{36}NRAL)\b`],
  ['Atlassian token', String.raw`\b(ATATT3[A-Za-z0-9_=-]{150,})`],
  ['age secret key', String.raw`\b(AGE-SECRET-KEY-1[0-9A-Z]{58})\b`],
  ['Square token', String.raw`\b(sq0(?:atp|csp)-[0-9A-Za-z_-]{22,43}|EAAA[A-Za-z0-9_-]{60})\b`],
  ['Heroku key', String.raw`\b(HRKU-[A-Za-z0-9_-]{60,})`],
  ['Dropbox token', String.raw`\b(sl\.[A-Za-z0-9_-]{130,})`],
  ['Discord token', String.raw`\b([MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40})\b`],
  ['Bitbucket token', String.raw`\b(ATBB[A-Za-z0-9_=.-]{32,})`],
  ['Azure client secret', String.raw`(?:^|[^A-Za-z0-9_~.])([A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})`],
  ['Azure SAS signature', String.raw`[?&]sig=([A-Za-z0-9%+/=]{30,})`],
  ['Google OAuth token', String.raw`\b(ya29\.[0-9A-Za-z_-]{20,}|1//0[0-9A-Za-z_-]{40,})`],
  [
    '1Password token',
    String.raw`\b(ops_eyJ[A-Za-z0-9+/=_-]{100,}|A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5})`,
  ],
  ['Adafruit key', String.raw`\b(aio_[A-Za-z0-9]{28})\b`],
  ['Alibaba key', String.raw`\b(LTAI[A-Za-z0-9]{20})\b`],
  ['Airtable token', String.raw`\b(pat[A-Za-z0-9]{14}\.[a-f0-9]{64})\b`],
  ['Clojars token', String.raw`\b(CLOJARS_[a-z0-9]{60})\b`],
  ['Contentful token', String.raw`\b(CFPAT-[A-Za-z0-9_-]{43})`],
  ['Duffel token', String.raw`\b(duffel_(?:test|live)_[A-Za-z0-9_=-]{43})`],
  ['Dynatrace token', String.raw`\b(dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64})\b`],
  ['EasyPost key', String.raw`\b(EZ[AT]K[A-Za-z0-9]{54})\b`],
  ['Fly.io token', String.raw`\b(fo1_[A-Za-z0-9_-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3})`],
  ['Frame.io token', String.raw`\b(fio-u-[A-Za-z0-9_=-]{64})`],
  ['Flutterwave key', String.raw`\b(FLW(?:PUB|SEC)K(?:_TEST)?-[a-h0-9]{32}-X)`],
  ['Groq key', String.raw`\b(gsk_[A-Za-z0-9]{48,})\b`],
  ['Harness token', String.raw`\b((?:pat|sat)\.[A-Za-z0-9_-]{22}\.[a-f0-9]{24}\.[A-Za-z0-9]{20})\b`],
  ['Vault token', String.raw`\b(hv[sb]\.[A-Za-z0-9_-]{90,})`],
  [
    'HubSpot token',
    String.raw`\b(pat-(?:na|eu)[0-9]-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12})\b`,
  ],
  ['Infracost key', String.raw`\b(ico-[A-Za-z0-9]{32})\b`],
  ['JFrog token', String.raw`\b(AKCp[A-Za-z0-9]{69}|cmVmd[A-Za-z0-9]{59})\b`],
  ['LangSmith key', String.raw`\b(lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10})\b`],
  [
    'LaunchDarkly key',
    String.raw`\b((?:api|sdk|mob)-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12})\b`,
  ],
  ['Netlify token', String.raw`\b(nfp_[A-Za-z0-9]{36})\b`],
  ['Octopus key', String.raw`\b(API-[A-Z0-9]{26})\b`],
  ['OpenShift token', String.raw`\b(sha256~[A-Za-z0-9_-]{43})`],
  ['Perplexity key', String.raw`\b(pplx-[A-Za-z0-9]{48})\b`],
  ['PlanetScale token', String.raw`\b(pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,64})`],
  ['Prefect key', String.raw`\b(pnu_[A-Za-z0-9]{36})\b`],
  ['ReadMe key', String.raw`\b(rdme_[a-z0-9]{70})\b`],
  ['RubyGems key', String.raw`\b(rubygems_[a-f0-9]{48})\b`],
  ['Brevo key', String.raw`\b(xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16})\b`],
  ['Shippo token', String.raw`\b(shippo_(?:live|test)_[a-f0-9]{40})\b`],
  ['Sourcegraph token', String.raw`\b(sgp_(?:[a-f0-9]{16}_|local_)?[a-f0-9]{40})\b`],
  ['Typeform token', String.raw`\b(tfp_[A-Za-z0-9_.=-]{59,})`],
  [
    'Yandex key',
    String.raw`\b(AQVN[A-Za-z0-9_-]{35,38}|YC[A-Za-z0-9_-]{38}|t1\.[A-Z0-9a-z_-]+={0,2}\.[A-Z0-9a-z_-]{86}={0,2})`,
  ],
  ['Tailscale key', String.raw`\b(tskey-(?:auth|api|client|webhook|scim)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,})`],
  ['Vercel token', String.raw`\b(vc[pkiar]_[A-Za-z0-9]{24,})\b`],
  ['Docker Hub token', String.raw`\b(dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,})`],
  ['Supabase token', String.raw`\b(sbp_(?:v0_)?[a-f0-9]{40})\b`],
  ['Replicate token', String.raw`\b(r8_[A-Za-z0-9]{37})\b`],
  ['xAI key', String.raw`\b(xai-[A-Za-z0-9]{70,})\b`],
  ['NuGet key', String.raw`\b(oy2[a-z0-9]{43})\b`],
  ['crates.io token', String.raw`\b(cio[A-Za-z0-9]{32})\b`],
  ['Facebook token', String.raw`\b(EAA[MC][A-Za-z0-9]{100,})`],
  ['Twitter token', String.raw`\b(A{22}[A-Za-z0-9%]{30,})`],
  ['Resend key', String.raw`\b(re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24})\b`],
  ['Teams webhook', String.raw`(https://[a-z0-9-]+\.webhook\.office\.com/webhookb2/[A-Za-z0-9@/_-]{40,})`],
  ['Laravel key', String.raw`\b(base64:[A-Za-z0-9+/]{43}=)`],
  ['MaxMind key', String.raw`\b([A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk)\b`],
  ['Cloudflare key', String.raw`\b(v1\.0-[a-f0-9]{24}-[a-f0-9]{146})\b`],
  ['Cloudflare token', String.raw`\b(cfk_[A-Za-z0-9]{40}|cfut_[A-Za-z0-9]{40})\b`],
  ['Slack config token', String.raw`\b(xoxe(?:\.xox[bp])?-[0-9]-[A-Za-z0-9]{100,})`],
  ['Mapbox token', String.raw`\b(sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,})`],
  ['Terraform token', String.raw`\b([A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70})`],
  ['Figma token', String.raw`\b(figd_[A-Za-z0-9_-]{40})`],
  ['Scalingo token', String.raw`\b(tk-us-[A-Za-z0-9_-]{48})`],
  ['Defined Networking token', String.raw`\b(dnkey-[a-z0-9=_-]{26}-[a-z0-9=_-]{52})`],
  ['Azure account key', '(?i:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{40,}={0,2})'],
  ['JWT', String.raw`\b(eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})`],
];
const FORMAT_RE = new RE2(FORMATS.map(([, source]) => source).join('|'), 'gm');

export const RULES: Rule[] = [
  // a private key written on one line (a JSON service account's "private_key": "-----BEGIN…\n…")
  rule(
    'private key',
    String.raw`-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----((?:\\n|\\r|[A-Za-z0-9+/=\s]){16,}?)-----END`,
    [1],
  ),
  // a password inside a URL: scheme://user:password@host
  ruleI('password', String.raw`\b[a-z][a-z0-9+.-]*://[^\s:/@'"]*:([^\s@/'"]{3,})@`, [1], {
    check: 'random',
  }),
  // HTTP credentials: Authorization: Basic …, Bearer …
  rule('credentials', String.raw`\b(?:Basic|Bearer|Token|token)[ \t]+([A-Za-z0-9+/._~-]{12,}=*)`, [1], {
    check: 'random',
  }),
  // password flags on command lines: --password=x, --password x, -p'x' (mysql, twine), -u user:x (curl), sshpass -p x
  ruleI(
    'password',
    String.raw`(?:--(?:password|passwd|pass|token|secret|api-key|apikey|auth-token)[= ]|\bsshpass[ \t]+-p[ \t]*|\b(?:mysql|mysqldump|mysqladmin|mariadb|twine|redis-cli|sqlcmd|bcp|ldapsearch|ldapmodify|ldapadd|ldapdelete|ldappasswd|az|psql|mongo|mongosh|mongodump|mongorestore|influx|keytool|jarsigner|rabbitmqctl)\b[^\n]*?[ \t](?:-p|-P|-a|-w|-storepass|-keypass|-srcstorepass|-deststorepass)[ \t]?)(?:"([^"\n]{6,})"|'([^'\n]{6,})'|([^\s"']{6,}))`,
    [1, 2, 3],
    { check: 'random' },
  ),
  ruleI(
    'password',
    String.raw`\b(?:docker|podman|helm|oras|buildah|nerdctl)[ \t]+(?:registry[ \t]+)?login\b[^\n]*?[ \t](?:-p|--password)[= ][ \t]*(?:"([^"\n]{6,})"|'([^'\n]{6,})'|([^\s"']{6,}))`,
    [1, 2, 3],
    { check: 'random' },
  ),
  ruleI('password', String.raw`\bcurl\b[^\n]*?[ \t](?:-u|--user)[ \t]+["']?[^\s:"']+:([^\s"']{6,})`, [1], {
    check: 'random',
  }),
  // PGPASSWORD=… psql, MYSQL_PWD=…: covered by names; `.netrc`: machine host login user password secret
  ruleI('password', String.raw`\b(?:password|passwd)[ \t]+([^\s"']{4,})`, [1], {
    check: 'random',
    context: /\bmachine[ \t]+\S|^[ \t]*default\b/m,
  }),
  // `.pgpass`: host:port:database:user:password
  rule(
    'password',
    String.raw`^[A-Za-z0-9_.*-]+:(?:[0-9]+|\*):[A-Za-z0-9_.*-]+:[A-Za-z0-9_.*@-]+:([^\s]{6,})$`,
    [1],
    {
      check: 'random',
    },
  ),
  ruleI('password', String.raw`\bsmbclient\b[^\n]*?-U[ \t]+[^%\s]+%([^\s"']{4,})`, [1], { check: 'random' }),
  ruleI(
    'password',
    String.raw`\bhtpasswd[ \t]+(?:-[A-Za-z]+[ \t]+)*-[A-Za-z]*b[A-Za-z]*[ \t]+(?:-[A-Za-z]+[ \t]+)*[^\s-][^\s]*[ \t]+[^\s]+[ \t]+([^\s"']{4,})`,
    [1],
    { check: 'random' },
  ),
  ruleI(
    'password',
    String.raw`\becho[ \t]+(?:-n[ \t]+)?(?:"([^"\n]{6,})"|'([^'\n]{6,})'|([^\s"'|]{6,}))[ \t]*\|[^\n]*--password-stdin`,
    [1, 2, 3],
    { check: 'random' },
  ),
  ruleI('password', String.raw`\bpass:([^\s"']{6,})`, [1], { check: 'random' }),
  // SQL: CREATE USER … IDENTIFIED BY 'x'
  ruleI(
    'password',
    String.raw`\bIDENTIFIED[ \t]+(?:WITH[ \t]+\w+[ \t]+)?BY[ \t]+(?:PASSWORD[ \t]+)?'([^'\n]{4,})'`,
    [1],
    {
      check: 'random',
    },
  ),
  // PowerShell: ConvertTo-SecureString "…" -AsPlainText
  ruleI(
    'password',
    String.raw`ConvertTo-SecureString[ \t]+(?:-String[ \t]+)?(?:"([^"\n]{6,})"|'([^'\n]{6,})')`,
    [1, 2],
    {
      check: 'random',
    },
  ),
  // a name and its value as two fields: Kubernetes env (name: / value:), ECS and CloudFormation JSON, YAML lists
  ruleI(
    'secret',
    String.raw`(?:name|key|parameterkey|variable)["']?[ \t]*[:=][ \t]*["']?${NAME}["']?[ \t]*,?[ \t]*(?:\n[ \t-]*)?["']?(?:value|parametervalue|default)["']?${OP}${VALUE}`,
    [2, 3, 4, 5],
    { check: 'named' },
  ),
  // Terraform: variable "db_password" { … default = "…" }
  ruleI(
    'secret',
    String.raw`\bvariable[ \t]+"${NAME}"[ \t]*\{[^}]*?\bdefault[ \t]*=[ \t]*"([^"\n]{6,})"`,
    [2],
    {
      check: 'named',
    },
  ),
  // a value handed to a secret-named call or key: setPassword("…"), .apiKey("…"), props.put("db.password", "…")
  ruleI('secret', String.raw`${CALL_NAME}[ \t]*\([ \t]*(?:"([^"\n]{6,})"|'([^'\n]{6,})')[ \t]*\)`, [2, 3], {
    check: 'named',
  }),
  ruleI('secret', String.raw`\([ \t]*["']${NAME}["'][ \t]*,[ \t]*(?:"([^"\n]{6,})"|'([^'\n]{6,})')`, [2, 3], {
    check: 'named',
  }),
  // XML attributes: <property name="hibernate.connection.password">…</property>, name="…" value="…"
  ruleI(
    'secret',
    String.raw`name=["']${NAME}["'](?:[ \t]+value=(?:"([^"\n]{6,})"|'([^'\n]{6,})')|[^>\n]*>([^<\n]{6,})<)`,
    [2, 3, 4],
    { check: 'named' },
  ),
  // a user and a password given together: auth=("user", "…"), new UsernamePasswordCredentials("user", "…")
  ruleI(
    'password',
    String.raw`(?:\bauth[ \t]*=[ \t]*\(|Credentials?\w*\(|\bsetCredentials\()[ \t]*["'][^"'\n]+["'][ \t]*,[ \t]*(?:"([^"\n]{6,})"|'([^'\n]{6,})')`,
    [1, 2],
    { check: 'random' },
  ),
  // a directive and a bare value: ENV DB_PASSWORD s3cr3t, requirepass s3cr3t, aws configure set aws_secret_access_key …
  ruleI('secret', String.raw`^[ \t]*(?:[A-Za-z_-]+[ \t]+){0,3}${NAME}[ \t]+([^\s"'=:(]{6,})[ \t]*$`, [2], {
    check: 'named',
    strongOnly: true,
  }),
  // the default of an environment lookup: os.getenv("DB_PASSWORD", "…"), ENV.fetch("SECRET", "…")
  ruleI(
    'secret',
    String.raw`(?:getenv|environ\.get|ENV\.fetch|env|getOrDefault|define|setdefault|Getenv)\([ \t]*["']${NAME}["'][ \t]*,[ \t]*(?:"([^"\n]{6,})"|'([^'\n]{6,})')`,
    [2, 3],
    { check: 'named' },
  ),
  // a shell default: ${DB_PASSWORD:-…}
  ruleI('secret', String.raw`\$\{${NAME}:?-([^}\s]{6,})\}`, [2], { check: 'named' }),
  ruleI(
    'secret',
    String.raw`process\.env\.${NAME}[ \t]*(?:\|\||\?\?)[ \t]*(?:"([^"\n]{6,})"|'([^'\n]{6,})')`,
    [2, 3],
    { check: 'named' },
  ),
  // XML: <password>…</password>, <add key="ApiKey" value="…"/>
  ruleI('secret', String.raw`<${NAME}>([^<\n]{6,})</`, [2], { check: 'named' }),
  ruleI('secret', String.raw`key=["']${NAME}["'][ \t]+value=(?:"([^"\n]{6,})"|'([^'\n]{6,})')`, [2, 3], {
    check: 'named',
  }),
  // a header or directive followed by its quoted value: proxy_set_header X-API-Key "…", set $api_key "…"
  ruleI('secret', String.raw`${START}["']?${NAME}["']?[ \t]+(?:"([^"\n]{6,})"|'([^'\n]{6,})')`, [2, 3], {
    check: 'named',
  }),
  // a value assigned to a secret-sounding name anywhere on a line, in any assignment form, typed or not
  ruleI('secret', `${START}["'\`]?${NAME}["'\`]?${ANNOTATION}${OP}${VALUE}`, [2, 3, 4, 5], {
    check: 'named',
  }),
];

const PRIVATE_KEY_BLOCK = new RE2(
  String.raw`(-----BEGIN [A-Za-z0-9 ]{0,30}(?:PRIVATE KEY(?: BLOCK)?|Static key V1)-----|Private-Lines:[ \t]*[0-9]+)([\s\S]*?)(-----END [A-Za-z0-9 ]{0,30}(?:PRIVATE KEY(?: BLOCK)?|Static key V1)-----|Private-MAC:)`,
  'g',
);

const PLACEHOLDER =
  /^(?:\$\{?[\w.:-]+\}?|<[^>]*>|\{\{.*\}\}|\{[\w.]+\}|%\(?\w+\)?s?|%\w+%|x{4,}|X{4,}|\*{4,}|\.{3,}|#{4,}|changeme|change[-_]?me|password\d*|secret|token|example\w*|\w*example|dummy[\w-]*|fake[\w-]*|placeholder|your[-_\w]*|replace[-_\w]*|insert[-_\w]*|null|none|nil|true|false|undefined|test[\w-]*|todo|redacted.*|process\.env\..*|os\.environ.*|env\(.*|getenv.*|getpass.*)$/i;

/**
 * The last part of a name that says the value describes a secret rather than is one: `password_hash_algorithm`,
 * `token_type`, `secret_name`, `api_key_header`, `password_min_length`, `PASSWORD_REGEX`.
 */
const DESCRIPTOR =
  /[_.-](?:algorithm|algo|alg|hasher|hashers|hashing|encoder|cipher|digest|policy|regex|regexp|re|pattern|length|len|min|max|minimum|maximum|format|type|kind|field|column|name|label|hint|prompt|placeholder|message|msg|error|errors|rule|rules|validator|validation|strength|complexity|expiry|expires|expiration|ttl|timeout|lifetime|age|url|uri|endpoint|path|file|dir|header|param|parameter|env|var|variable|id|ids|count|size|version|mode|scheme|method|provider|prefix|suffix|alias|aliases|chars|charset|required|enabled|reset|changed|updated|confirm|confirmation|input|text|title|description|help|doc|docs|link|ref|arn|location|store|storage|manager|class|handler|service)$/i;

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
function looksLikeKey(value: string, code: boolean): boolean {
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

const STRONG_NAME =
  /password|passwd|passphrase|secret|token|credential|apikey|requirepass|masterauth|(?:^|_)(?:pwd|pass|(?:api|access|private|account|signing|encryption|master|session|secret|license|client|app|admin|service|storage|write|read|ingest|insert|deploy)_(?:key|secret|token))(?:_|$)/;
const WEAK_NAME = /(?:^|_)(?:auth|key|keys|pat|sig|signature|dsn|webhook_url|cookie)(?:_|$)|^auth/;
const NOT_SECRET_PART =
  /(?:^|_)(?:public|pub|publishable|bypass|passthrough|passenger|compass|passive|tokenizer|tokenize|tokenized|author|authors|authority|keyboard|keyword|keywords|keystore_type|monkey|turkey|hotkey|keybinding)(?:_|$)/;

/**
 * How surely a name holds a secret: 2 for one that can hold nothing else (`DB_PASSWORD`, `apiToken`,
 * `new_relic_license_key`), 1 for one that may (`cosmosDbKey`, `GITHUB_PAT`, `auth`), 0 for one that describes a
 * secret rather than holds it (`password_hash_algorithm`, `token_type`, `public_key`).
 */
function nameStrength(name: string): 0 | 1 | 2 {
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
