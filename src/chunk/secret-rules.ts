// quarry's own secret rules (see chunk/redact.ts): RE2 patterns for secret-sounding names, providers' formats, URL
// credentials, password flags and the like, with the groups that hold the value and how a match is judged.
import RE2 from 're2';

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
export const FORMATS: ReadonlyArray<readonly [string, string]> = [
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
export const FORMAT_RE = new RE2(FORMATS.map(([, source]) => source).join('|'), 'gm');

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

export const PRIVATE_KEY_BLOCK = new RE2(
  String.raw`(-----BEGIN [A-Za-z0-9 ]{0,30}(?:PRIVATE KEY(?: BLOCK)?|Static key V1)-----|Private-Lines:[ \t]*[0-9]+)([\s\S]*?)(-----END [A-Za-z0-9 ]{0,30}(?:PRIVATE KEY(?: BLOCK)?|Static key V1)-----|Private-MAC:)`,
  'g',
);

export const PLACEHOLDER =
  /^(?:\$\{?[\w.:-]+\}?|<[^>]*>|\{\{.*\}\}|\{[\w.]+\}|%\(?\w+\)?s?|%\w+%|x{4,}|X{4,}|\*{4,}|\.{3,}|#{4,}|changeme|change[-_]?me|password\d*|secret|token|example\w*|\w*example|dummy[\w-]*|fake[\w-]*|placeholder|your[-_\w]*|replace[-_\w]*|insert[-_\w]*|null|none|nil|true|false|undefined|test[\w-]*|todo|redacted.*|process\.env\..*|os\.environ.*|env\(.*|getenv.*|getpass.*)$/i;

/**
 * The last part of a name that says the value describes a secret rather than is one: `password_hash_algorithm`,
 * `token_type`, `secret_name`, `api_key_header`, `password_min_length`, `PASSWORD_REGEX`.
 */
export const DESCRIPTOR =
  /[_.-](?:algorithm|algo|alg|hasher|hashers|hashing|encoder|cipher|digest|policy|regex|regexp|re|pattern|length|len|min|max|minimum|maximum|format|type|kind|field|column|name|label|hint|prompt|placeholder|message|msg|error|errors|rule|rules|validator|validation|strength|complexity|expiry|expires|expiration|ttl|timeout|lifetime|age|url|uri|endpoint|path|file|dir|header|param|parameter|env|var|variable|id|ids|count|size|version|mode|scheme|method|provider|prefix|suffix|alias|aliases|chars|charset|required|enabled|reset|changed|updated|confirm|confirmation|input|text|title|description|help|doc|docs|link|ref|arn|location|store|storage|manager|class|handler|service)$/i;
