/**
 * An out-of-sample corpus for the secret redactor (bench/secrets-eval.ts scores it).
 *
 * Written without looking at quarry's rules: the token formats come from public rule sets (gitleaks' rules with their
 * regexes and examples, secretlint's rule packages), the rest from how files of each kind are written. Every value is
 * drawn from a fixed-seed generator in the format of its provider; nothing is copied from a real key or an example.
 *
 * A case is one whole file. A `secret` case holds one value that must not survive redaction; a `lookalike` case holds
 * something that must come back unchanged (the whole file must). A shape is `family @ placement`: the format of the
 * value (a provider's token, a generic value kind, a look-alike category) and the way it sits in the file.
 */
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';

export interface Case {
  shape: string;
  kind: 'secret' | 'lookalike';
  /** A file name, like `deploy/.env` or `src/config.rs`. */
  file: string;
  /** The whole file. */
  text: string;
  /** The exact value that must not survive redaction (secret cases only). */
  secret?: string;
  /** The 1-based line where the value (or the look-alike) sits. */
  line: number;
}

/**
 * Fixed parts of token formats (prefixes, markers, encoded constant headers): public, so an 8-character piece of a
 * secret that lies wholly inside one of them is not counted as a leak.
 */
export const PUBLIC_PARTS: readonly string[] = [
  'pypi-AgEIcHlwaS5vcmc',
  'sk-ant-api03-',
  'sk-ant-admin01-',
  'sk-ant-oat01-',
  'github_pat_',
  'AGE-SECRET-KEY-1',
  'T3BlbkFJ',
  'sk-svcacct-',
  'sk-admin-',
  'xoxe.xoxp-1-',
  'IQoJb3JpZ2luX2Vj',
  'GR1348941',
  'AAAAAAAAAAAAAAAAAAAAA',
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9',
  'eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9',
  'ATATT3xFfGF0',
  'FLWSECK_TEST-',
  'duffel_test_',
  'CLOJARS_',
  'rubygems_',
  'shippo_live_',
  'xkeysib-',
  'pscale_pw_',
  'tskey-auth-',
  'dckr_pat_',
  'lin_oauth_',
  'sk_live_51',
  'rk_live_51',
  'sk_test_51',
  'cmVmdGtuOjAxOj',
  'django-insecure-',
  'sha256~',
  'glagent-',
  'pat-na1-',
  'AAAAAAAAAA',
  'MIIEpAIBAAKCAQEA',
  'MIIEvgIBADANBgkqhkiG9w0BAQEFAASC',
  'MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI',
  'b3BlbnNzaC1rZXktdjEAAAAA',
  'MHcCAQEEI',
  'LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQ',
  'eyJrIjoi',
  'ops_eyJ',
  'sntrys_eyJ',
  'glc_eyJ',
];

// ---------------------------------------------------------------------------------------------------------------------
// Deterministic randomness

const UP = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LO = 'abcdefghijklmnopqrstuvwxyz';
const DI = '0123456789';
const AN = UP + LO + DI;
const LETTERS = UP + LO;
const UD = UP + DI;
const LD = LO + DI;
const HEX = '0123456789abcdef';
const B64 = AN + '+/';
const B64U = AN + '-_';
const BECH32 = 'QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L';

class Gen {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  /** mulberry32 */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(a: readonly T[]): T {
    return a[Math.floor(this.next() * a.length)]!;
  }
  s(set: string, n: number): string {
    let out = '';
    for (let i = 0; i < n; i++) out += set[Math.floor(this.next() * set.length)];
    return out;
  }
  hex(n: number): string {
    return this.s(HEX, n);
  }
  digits(n: number): string {
    return this.s('123456789', 1) + this.s(DI, n - 1);
  }
  bytes(n: number): Buffer {
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) b[i] = Math.floor(this.next() * 256);
    return b;
  }
  uuid(): string {
    const h = this.hex(32);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${this.pick(['8', '9', 'a', 'b'])}${h.slice(17, 20)}-${h.slice(20)}`;
  }
  /** Mixed case letters and digits, with at least one of each class. */
  alnum(n: number): string {
    for (;;) {
      const v = this.s(AN, n);
      if (/[A-Z]/.test(v) && /[a-z]/.test(v) && /\d/.test(v)) return v;
    }
  }
  /** Letters only, both cases. */
  letters(n: number): string {
    for (;;) {
      const v = this.s(LETTERS, n);
      if (/[A-Z]/.test(v) && /[a-z]/.test(v)) return v;
    }
  }
}

const b64 = (s: string | Buffer): string => Buffer.from(s).toString('base64');
const b64url = (s: string | Buffer): string =>
  Buffer.from(s).toString('base64').replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

// ---------------------------------------------------------------------------------------------------------------------
// Names

function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[_\-.\s]+/)
    .filter(Boolean);
}
const snake = (n: string): string => nameWords(n).join('_');
const scream = (n: string): string => snake(n).toUpperCase();
const kebab = (n: string): string => nameWords(n).join('-');
const dotted = (n: string): string => nameWords(n).join('.');
const cap = (w: string): string => w.charAt(0).toUpperCase() + w.slice(1);
const pascal = (n: string): string => nameWords(n).map(cap).join('');
const camel = (n: string): string => {
  const p = pascal(n);
  return p.charAt(0).toLowerCase() + p.slice(1);
};

const SECRET_NAMES = [
  'DB_PASSWORD',
  'POSTGRES_PASSWORD',
  'API_KEY',
  'API_SECRET',
  'SECRET_KEY',
  'AUTH_TOKEN',
  'ACCESS_TOKEN',
  'CLIENT_SECRET',
  'JWT_SECRET',
  'SESSION_SECRET',
  'WEBHOOK_SECRET',
  'ENCRYPTION_KEY',
  'SMTP_PASSWORD',
  'REDIS_PASSWORD',
  'ADMIN_PASSWORD',
  'APP_SECRET',
  'SIGNING_KEY',
  'MASTER_KEY',
  'PRIVATE_TOKEN',
  'SERVICE_TOKEN',
  'MYSQL_ROOT_PASSWORD',
  'DB_PASS',
  'PASSWD',
  'COOKIE_SECRET',
  'HMAC_SECRET',
  'CONSUMER_SECRET',
  'BIND_PASSWORD',
  'KEYSTORE_PASSWORD',
  'MAIL_PASSWORD',
  'REFRESH_TOKEN',
];
const SERVICES = [
  'billing',
  'ledger',
  'search',
  'notify',
  'ingest',
  'payments',
  'reports',
  'gateway',
  'auth',
  'catalog',
];
const HOSTS = ['db.internal', 'pg-main.prod.svc', 'mysql-01.corp.example', '10.0.3.17', 'db.example.com'];
const USERS = ['app', 'deploy', 'svc_billing', 'admin', 'ci', 'backup', 'reporter', 'root'];

// ---------------------------------------------------------------------------------------------------------------------
// Rendering

/** Marks where the value goes in a template. */
const V = '\u0001';

interface Doc {
  file: string;
  lines: string[];
}

function render(doc: Doc, value: string): { text: string; line: number } {
  const idx = doc.lines.findIndex((l) => l.includes(V));
  if (idx < 0) throw new Error(`template for ${doc.file} has no value marker`);
  return { text: doc.lines.map((l) => l.split(V).join(value)).join('\n') + '\n', line: idx + 1 };
}

/** A JSON string body, escaping quotes, backslashes and newlines (the value marker passes through). */
const jstr = (s: string): string => s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

function notebook(src: string[]): string[] {
  const n = src.length;
  return [
    '{',
    ' "cells": [',
    '  {',
    '   "cell_type": "markdown",',
    '   "metadata": {},',
    '   "source": ["## Setup"]',
    '  },',
    '  {',
    '   "cell_type": "code",',
    '   "execution_count": 2,',
    '   "metadata": {},',
    '   "outputs": [],',
    '   "source": [',
    ...src.map((s, i) => `    "${jstr(i < n - 1 ? s + '\n' : s)}"${i < n - 1 ? ',' : ''}`),
    '   ]',
    '  }',
    ' ],',
    ' "metadata": {',
    '  "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}',
    ' },',
    ' "nbformat": 4,',
    ' "nbformat_minor": 5',
    '}',
  ];
}

// ---------------------------------------------------------------------------------------------------------------------
// Provider token formats

interface Fmt {
  id: string;
  /** The variable name it usually sits under. */
  key: string;
  /** The value as written, or [value as written, the secret part of it]. */
  gen: (g: Gen) => string | [string, string];
  /** False where the value has no format of its own (random hex, a UUID): it gets no placement without a name. */
  bare?: boolean;
  /** Placements to use instead of the rotation. */
  places?: string[];
}

const jwt = (g: Gen, alg: 'HS256' | 'RS256'): string => {
  const header = b64url(JSON.stringify({ alg, typ: 'JWT' }));
  const now = 1_700_000_000 + g.int(0, 30_000_000);
  const payload = b64url(
    JSON.stringify(
      g.pick([
        { sub: g.uuid(), iat: now, exp: now + 3600, scope: 'read:all write:all' },
        { iss: 'supabase', ref: g.s(LO, 20), role: 'service_role', iat: now, exp: now + 315_360_000 },
        {
          iss: 'kubernetes/serviceaccount',
          'kubernetes.io/serviceaccount/namespace': 'ci',
          sub: 'system:serviceaccount:ci:deployer',
        },
        { user_id: g.int(1000, 99999), email: `${g.s(LO, 6)}@example.com`, iat: now },
      ]),
    ),
  );
  return `${header}.${payload}.${g.s(B64U, alg === 'HS256' ? 43 : 342)}`;
};

const FORMATS: Fmt[] = [
  { id: 'aws-access-key-id', key: 'AWS_ACCESS_KEY_ID', gen: (g) => 'AKIA' + g.s(UP + '234567', 16) },
  { id: 'aws-sts-access-key-id', key: 'AWS_ACCESS_KEY_ID', gen: (g) => 'ASIA' + g.s(UP + '234567', 16) },
  { id: 'aws-secret-access-key', key: 'AWS_SECRET_ACCESS_KEY', gen: (g) => g.s(B64, 40), bare: false },
  { id: 'aws-session-token', key: 'AWS_SESSION_TOKEN', gen: (g) => 'IQoJb3JpZ2luX2Vj' + g.s(B64, 360) + '=' },
  { id: 'github-pat-classic', key: 'GITHUB_TOKEN', gen: (g) => 'ghp_' + g.s(AN, 36) },
  { id: 'github-oauth', key: 'GITHUB_OAUTH_TOKEN', gen: (g) => 'gho_' + g.s(AN, 36) },
  { id: 'github-user-to-server', key: 'GH_APP_USER_TOKEN', gen: (g) => 'ghu_' + g.s(AN, 36) },
  { id: 'github-installation', key: 'GH_INSTALLATION_TOKEN', gen: (g) => 'ghs_' + g.s(AN, 36) },
  { id: 'github-refresh', key: 'GITHUB_REFRESH_TOKEN', gen: (g) => 'ghr_' + g.s(AN, 36) },
  {
    id: 'github-fine-grained',
    key: 'GITHUB_PAT',
    gen: (g) => 'github_pat_' + g.s(AN, 22) + '_' + g.s(AN, 59),
  },
  { id: 'gitlab-pat', key: 'GITLAB_TOKEN', gen: (g) => 'glpat-' + g.s(AN + '-_', 20) },
  {
    id: 'gitlab-pat-routable',
    key: 'GITLAB_TOKEN',
    gen: (g) => 'glpat-' + g.s(B64U, g.int(27, 40)) + '.01' + g.s(LD, 7),
  },
  { id: 'gitlab-deploy-token', key: 'GITLAB_DEPLOY_TOKEN', gen: (g) => 'gldt-' + g.s(AN + '_-', 20) },
  { id: 'gitlab-runner-token', key: 'CI_RUNNER_TOKEN', gen: (g) => 'glrt-' + g.s(AN + '_-', 20) },
  { id: 'gitlab-trigger-token', key: 'GITLAB_TRIGGER_TOKEN', gen: (g) => 'glptt-' + g.hex(40) },
  {
    id: 'gitlab-runner-registration',
    key: 'REGISTRATION_TOKEN',
    gen: (g) => 'GR1348941' + g.s(AN + '_-', 20),
  },
  { id: 'gitlab-agent-token', key: 'GITLAB_AGENT_TOKEN', gen: (g) => 'glagent-' + g.s(AN + '_-', 50) },
  { id: 'gitlab-oauth-secret', key: 'GITLAB_OAUTH_SECRET', gen: (g) => 'gloas-' + g.s(AN + '_-', 64) },
  {
    id: 'slack-bot-token',
    key: 'SLACK_BOT_TOKEN',
    gen: (g) => `xoxb-${g.digits(13)}-${g.digits(13)}-${g.s(AN, 24)}`,
  },
  {
    id: 'slack-user-token',
    key: 'SLACK_USER_TOKEN',
    gen: (g) => `xoxp-${g.digits(12)}-${g.digits(13)}-${g.digits(13)}-${g.hex(32)}`,
  },
  {
    id: 'slack-app-token',
    key: 'SLACK_APP_TOKEN',
    gen: (g) => `xapp-1-A${g.s(UD, 10)}-${g.digits(13)}-${g.hex(64)}`,
  },
  { id: 'slack-config-token', key: 'SLACK_CONFIG_TOKEN', gen: (g) => 'xoxe.xoxp-1-' + g.s(AN, 163) },
  {
    id: 'slack-webhook',
    key: 'SLACK_WEBHOOK_URL',
    gen: (g) => {
      const s = g.s(AN, 24);
      return [`https://hooks.slack.com/services/T${g.s(UD, 8)}/B${g.s(UD, 10)}/${s}`, s];
    },
  },
  { id: 'stripe-live-secret', key: 'STRIPE_SECRET_KEY', gen: (g) => 'sk_live_51' + g.s(AN, 97) },
  { id: 'stripe-test-secret', key: 'STRIPE_SECRET_KEY', gen: (g) => 'sk_test_51' + g.s(AN, 97) },
  { id: 'stripe-restricted', key: 'STRIPE_RESTRICTED_KEY', gen: (g) => 'rk_live_51' + g.s(AN, 97) },
  { id: 'stripe-webhook-secret', key: 'STRIPE_WEBHOOK_SECRET', gen: (g) => 'whsec_' + g.s(AN, 32) },
  { id: 'twilio-auth-token', key: 'TWILIO_AUTH_TOKEN', gen: (g) => g.hex(32), bare: false },
  { id: 'sendgrid', key: 'SENDGRID_API_KEY', gen: (g) => `SG.${g.s(B64U, 22)}.${g.s(B64U, 43)}` },
  { id: 'mailgun-api-key', key: 'MAILGUN_API_KEY', gen: (g) => 'key-' + g.hex(32) },
  {
    id: 'mailgun-signing-key',
    key: 'MAILGUN_WEBHOOK_SIGNING_KEY',
    gen: (g) => `${g.hex(32)}-${g.hex(8)}-${g.hex(8)}`,
    bare: false,
  },
  { id: 'mailchimp', key: 'MAILCHIMP_API_KEY', gen: (g) => `${g.hex(32)}-us${g.int(1, 21)}` },
  { id: 'npm', key: 'NPM_TOKEN', gen: (g) => 'npm_' + g.s(AN, 36) },
  { id: 'pypi', key: 'PYPI_TOKEN', gen: (g) => 'pypi-AgEIcHlwaS5vcmc' + g.s(B64U, g.int(120, 180)) },
  { id: 'huggingface', key: 'HF_TOKEN', gen: (g) => 'hf_' + g.letters(34) },
  { id: 'huggingface-org', key: 'HUGGINGFACEHUB_API_TOKEN', gen: (g) => 'api_org_' + g.letters(34) },
  {
    id: 'telegram-bot',
    key: 'TELEGRAM_BOT_TOKEN',
    gen: (g) => `${g.digits(g.int(9, 10))}:AA${g.s(B64U, 33)}`,
  },
  {
    id: 'discord-bot',
    key: 'DISCORD_BOT_TOKEN',
    gen: (g) => `${b64(g.digits(18)).replace(/=+$/, '')}.${g.s(B64U, 6)}.${g.s(B64U, 38)}`,
  },
  {
    id: 'discord-webhook',
    key: 'DISCORD_WEBHOOK_URL',
    gen: (g) => {
      const s = g.s(B64U, 68);
      return [`https://discord.com/api/webhooks/${g.digits(19)}/${s}`, s];
    },
  },
  { id: 'shopify-access', key: 'SHOPIFY_ACCESS_TOKEN', gen: (g) => 'shpat_' + g.hex(32) },
  { id: 'shopify-shared-secret', key: 'SHOPIFY_API_SECRET', gen: (g) => 'shpss_' + g.hex(32) },
  { id: 'shopify-custom-app', key: 'SHOPIFY_ADMIN_TOKEN', gen: (g) => 'shpca_' + g.hex(32) },
  { id: 'shopify-private-app', key: 'SHOPIFY_PASSWORD', gen: (g) => 'shppa_' + g.hex(32) },
  { id: 'square-access', key: 'SQUARE_ACCESS_TOKEN', gen: (g) => 'EAAA' + g.s(B64U, 60) },
  { id: 'square-oauth-secret', key: 'SQUARE_APPLICATION_SECRET', gen: (g) => 'sq0csp-' + g.s(B64U, 43) },
  { id: 'square-legacy-access', key: 'SQUARE_TOKEN', gen: (g) => 'sq0atp-' + g.s(B64U, 22) },
  { id: 'digitalocean-pat', key: 'DIGITALOCEAN_TOKEN', gen: (g) => 'dop_v1_' + g.hex(64) },
  { id: 'digitalocean-oauth', key: 'DO_OAUTH_TOKEN', gen: (g) => 'doo_v1_' + g.hex(64) },
  { id: 'digitalocean-refresh', key: 'DO_REFRESH_TOKEN', gen: (g) => 'dor_v1_' + g.hex(64) },
  { id: 'heroku-v2', key: 'HEROKU_API_KEY', gen: (g) => 'HRKU-AA' + g.s(B64U, 58) },
  { id: 'heroku-uuid', key: 'HEROKU_API_KEY', gen: (g) => g.uuid(), bare: false },
  { id: 'databricks', key: 'DATABRICKS_TOKEN', gen: (g) => 'dapi' + g.s('abcdefgh0123456789', 32) },
  { id: 'doppler-personal', key: 'DOPPLER_TOKEN', gen: (g) => 'dp.pt.' + g.s(AN, 43) },
  { id: 'doppler-service', key: 'DOPPLER_TOKEN', gen: (g) => 'dp.st.prd.' + g.s(AN, 40) },
  { id: 'doppler-service-account', key: 'DOPPLER_TOKEN', gen: (g) => 'dp.sa.' + g.s(AN, 43) },
  { id: 'dropbox-short-lived', key: 'DROPBOX_ACCESS_TOKEN', gen: (g) => 'sl.' + g.s(B64U, 135) },
  {
    id: 'dropbox-long-lived',
    key: 'DROPBOX_TOKEN',
    gen: (g) => g.s(LD, 11) + 'AAAAAAAAAA' + g.s(B64U, 43),
  },
  { id: 'linear-api', key: 'LINEAR_API_KEY', gen: (g) => 'lin_api_' + g.s(AN, 40) },
  { id: 'linear-oauth', key: 'LINEAR_OAUTH_TOKEN', gen: (g) => 'lin_oauth_' + g.hex(64) },
  { id: 'notion', key: 'NOTION_TOKEN', gen: (g) => 'ntn_' + g.digits(11) + g.s(AN, 35) },
  { id: 'notion-legacy', key: 'NOTION_API_KEY', gen: (g) => 'secret_' + g.s(AN, 43) },
  { id: 'postman', key: 'POSTMAN_API_KEY', gen: (g) => `PMAK-${g.hex(24)}-${g.hex(34)}` },
  { id: 'pulumi', key: 'PULUMI_ACCESS_TOKEN', gen: (g) => 'pul-' + g.hex(40) },
  {
    id: 'sentry-org-token',
    key: 'SENTRY_AUTH_TOKEN',
    gen: (g) =>
      'sntrys_' +
      b64url(
        JSON.stringify({
          iat: 1_700_000_000 + g.int(0, 9_999_999),
          url: 'https://sentry.io',
          region_url: 'https://us.sentry.io',
          org: g.pick(SERVICES),
        }),
      ) +
      '_' +
      g.s(B64U, 43),
  },
  { id: 'sentry-user-token', key: 'SENTRY_AUTH_TOKEN', gen: (g) => 'sntryu_' + g.hex(64) },
  {
    id: 'grafana-cloud',
    key: 'GRAFANA_CLOUD_TOKEN',
    gen: (g) =>
      'glc_' +
      b64(
        JSON.stringify({
          o: String(g.int(100000, 999999)),
          n: `stack-${g.digits(6)}-hm-read`,
          k: g.s(AN, 24),
          m: { r: 'us' },
        }),
      ),
  },
  { id: 'grafana-service-account', key: 'GRAFANA_SA_TOKEN', gen: (g) => `glsa_${g.s(AN, 32)}_${g.hex(8)}` },
  {
    id: 'grafana-api-key',
    key: 'GRAFANA_API_KEY',
    gen: (g) => b64(JSON.stringify({ k: g.s(AN, 32), n: 'deploy', id: g.int(1, 40) })),
  },
  { id: 'newrelic-user', key: 'NEW_RELIC_API_KEY', gen: (g) => 'NRAK-' + g.s(UD, 27) },
  { id: 'newrelic-license', key: 'NEW_RELIC_LICENSE_KEY', gen: (g) => g.hex(36) + 'NRAL' },
  { id: 'newrelic-insert', key: 'NEW_RELIC_INSERT_KEY', gen: (g) => 'NRII-' + g.s(B64U, 32) },
  { id: 'newrelic-browser', key: 'NEW_RELIC_BROWSER_KEY', gen: (g) => 'NRJS-' + g.hex(19) },
  { id: 'okta', key: 'OKTA_API_TOKEN', gen: (g) => '00' + g.s(B64U, 40), bare: false },
  {
    id: 'atlassian-api-token',
    key: 'JIRA_API_TOKEN',
    gen: (g) => 'ATATT3xFfGF0' + g.s(B64U, 171) + '=' + g.s(HEX.toUpperCase(), 8),
  },
  { id: 'bitbucket-app-password', key: 'BITBUCKET_APP_PASSWORD', gen: (g) => 'ATBB' + g.s(AN, 32) },
  {
    id: 'azure-ad-client-secret',
    key: 'AZURE_CLIENT_SECRET',
    gen: (g) => g.s(AN + '_~.', 3) + g.s(DI, 1) + 'Q~' + g.s(AN + '_~.-', 34),
  },
  {
    id: 'azure-storage-key',
    key: 'AZURE_STORAGE_CONNECTION_STRING',
    gen: (g) => {
      const k = g.s(B64, 86) + '==';
      return [
        `DefaultEndpointsProtocol=https;AccountName=${g.s(LD, 12)};AccountKey=${k};EndpointSuffix=core.windows.net`,
        k,
      ];
    },
  },
  {
    id: 'azure-sas-url',
    key: 'AZURE_BLOB_SAS_URL',
    gen: (g) => {
      const sig = encodeURIComponent(b64(g.bytes(32)));
      return [
        `https://${g.s(LD, 10)}.blob.core.windows.net/exports?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2026-01-01T00:00:00Z&st=2024-01-01T00:00:00Z&spr=https&sig=${sig}`,
        sig,
      ];
    },
    places: ['env-quoted', 'json', 'log-line'],
  },
  {
    id: 'azure-devops-pat',
    key: 'AZURE_DEVOPS_PAT',
    gen: (g) => g.s('abcdefghijklmnopqrstuvwxyz234567', 52),
    bare: false,
  },
  { id: 'azure-openai-key', key: 'AZURE_OPENAI_API_KEY', gen: (g) => g.hex(32), bare: false },
  { id: 'azure-cosmos-key', key: 'COSMOS_DB_KEY', gen: (g) => g.s(B64, 86) + '==', bare: false },
  { id: 'gcp-api-key', key: 'GOOGLE_API_KEY', gen: (g) => 'AIza' + g.s(B64U, 35) },
  { id: 'google-oauth-client-secret', key: 'GOOGLE_CLIENT_SECRET', gen: (g) => 'GOCSPX-' + g.s(B64U, 28) },
  {
    id: 'google-refresh-token',
    key: 'GOOGLE_REFRESH_TOKEN',
    gen: (g) => '1//0' + g.s(AN, 1) + g.s(B64U, 98),
  },
  { id: 'google-access-token', key: 'GOOGLE_ACCESS_TOKEN', gen: (g) => 'ya29.a0' + g.s(B64U, 180) },
  {
    id: 'openai-project',
    key: 'OPENAI_API_KEY',
    gen: (g) => `sk-proj-${g.s(B64U, 74)}T3BlbkFJ${g.s(B64U, 74)}`,
  },
  { id: 'openai-legacy', key: 'OPENAI_API_KEY', gen: (g) => `sk-${g.s(AN, 20)}T3BlbkFJ${g.s(AN, 20)}` },
  {
    id: 'openai-service-account',
    key: 'OPENAI_API_KEY',
    gen: (g) => `sk-svcacct-${g.s(B64U, 58)}T3BlbkFJ${g.s(B64U, 58)}`,
  },
  {
    id: 'openai-admin',
    key: 'OPENAI_ADMIN_KEY',
    gen: (g) => `sk-admin-${g.s(B64U, 58)}T3BlbkFJ${g.s(B64U, 58)}`,
  },
  { id: 'anthropic-api', key: 'ANTHROPIC_API_KEY', gen: (g) => 'sk-ant-api03-' + g.s(B64U, 93) + 'AA' },
  { id: 'anthropic-admin', key: 'ANTHROPIC_ADMIN_KEY', gen: (g) => 'sk-ant-admin01-' + g.s(B64U, 93) + 'AA' },
  {
    id: 'anthropic-oauth',
    key: 'CLAUDE_CODE_OAUTH_TOKEN',
    gen: (g) => 'sk-ant-oat01-' + g.s(B64U, 95) + 'AA',
  },
  { id: 'age-secret-key', key: 'SOPS_AGE_KEY', gen: (g) => 'AGE-SECRET-KEY-1' + g.s(BECH32, 58) },
  { id: 'jwt-hs256', key: 'SUPABASE_SERVICE_ROLE_KEY', gen: (g) => jwt(g, 'HS256') },
  { id: 'jwt-rs256', key: 'KUBE_TOKEN', gen: (g) => jwt(g, 'RS256') },
  {
    id: '1password-service-account',
    key: 'OP_SERVICE_ACCOUNT_TOKEN',
    gen: (g) =>
      'ops_' +
      b64(
        JSON.stringify({
          signInAddress: 'my.1password.com',
          userAuth: { method: 'SRPg-4096', alg: 'PBES2g-HS256', iterations: 650000, salt: g.s(B64U, 22) },
          email: `${g.s(LD, 13)}@1passwordserviceaccounts.com`,
          srpX: g.hex(64),
          muk: {
            alg: 'A256GCM',
            ext: true,
            k: g.s(B64U, 43),
            key_ops: ['encrypt', 'decrypt'],
            kty: 'oct',
            kid: 'mp',
          },
          secretKey: `A3-${g.s(UD, 6)}-${g.s(UD, 6)}-${g.s(UD, 5)}-${g.s(UD, 5)}-${g.s(UD, 5)}-${g.s(UD, 5)}`,
          deviceUuid: g.s(LD, 26),
        }),
      ).replace(/=+$/, ''),
  },
  {
    id: '1password-secret-key',
    key: 'OP_SECRET_KEY',
    gen: (g) => `A3-${g.s(UD, 6)}-${g.s(UD, 11)}-${g.s(UD, 5)}-${g.s(UD, 5)}-${g.s(UD, 5)}`,
  },
  { id: 'adafruit-io', key: 'ADAFRUIT_IO_KEY', gen: (g) => 'aio_' + g.s(AN, 28) },
  { id: 'airtable-pat', key: 'AIRTABLE_TOKEN', gen: (g) => `pat${g.s(AN, 14)}.${g.hex(64)}` },
  { id: 'alibaba-access-key-id', key: 'ALIBABA_CLOUD_ACCESS_KEY_ID', gen: (g) => 'LTAI' + g.s(AN, 20) },
  {
    id: 'alibaba-access-key-secret',
    key: 'ALIBABA_CLOUD_ACCESS_KEY_SECRET',
    gen: (g) => g.alnum(30),
    bare: false,
  },
  { id: 'algolia-admin', key: 'ALGOLIA_ADMIN_KEY', gen: (g) => g.hex(32), bare: false },
  { id: 'clojars', key: 'CLOJARS_DEPLOY_TOKEN', gen: (g) => 'CLOJARS_' + g.s(LD, 60) },
  { id: 'cloudflare-api-token', key: 'CLOUDFLARE_API_TOKEN', gen: (g) => g.s(B64U, 40), bare: false },
  { id: 'cloudflare-global-key', key: 'CF_API_KEY', gen: (g) => g.hex(37), bare: false },
  { id: 'cloudflare-origin-ca', key: 'CF_ORIGIN_CA_KEY', gen: (g) => `v1.0-${g.hex(24)}-${g.hex(146)}` },
  { id: 'codecov', key: 'CODECOV_TOKEN', gen: (g) => g.uuid(), bare: false },
  { id: 'cohere', key: 'COHERE_API_KEY', gen: (g) => g.alnum(40), bare: false },
  { id: 'contentful', key: 'CONTENTFUL_MANAGEMENT_TOKEN', gen: (g) => 'CFPAT-' + g.s(B64U, 43) },
  { id: 'datadog-api', key: 'DD_API_KEY', gen: (g) => g.hex(32), bare: false },
  { id: 'datadog-app', key: 'DD_APP_KEY', gen: (g) => g.hex(40), bare: false },
  { id: 'defined-networking', key: 'DN_API_KEY', gen: (g) => `dnkey-${g.s(UD, 26)}-${g.s(UD, 52)}` },
  { id: 'duffel', key: 'DUFFEL_ACCESS_TOKEN', gen: (g) => 'duffel_test_' + g.s(B64U, 43) },
  { id: 'dynatrace', key: 'DT_API_TOKEN', gen: (g) => `dt0c01.${g.s(UD, 24)}.${g.s(UD, 64)}` },
  { id: 'easypost', key: 'EASYPOST_API_KEY', gen: (g) => 'EZAK' + g.s(AN, 54) },
  { id: 'flyio', key: 'FLY_API_TOKEN', gen: (g) => 'fo1_' + g.s(B64U, 43) },
  {
    id: 'flyio-macaroon',
    key: 'FLY_API_TOKEN',
    gen: (g) => {
      const t = 'fm2_' + g.s(B64, 300) + '==';
      return [`FlyV1 ${t}`, t];
    },
  },
  { id: 'frameio', key: 'FRAMEIO_TOKEN', gen: (g) => 'fio-u-' + g.s(B64U, 64) },
  { id: 'flutterwave', key: 'FLW_SECRET_KEY', gen: (g) => `FLWSECK_TEST-${g.hex(32)}-X` },
  { id: 'groq', key: 'GROQ_API_KEY', gen: (g) => 'gsk_' + g.s(AN, 52) },
  { id: 'harness', key: 'HARNESS_API_KEY', gen: (g) => `pat.${g.s(B64U, 22)}.${g.s(AN, 24)}.${g.s(AN, 20)}` },
  { id: 'terraform-cloud', key: 'TFE_TOKEN', gen: (g) => `${g.s(AN, 14)}.atlasv1.${g.s(B64U, 67)}` },
  { id: 'vault-service', key: 'VAULT_TOKEN', gen: (g) => 'hvs.' + g.s(B64U, 95) },
  { id: 'vault-batch', key: 'VAULT_TOKEN', gen: (g) => 'hvb.' + g.s(B64U, 140) },
  { id: 'hubspot-private-app', key: 'HUBSPOT_ACCESS_TOKEN', gen: (g) => 'pat-na1-' + g.uuid() },
  { id: 'infracost', key: 'INFRACOST_API_KEY', gen: (g) => 'ico-' + g.s(AN, 32) },
  { id: 'jfrog-api-key', key: 'ARTIFACTORY_API_KEY', gen: (g) => 'AKCp' + g.s(AN, 69) },
  { id: 'jfrog-reference-token', key: 'JFROG_ACCESS_TOKEN', gen: (g) => 'cmVmdGtuOjAxOj' + g.s(AN, 50) },
  { id: 'langsmith', key: 'LANGSMITH_API_KEY', gen: (g) => `lsv2_pt_${g.hex(32)}_${g.hex(10)}` },
  { id: 'launchdarkly-sdk', key: 'LAUNCHDARKLY_SDK_KEY', gen: (g) => 'sdk-' + g.uuid() },
  { id: 'launchdarkly-api', key: 'LD_API_KEY', gen: (g) => 'api-' + g.uuid() },
  {
    id: 'mapbox-secret',
    key: 'MAPBOX_SECRET_TOKEN',
    gen: (g) => `sk.${b64url(JSON.stringify({ u: g.s(LO, 8), a: 'cl' + g.s(LD, 23) }))}.${g.s(B64U, 22)}`,
  },
  { id: 'maxmind', key: 'MAXMIND_LICENSE_KEY', gen: (g) => `${g.s(AN, 6)}_${g.s(AN, 29)}_mmk` },
  { id: 'netlify', key: 'NETLIFY_AUTH_TOKEN', gen: (g) => 'nfp_' + g.s(AN, 36) },
  { id: 'octopus', key: 'OCTOPUS_API_KEY', gen: (g) => 'API-' + g.s(UD, 26) },
  { id: 'openshift', key: 'OPENSHIFT_TOKEN', gen: (g) => 'sha256~' + g.s(B64U, 43) },
  { id: 'perplexity', key: 'PPLX_API_KEY', gen: (g) => 'pplx-' + g.s(AN, 48) },
  { id: 'planetscale', key: 'PLANETSCALE_PASSWORD', gen: (g) => 'pscale_pw_' + g.s(B64U, 43) },
  { id: 'prefect', key: 'PREFECT_API_KEY', gen: (g) => 'pnu_' + g.s(AN, 36) },
  { id: 'readme', key: 'README_API_KEY', gen: (g) => 'rdme_' + g.s(LD, 70) },
  { id: 'rubygems', key: 'GEM_HOST_API_KEY', gen: (g) => 'rubygems_' + g.hex(48) },
  { id: 'scalingo', key: 'SCALINGO_API_TOKEN', gen: (g) => 'tk-us-' + g.s(B64U, 48) },
  { id: 'brevo', key: 'BREVO_API_KEY', gen: (g) => `xkeysib-${g.hex(64)}-${g.s(AN, 16)}` },
  { id: 'shippo', key: 'SHIPPO_API_KEY', gen: (g) => 'shippo_live_' + g.hex(40) },
  { id: 'snyk', key: 'SNYK_TOKEN', gen: (g) => g.uuid(), bare: false },
  { id: 'sourcegraph', key: 'SRC_ACCESS_TOKEN', gen: (g) => `sgp_${g.hex(16)}_${g.hex(40)}` },
  { id: 'typeform', key: 'TYPEFORM_TOKEN', gen: (g) => `tfp_${g.s(B64U, 44)}_${g.s(AN, 14)}` },
  { id: 'yandex-api-key', key: 'YC_API_KEY', gen: (g) => 'AQVN' + g.s(B64U, 36) },
  { id: 'tailscale-auth', key: 'TS_AUTHKEY', gen: (g) => `tskey-auth-k${g.s(AN, 10)}CNTRL-${g.s(AN, 33)}` },
  { id: 'vercel', key: 'VERCEL_TOKEN', gen: (g) => 'vcp_' + g.s(AN, 56) },
  { id: 'figma', key: 'FIGMA_TOKEN', gen: (g) => 'figd_' + g.s(B64U, 40) },
  { id: 'dockerhub-pat', key: 'DOCKERHUB_TOKEN', gen: (g) => 'dckr_pat_' + g.s(B64U, 27) },
  { id: 'supabase-pat', key: 'SUPABASE_ACCESS_TOKEN', gen: (g) => 'sbp_' + g.hex(40) },
  { id: 'replicate', key: 'REPLICATE_API_TOKEN', gen: (g) => 'r8_' + g.s(AN, 37) },
  { id: 'xai', key: 'XAI_API_KEY', gen: (g) => 'xai-' + g.s(AN, 80) },
  { id: 'nuget', key: 'NUGET_API_KEY', gen: (g) => 'oy2' + g.s(LD, 43) },
  { id: 'crates-io', key: 'CARGO_REGISTRY_TOKEN', gen: (g) => 'cio' + g.s(AN, 32) },
  { id: 'facebook-access-token', key: 'FACEBOOK_ACCESS_TOKEN', gen: (g) => 'EAAG' + g.s(AN, 150) },
  { id: 'facebook-app-secret', key: 'FACEBOOK_APP_SECRET', gen: (g) => g.hex(32), bare: false },
  {
    id: 'twitter-bearer',
    key: 'TWITTER_BEARER_TOKEN',
    gen: (g) => 'AAAAAAAAAAAAAAAAAAAAA' + g.s(AN, 22) + '%3D' + g.s(AN, 50),
  },
  {
    id: 'teams-webhook',
    key: 'TEAMS_WEBHOOK_URL',
    gen: (g) => {
      const s = g.hex(32);
      return [
        `https://acme.webhook.office.com/webhookb2/${g.uuid()}@${g.uuid()}/IncomingWebhook/${s}/${g.uuid()}/V2${g.s(B64U, 40)}`,
        s,
      ];
    },
  },
  { id: 'lob', key: 'LOB_API_KEY', gen: (g) => 'live_' + g.hex(35) },
  { id: 'resend', key: 'RESEND_API_KEY', gen: (g) => `re_${g.s(AN, 8)}_${g.s(AN, 24)}` },
  { id: 'deepseek', key: 'DEEPSEEK_API_KEY', gen: (g) => 'sk-' + g.hex(32) },
  { id: 'mistral', key: 'MISTRAL_API_KEY', gen: (g) => g.alnum(32), bare: false },
  { id: 'eth-private-key', key: 'DEPLOYER_PRIVATE_KEY', gen: (g) => '0x' + g.hex(64), bare: false },
  { id: 'wireguard-private-key', key: 'WG_PRIVATE_KEY', gen: (g) => b64(g.bytes(32)), bare: false },
  {
    id: 'django-secret-key',
    key: 'SECRET_KEY',
    gen: (g) => 'django-insecure-' + g.s(LD + '!@%^&*-_=+', 50),
    places: ['python', 'env-quoted', 'yaml-quoted'],
  },
  { id: 'rails-secret-key-base', key: 'SECRET_KEY_BASE', gen: (g) => g.hex(128), bare: false },
  {
    id: 'laravel-app-key',
    key: 'APP_KEY',
    gen: (g) => {
      const k = b64(g.bytes(32));
      return [`base64:${k}`, k];
    },
    places: ['env', 'env-quoted', 'php'],
  },
  {
    id: 'kubeconfig-client-key',
    key: 'client-key-data',
    gen: (g) =>
      b64(
        `-----BEGIN RSA PRIVATE KEY-----\n${b64(Buffer.concat([Buffer.from('308204a40201000282010100', 'hex'), g.bytes(600)]))}\n-----END RSA PRIVATE KEY-----\n`,
      ),
    places: ['kubeconfig', 'kubeconfig', 'yaml'],
  },
];

type PlaceMake = (g: Gen, key: string) => Doc;

/** Placements where a name sits next to the value. */
const NAMED: Record<string, PlaceMake> = {
  env: (g, k) => ({
    file: g.pick(['.env', 'deploy/.env.production', 'services/api/.env']),
    lines: [
      `# ${g.pick(SERVICES)} service`,
      'APP_ENV=production',
      `PORT=${g.int(3000, 9000)}`,
      `${scream(k)}=${V}`,
      'LOG_LEVEL=info',
    ],
  }),
  'env-quoted': (g, k) => ({
    file: g.pick(['.env.local', 'config/.env.staging', '.env']),
    lines: [
      '# local overrides',
      `DATABASE_HOST=${g.pick(HOSTS)}`,
      `${scream(k)}="${V}"`,
      'FEATURE_FLAGS="beta,search"',
    ],
  }),
  'shell-export': (g, k) => ({
    file: g.pick(['scripts/env.sh', 'bin/setup-env.sh', 'ci/vars.sh']),
    lines: [
      '#!/usr/bin/env bash',
      'set -euo pipefail',
      '',
      `export ${scream(k)}='${V}'`,
      'export REGION=eu-west-1',
      '',
    ],
  }),
  yaml: (g, k) => {
    const svc = g.pick(SERVICES);
    return {
      file: `config/${svc}.yaml`,
      lines: [
        `${svc}:`,
        '  enabled: true',
        `  endpoint: https://${svc}.example.com/api`,
        `  ${snake(k)}: ${V}`,
        '  timeout_seconds: 30',
      ],
    };
  },
  'yaml-quoted': (g, k) => ({
    file: g.pick(['config/settings.yml', 'app/config/production.yml']),
    lines: ['production:', '  debug: false', `  ${snake(k)}: "${V}"`, '  allowed_hosts: ["example.com"]'],
  }),
  json: (g, k) => ({
    file: g.pick(['config/credentials.json', 'appsettings.Production.json', 'secrets.json']),
    lines: ['{', '  "environment": "staging",', `  "${camel(k)}": "${V}",`, '  "region": "eu-west-1"', '}'],
  }),
  python: (g, k) => ({
    file: g.pick(['app/settings.py', 'src/config.py', 'scripts/sync.py']),
    lines: [
      'import os',
      '',
      `TIMEOUT = ${g.int(5, 60)}`,
      `${scream(k)} = "${V}"`,
      '',
      '',
      'def headers():',
      '    return {}',
    ],
  }),
  typescript: (g, k) => ({
    file: g.pick(['src/config.ts', 'web/lib/env.ts']),
    lines: [
      "import { z } from 'zod';",
      '',
      `export const ${camel(k)} = '${V}';`,
      'export const retries = 3;',
    ],
  }),
  go: (g, k) => ({
    file: g.pick(['internal/config/config.go', 'cmd/worker/main.go']),
    lines: [
      'package config',
      '',
      'import "time"',
      '',
      `const ${camel(k)} = "${V}"`,
      '',
      'var Timeout = 30 * time.Second',
    ],
  }),
  rust: (g, k) => ({
    file: g.pick(['src/config.rs', 'crates/client/src/lib.rs']),
    lines: [
      'use std::time::Duration;',
      '',
      `pub const ${scream(k)}: &str = "${V}";`,
      'pub const TIMEOUT: Duration = Duration::from_secs(30);',
    ],
  }),
  java: (_g, k) => ({
    file: 'src/main/java/com/acme/Config.java',
    lines: [
      'package com.acme;',
      '',
      'public final class Config {',
      `    public static final String ${scream(k)} = "${V}";`,
      '    private Config() {}',
      '}',
    ],
  }),
  dockerfile: (g, k) => ({
    file: g.pick(['Dockerfile', 'docker/api.Dockerfile']),
    lines: [
      'FROM node:20-alpine',
      'WORKDIR /app',
      `ENV ${scream(k)}=${V}`,
      'COPY . .',
      'RUN npm ci --omit=dev',
      'CMD ["node", "server.js"]',
    ],
  }),
  'github-actions': (_g, k) => ({
    file: '.github/workflows/deploy.yml',
    lines: [
      'name: deploy',
      'on:',
      '  push:',
      '    branches: [main]',
      'jobs:',
      '  deploy:',
      '    runs-on: ubuntu-latest',
      '    env:',
      `      ${scream(k)}: ${V}`,
      '    steps:',
      '      - uses: actions/checkout@v4',
      '      - run: ./scripts/deploy.sh',
    ],
  }),
  terraform: (g, k) => ({
    file: g.pick(['infra/main.tf', 'terraform/providers.tf']),
    lines: [
      `resource "${g.pick(['null_resource', 'local_file'])}" "${g.pick(SERVICES)}" {`,
      `  ${snake(k)} = "${V}"`,
      '  count = 1',
      '}',
    ],
  }),
  'k8s-secret': (g, k) => ({
    file: g.pick(['k8s/secret.yaml', 'deploy/manifests/credentials.yaml']),
    lines: [
      'apiVersion: v1',
      'kind: Secret',
      'metadata:',
      `  name: ${g.pick(SERVICES)}-credentials`,
      'type: Opaque',
      'stringData:',
      `  ${scream(k)}: "${V}"`,
    ],
  }),
  toml: (g, k) => ({
    file: g.pick(['config.toml', 'settings/production.toml']),
    lines: [`[${g.pick(SERVICES)}]`, 'enabled = true', `${snake(k)} = "${V}"`, 'retries = 3'],
  }),
  notebook: (g, k) => ({
    file: g.pick(['notebooks/explore.ipynb', 'analysis/eval.ipynb']),
    lines: notebook(['import requests', `${snake(k)} = "${V}"`, `resp = requests.get(URL, timeout=30)`]),
  }),
  properties: (_g, k) => ({
    file: 'src/main/resources/application.properties',
    lines: ['server.port=8080', `${dotted(k)}=${V}`, 'logging.level.root=INFO'],
  }),
  'xml-appsettings': (_g, k) => ({
    file: 'web.config',
    lines: [
      '<configuration>',
      '  <appSettings>',
      '    <add key="Environment" value="Production" />',
      `    <add key="${pascal(k)}" value="${V}" />`,
      '  </appSettings>',
      '</configuration>',
    ],
  }),
  'curl-header': (g, k) => ({
    file: g.pick(['scripts/smoke.sh', 'docs/api.md']),
    lines: g.pick([
      ['#!/bin/sh', `curl -fsS -H "Authorization: Bearer ${V}" https://api.example.com/v1/me`],
      ['#!/bin/sh', `curl -fsS -H 'X-Api-Key: ${V}' "https://api.example.com/v1/${kebab(k)}/status"`],
    ]),
  }),
  php: (_g, k) => ({
    file: 'config/app.php',
    lines: ['<?php', '', 'return [', "    'name' => 'Acme',", `    '${snake(k)}' => '${V}',`, '];'],
  }),
  kubeconfig: (g) => ({
    file: g.pick(['.kube/config', 'deploy/kubeconfig.yaml']),
    lines: [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- cluster:',
      `    server: https://${g.digits(3)}.${g.int(10, 99)}.0.4:6443`,
      '  name: prod',
      'users:',
      '- name: deployer',
      '  user:',
      `    client-key-data: ${V}`,
      'current-context: prod',
    ],
  }),
};

/** Placements with no name beside the value: only its format can give it away. */
const NAMELESS: Record<string, PlaceMake> = {
  'markdown-prose': (g) => ({
    file: g.pick(['docs/runbook.md', 'NOTES.md', 'docs/onboarding.md']),
    lines: [
      '# Sandbox access',
      '',
      'Deploys go through the usual pipeline.',
      g.pick([
        `Paste \`${V}\` into the dashboard when it asks.`,
        `For the sandbox use ${V} until we move to SSO.`,
        `Current one: ${V}`,
      ]),
      '',
      'Ask in #infra if it stops working.',
    ],
  }),
  'log-line': (g) => ({
    file: g.pick(['logs/worker.log', 'tmp/debug.log']),
    lines: [
      '2024-05-02T09:14:03.112Z INFO  worker started pid=4411',
      `2024-05-02T09:14:03.530Z DEBUG upstream accepted ${V} (status=200, 112ms)`,
      '2024-05-02T09:14:04.001Z INFO  processed 12 jobs',
    ],
  }),
  'positional-arg': (g) =>
    g.pick([
      {
        file: 'app/client.py',
        lines: ['from acme import Client', '', `client = Client("${V}", timeout=30)`],
      },
      {
        file: 'src/client.js',
        lines: ["import { Client } from 'acme';", '', `export const client = new Client('${V}');`],
      },
      { file: 'pkg/api/client.go', lines: ['package api', '', `var client = NewClient("${V}")`] },
    ]),
  'code-comment': (g) =>
    g.pick([
      { file: 'src/worker.py', lines: ['def run():', `    # old: ${V}`, '    return 0'] },
      { file: 'src/index.ts', lines: [`// ${V}`, 'export function main(): void {}'] },
    ]),
  'bare-line': (g) => ({
    file: g.pick(['scratch.txt', 'tmp/notes.txt']),
    lines: ['rotate after the release', V, 'done'],
  }),
};

// ---------------------------------------------------------------------------------------------------------------------
// Private keys and other multi-line secrets

interface Block {
  id: string;
  header: string;
  footer: string;
  /** Lines between header and footer (the secret); `pre` lines (like PEM headers) are not part of the secret. */
  body: (g: Gen) => { pre?: string[]; lines: string[] };
}

function wrap(s: string, n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < s.length; i += n) out.push(s.slice(i, i + n));
  return out;
}

const BLOCKS: Block[] = [
  {
    id: 'rsa-private-key',
    header: '-----BEGIN RSA PRIVATE KEY-----',
    footer: '-----END RSA PRIVATE KEY-----',
    body: (g) => ({
      lines: wrap(b64(Buffer.concat([Buffer.from('308204a40201000282010100', 'hex'), g.bytes(1180)])), 64),
    }),
  },
  {
    id: 'ec-private-key',
    header: '-----BEGIN EC PRIVATE KEY-----',
    footer: '-----END EC PRIVATE KEY-----',
    body: (g) => ({
      lines: wrap(
        b64(
          Buffer.concat([
            Buffer.from('30770201010420', 'hex'),
            g.bytes(32),
            Buffer.from('a00a06082a8648ce3d030107a14403420004', 'hex'),
            g.bytes(64),
          ]),
        ),
        64,
      ),
    }),
  },
  {
    id: 'openssh-private-key',
    header: '-----BEGIN OPENSSH PRIVATE KEY-----',
    footer: '-----END OPENSSH PRIVATE KEY-----',
    body: (g) => ({
      lines: wrap(
        b64(Buffer.concat([Buffer.from('openssh-key-v1\0'), Buffer.from('00000004', 'hex'), g.bytes(380)])),
        70,
      ),
    }),
  },
  {
    id: 'pkcs8-private-key',
    header: '-----BEGIN PRIVATE KEY-----',
    footer: '-----END PRIVATE KEY-----',
    body: (g) => ({
      lines: wrap(
        b64(
          Buffer.concat([
            Buffer.from('308204be020100300d06092a864886f70d0101010500048204a8', 'hex'),
            g.bytes(1190),
          ]),
        ),
        64,
      ),
    }),
  },
  {
    id: 'encrypted-private-key',
    header: '-----BEGIN ENCRYPTED PRIVATE KEY-----',
    footer: '-----END ENCRYPTED PRIVATE KEY-----',
    body: (g) => ({
      lines: wrap(
        b64(
          Buffer.concat([
            Buffer.from('3082051c304e06092a864886f70d01050d3041302906092a864886f70d01050c301c0408', 'hex'),
            g.bytes(1240),
          ]),
        ),
        64,
      ),
    }),
  },
  {
    id: 'pgp-private-key',
    header: '-----BEGIN PGP PRIVATE KEY BLOCK-----',
    footer: '-----END PGP PRIVATE KEY BLOCK-----',
    body: (g) => ({
      pre: ['', ''],
      lines: [
        ...wrap(b64(Buffer.concat([Buffer.from('9503c60465', 'hex'), g.bytes(900)])), 64),
        `=${g.s(B64, 4)}`,
      ],
    }),
  },
  {
    id: 'dsa-private-key',
    header: '-----BEGIN DSA PRIVATE KEY-----',
    footer: '-----END DSA PRIVATE KEY-----',
    body: (g) => ({
      lines: wrap(b64(Buffer.concat([Buffer.from('308201bb02010002818100', 'hex'), g.bytes(430)])), 64),
    }),
  },
  {
    id: 'openvpn-static-key',
    header: '-----BEGIN OpenVPN Static key V1-----',
    footer: '-----END OpenVPN Static key V1-----',
    body: (g) => ({ lines: Array.from({ length: 16 }, () => g.hex(32)) }),
  },
];

type BlockPlace = (
  g: Gen,
  b: Block,
  pre: string[],
  lines: string[],
) => { doc: Doc; block: string; secret: string };

const BLOCK_PLACES: Record<string, BlockPlace> = {
  'pem-file': (g, b, pre, lines) => {
    const block = [b.header, ...pre, ...lines, b.footer].join('\n');
    return {
      doc: { file: g.pick(['deploy/id_rsa', 'certs/server.key', 'secrets/signing.pem']), lines: [V] },
      block,
      secret: lines.join('\n'),
    };
  },
  'yaml-block': (g, b, pre, lines) => {
    const ind = '    ';
    const all = [b.header, ...pre, ...lines, b.footer];
    return {
      doc: {
        file: g.pick(['k8s/tls-secret.yaml', 'group_vars/all.yml']),
        lines: [
          'apiVersion: v1',
          'kind: Secret',
          'metadata:',
          '  name: tls',
          'stringData:',
          `  tls.key: |`,
          `${ind}${V}`,
        ],
      },
      block: all.join('\n' + ind),
      secret: lines.join('\n' + ind),
    };
  },
  'env-escaped': (g, b, pre, lines) => ({
    doc: {
      file: g.pick(['.env', 'deploy/.env.production']),
      lines: ['APP_ENV=production', `SIGNING_KEY="${V}"`, 'PORT=8080'],
    },
    block: [b.header, ...pre, ...lines, b.footer].join('\\n') + '\\n',
    secret: lines.join('\\n'),
  }),
  'json-escaped': (g, b, pre, lines) => ({
    doc: {
      file: g.pick(['config/keys.json', 'secrets/deploy.json']),
      lines: ['{', '  "keyId": "deploy-2024",', `  "privateKey": "${V}"`, '}'],
    },
    block: [b.header, ...pre, ...lines, b.footer].join('\\n') + '\\n',
    secret: lines.join('\\n'),
  }),
  'terraform-heredoc': (_g, b, pre, lines) => ({
    doc: {
      file: 'infra/keys.tf',
      lines: ['resource "tls_locally_signed_cert" "x" {', '  ca_private_key_pem = <<EOT', V, 'EOT', '}'],
    },
    block: [b.header, ...pre, ...lines, b.footer].join('\n'),
    secret: lines.join('\n'),
  }),
  'markdown-code': (g, b, pre, lines) => ({
    doc: {
      file: g.pick(['docs/setup.md', 'README.md']),
      lines: ['## Deploy key', '', 'Save this as `~/.ssh/deploy`:', '', '```', V, '```'],
    },
    block: [b.header, ...pre, ...lines, b.footer].join('\n'),
    secret: lines.join('\n'),
  }),
  'python-string': (_g, b, pre, lines) => ({
    doc: { file: 'tests/fixtures/keys.py', lines: ['SIGNING_KEY = """', V, '"""'] },
    block: [b.header, ...pre, ...lines, b.footer].join('\n'),
    secret: lines.join('\n'),
  }),
};

// ---------------------------------------------------------------------------------------------------------------------
// Generic secrets under secret-sounding names

const KINDS = ['alnum', 'letters', 'lower', 'symbols', 'hex', 'base64', 'passphrase', 'short'] as const;
type Kind = (typeof KINDS)[number];
const ALWAYS_FORBID = '\'"`\\ \t';
const SYMBOLS = '!@#$%^&*-_=+.?~:,/()[]{}<>|;';

interface Spot {
  id: string;
  /** Characters the value may not hold here (beyond quotes, backslashes and spaces). */
  forbid?: string;
  /** What the file holds in place of the value (base64 of it, say); the secret is that. */
  encode?: (v: string) => string;
  make: (g: Gen) => Doc;
}

function value(g: Gen, kind: Kind, forbid: string): string {
  const bad = ALWAYS_FORBID + forbid;
  const ok = (set: string) => [...set].filter((c) => !bad.includes(c)).join('');
  switch (kind) {
    case 'alnum':
      return g.alnum(g.int(20, 32));
    case 'letters':
      return g.letters(g.int(16, 24));
    case 'lower':
      return g.s(LO, g.int(12, 16));
    case 'hex':
      return g.hex(g.pick([32, 40, 64]));
    case 'base64': {
      const raw = b64(g.bytes(g.pick([24, 30, 32, 33])));
      if ([...raw].every((c) => !bad.includes(c))) return raw;
      return b64url(g.bytes(32)).replace(/[-_]/g, () => g.s(DI, 1));
    }
    case 'passphrase': {
      const seps = ok('-_.+');
      const sep = seps ? g.pick(seps.split('')) : '';
      return Array.from({ length: g.int(4, 5) }, () => g.s(LO, g.int(4, 7))).join(sep);
    }
    case 'symbols':
    case 'short': {
      const sym = ok(SYMBOLS);
      const n = kind === 'short' ? g.int(8, 10) : g.int(16, 22);
      for (;;) {
        const v = g.s(AN + sym + sym, n);
        const syms = [...v].filter((c) => sym.includes(c)).length;
        if (syms >= (kind === 'short' ? 2 : 3) && /\d/.test(v) && /[a-z]/i.test(v) && !sym.includes(v[0]!))
          return v;
      }
    }
  }
}

const SH_META = ' \'"`$&|;<>()\\!*?[]{}#~^';
const URL_UNSAFE = '@:/?#[]%<>{}|^;,+=&$ !*()~';

const nm = (g: Gen): string => g.pick(SECRET_NAMES);
const svc = (g: Gen): string => g.pick(SERVICES);
const host = (g: Gen): string => g.pick(HOSTS);
const user = (g: Gen): string => g.pick(USERS);

const SPOTS: Spot[] = [
  // .env files
  {
    id: 'env-unquoted',
    forbid: '#$',
    make: (g) => ({ file: '.env', lines: ['APP_ENV=production', `${nm(g)}=${V}`, 'PORT=8080'] }),
  },
  {
    id: 'env-double-quoted',
    forbid: '$',
    make: (g) => ({ file: '.env.production', lines: ['# prod', `${nm(g)}="${V}"`] }),
  },
  {
    id: 'env-single-quoted',
    make: (g) => ({ file: 'config/.env', lines: [`${nm(g)}='${V}'`, 'DEBUG=false'] }),
  },
  {
    id: 'env-export',
    forbid: '#$',
    make: (g) => ({ file: '.envrc', lines: ['use node', `export ${nm(g)}=${V}`] }),
  },
  {
    id: 'env-spaces-around-equals',
    forbid: '#$',
    make: (g) => ({ file: '.env', lines: [`${nm(g)} = ${V}`] }),
  },
  {
    id: 'env-hash-inside-quoted',
    forbid: '$',
    encode: (v) => v.slice(0, 6) + '#' + v.slice(6),
    make: (g) => ({ file: '.env', lines: ['NODE_ENV=production', `${nm(g)}="${V}"`] }),
  },
  {
    id: 'env-hash-inside-unquoted',
    forbid: '#$',
    encode: (v) => v.slice(0, 5) + '#' + v.slice(5),
    make: (g) => ({ file: '.env', lines: [`${nm(g)}=${V}`, 'WORKERS=4'] }),
  },
  {
    id: 'env-semicolon-inside',
    forbid: '#$;',
    encode: (v) => v.slice(0, 7) + ';' + v.slice(7),
    make: (g) => ({ file: 'deploy/.env', lines: [`${nm(g)}=${V}`] }),
  },
  {
    id: 'env-trailing-comment',
    forbid: '#$',
    make: (g) => ({ file: '.env', lines: [`${nm(g)}=${V} # rotated 2024-03-01`] }),
  },
  {
    id: 'env-lowercase-name',
    forbid: '#$',
    make: (g) => ({ file: '.env', lines: [`${snake(nm(g))}=${V}`] }),
  },
  {
    id: 'env-nested-name',
    forbid: '#$',
    make: () => ({ file: '.env', lines: [`ACME__DATABASE__PASSWORD=${V}`, 'ACME__DATABASE__HOST=db'] }),
  },
  {
    id: 'bat-set',
    forbid: '%^&|<>"',
    make: (g) => ({ file: 'scripts/env.bat', lines: ['@echo off', `set ${nm(g)}=${V}`] }),
  },
  {
    id: 'powershell-env',
    forbid: '$`',
    make: (g) => ({ file: 'scripts/env.ps1', lines: [`$env:${nm(g)} = "${V}"`] }),
  },
  // docker compose
  {
    id: 'compose-env-list',
    forbid: '$#',
    make: () => ({
      file: 'docker-compose.yml',
      lines: [
        'services:',
        '  db:',
        '    image: postgres:16',
        '    environment:',
        `      - POSTGRES_PASSWORD=${V}`,
        '      - POSTGRES_DB=app',
      ],
    }),
  },
  {
    id: 'compose-env-map',
    forbid: '$',
    make: (g) => ({
      file: 'compose.yaml',
      lines: [
        'services:',
        '  api:',
        '    build: .',
        '    environment:',
        `      ${nm(g)}: "${V}"`,
        '      LOG_LEVEL: info',
      ],
    }),
  },
  {
    id: 'compose-build-args',
    forbid: '$#: ',
    make: () => ({
      file: 'docker-compose.override.yml',
      lines: [
        'services:',
        '  web:',
        '    build:',
        '      context: .',
        '      args:',
        `        NPM_TOKEN: ${V}`,
      ],
    }),
  },
  // kubernetes, helm
  {
    id: 'k8s-secret-stringdata',
    make: () => ({
      file: 'k8s/db-secret.yaml',
      lines: [
        'apiVersion: v1',
        'kind: Secret',
        'metadata:',
        '  name: db',
        'type: Opaque',
        'stringData:',
        `  password: "${V}"`,
      ],
    }),
  },
  {
    id: 'k8s-secret-data-base64',
    encode: (v) => b64(v),
    make: (g) => ({
      file: 'k8s/api-secret.yaml',
      lines: [
        'apiVersion: v1',
        'kind: Secret',
        'metadata:',
        '  name: api',
        'data:',
        `  ${snake(nm(g))}: ${V}`,
      ],
    }),
  },
  {
    id: 'k8s-configmap',
    make: (g) => ({
      file: 'k8s/configmap.yaml',
      lines: [
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata:',
        '  name: app-config',
        'data:',
        '  LOG_LEVEL: info',
        `  ${nm(g)}: "${V}"`,
      ],
    }),
  },
  {
    id: 'k8s-env-name-value',
    make: (g) => ({
      file: 'k8s/deployment.yaml',
      lines: [
        '      containers:',
        '        - name: api',
        '          env:',
        `            - name: ${nm(g)}`,
        `              value: "${V}"`,
        '            - name: PORT',
        '              value: "8080"',
      ],
    }),
  },
  {
    id: 'helm-values-nested',
    forbid: '#:{}[],&*!|>%@',
    make: () => ({
      file: 'charts/app/values.yaml',
      lines: [
        'postgresql:',
        '  enabled: true',
        '  auth:',
        '    username: app',
        `    password: ${V}`,
        '    database: app',
      ],
    }),
  },
  // terraform
  {
    id: 'terraform-variable-default',
    forbid: '$%',
    make: (g) => ({
      file: 'infra/variables.tf',
      lines: [`variable "${snake(nm(g))}" {`, '  type      = string', `  default   = "${V}"`, '}'],
    }),
  },
  {
    id: 'terraform-resource-attr',
    forbid: '$%',
    make: () => ({
      file: 'infra/rds.tf',
      lines: [
        'resource "aws_db_instance" "main" {',
        '  engine   = "postgres"',
        '  username = "app"',
        `  password = "${V}"`,
        '}',
      ],
    }),
  },
  {
    id: 'terraform-tfvars',
    forbid: '$%',
    make: (g) => ({ file: 'infra/prod.tfvars', lines: ['region = "eu-west-1"', `${snake(nm(g))} = "${V}"`] }),
  },
  // CI
  {
    id: 'github-actions-env',
    forbid: '#:{}[],&*!|>%@$',
    make: (g) => ({
      file: '.github/workflows/ci.yml',
      lines: [
        'jobs:',
        '  test:',
        '    runs-on: ubuntu-latest',
        '    env:',
        `      ${nm(g)}: ${V}`,
        '    steps:',
        '      - run: npm test',
      ],
    }),
  },
  {
    id: 'github-actions-with',
    forbid: '#:{}[],&*!|>%@$',
    make: () => ({
      file: '.github/workflows/release.yml',
      lines: [
        '    steps:',
        '      - uses: docker/login-action@v3',
        '        with:',
        '          username: acme',
        `          password: ${V}`,
      ],
    }),
  },
  {
    id: 'gitlab-ci-variables',
    forbid: '$',
    make: (g) => ({
      file: '.gitlab-ci.yml',
      lines: ['variables:', `  ${nm(g)}: "${V}"`, '', 'test:', '  script: make test'],
    }),
  },
  {
    id: 'circleci-environment',
    forbid: '#:{}[],&*!|>%@$',
    make: (g) => ({
      file: '.circleci/config.yml',
      lines: ['jobs:', '  build:', '    environment:', `      ${nm(g)}: ${V}`],
    }),
  },
  // Java / Spring / XML
  {
    id: 'properties',
    make: (g) => ({
      file: 'src/main/resources/application.properties',
      lines: ['server.port=8080', `app.${dotted(nm(g))}=${V}`],
    }),
  },
  {
    id: 'properties-spring-datasource',
    make: () => ({
      file: 'src/main/resources/application-prod.properties',
      lines: [
        'spring.datasource.url=jdbc:postgresql://db:5432/app',
        'spring.datasource.username=app',
        `spring.datasource.password=${V}`,
      ],
    }),
  },
  {
    id: 'spring-yaml',
    forbid: '#:{}[],&*!|>%@',
    make: () => ({
      file: 'src/main/resources/application.yml',
      lines: [
        'spring:',
        '  datasource:',
        '    url: jdbc:mysql://db:3306/app',
        '    username: app',
        `    password: ${V}`,
      ],
    }),
  },
  {
    id: 'gradle-properties',
    make: () => ({
      file: 'gradle.properties',
      lines: ['org.gradle.jvmargs=-Xmx2g', `signing.password=${V}`],
    }),
  },
  {
    id: 'maven-settings-xml',
    forbid: '&<>',
    make: () => ({
      file: '.m2/settings.xml',
      lines: [
        '<settings>',
        '  <servers>',
        '    <server>',
        '      <id>releases</id>',
        '      <username>deploy</username>',
        `      <password>${V}</password>`,
        '    </server>',
        '  </servers>',
        '</settings>',
      ],
    }),
  },
  {
    id: 'webconfig-appsettings',
    forbid: '&<>',
    make: (g) => ({
      file: 'Web.config',
      lines: [
        '<configuration>',
        '  <appSettings>',
        `    <add key="${pascal(nm(g))}" value="${V}" />`,
        '  </appSettings>',
        '</configuration>',
      ],
    }),
  },
  {
    id: 'xml-connection-string',
    forbid: '&<>;',
    make: (g) => ({
      file: 'App.config',
      lines: [
        '<connectionStrings>',
        `  <add name="Main" connectionString="Server=tcp:${host(g)},1433;Database=app;User Id=sa;Password=${V};" />`,
        '</connectionStrings>',
      ],
    }),
  },
  {
    id: 'xml-element',
    forbid: '&<>',
    make: (g) => {
      const tag = camel(nm(g));
      return {
        file: 'config/service.xml',
        lines: [
          '<service>',
          '  <endpoint>https://api.example.com</endpoint>',
          `  <${tag}>${V}</${tag}>`,
          '</service>',
        ],
      };
    },
  },
  {
    id: 'hibernate-property',
    forbid: '&<>',
    make: () => ({
      file: 'src/main/resources/hibernate.cfg.xml',
      lines: [
        '<session-factory>',
        `  <property name="hibernate.connection.password">${V}</property>`,
        '</session-factory>',
      ],
    }),
  },
  {
    id: 'nuget-config',
    forbid: '&<>',
    make: () => ({
      file: 'NuGet.Config',
      lines: [
        '<packageSourceCredentials>',
        '  <acme>',
        '    <add key="Username" value="ci" />',
        `    <add key="ClearTextPassword" value="${V}" />`,
        '  </acme>',
        '</packageSourceCredentials>',
      ],
    }),
  },
  // INI, TOML, JSON
  {
    id: 'ini',
    forbid: ';#',
    make: () => ({ file: 'config/app.ini', lines: ['[database]', 'host = db', `password = ${V}`] }),
  },
  {
    id: 'ini-semicolon-inside',
    forbid: ';#',
    encode: (v) => v.slice(0, 6) + ';' + v.slice(6),
    make: (g) => ({
      file: 'setup.cfg',
      lines: ['[upload]', 'repository = internal', `${snake(nm(g))} = ${V}`],
    }),
  },
  {
    id: 'mysql-cnf',
    make: () => ({ file: '.my.cnf', lines: ['[client]', 'user=root', `password="${V}"`] }),
  },
  {
    id: 'toml',
    make: () => ({
      file: 'config/production.toml',
      lines: ['[database]', 'url = "postgres://db/app"', `password = "${V}"`],
    }),
  },
  {
    id: 'toml-inline-table',
    make: () => ({
      file: 'Settings.toml',
      lines: [`db = { user = "app", password = "${V}", port = 5432 }`],
    }),
  },
  {
    id: 'json-flat',
    make: (g) => ({
      file: 'config.json',
      lines: ['{', '  "port": 8080,', `  "${camel(nm(g))}": "${V}"`, '}'],
    }),
  },
  {
    id: 'json-nested',
    make: () => ({
      file: 'config/default.json',
      lines: [
        '{',
        '  "smtp": {',
        '    "host": "smtp.example.com",',
        '    "auth": {',
        '      "user": "mailer",',
        `      "pass": "${V}"`,
        '    }',
        '  }',
        '}',
      ],
    }),
  },
  {
    id: 'json-minified',
    make: () => ({
      file: 'fixtures/conn.json',
      lines: [`{"user":"svc","password":"${V}","host":"db","port":5432}`],
    }),
  },
  {
    id: 'json-name-value-pair',
    make: (g) => ({
      file: 'ecs/task-definition.json',
      lines: [
        '{',
        '  "environment": [',
        '    { "name": "PORT", "value": "8080" },',
        `    { "name": "${nm(g)}", "value": "${V}" }`,
        '  ]',
        '}',
      ],
    }),
  },
  // Makefiles
  {
    id: 'makefile-?=',
    forbid: '$#',
    make: (g) => ({ file: 'Makefile', lines: [`${nm(g)} ?= ${V}`, '', 'deploy:', '\t./deploy.sh'] }),
  },
  {
    id: 'makefile-:=',
    forbid: '$#',
    make: (g) => ({ file: 'Makefile', lines: ['SHELL := /bin/bash', `${nm(g)} := ${V}`] }),
  },
  {
    id: 'makefile-=',
    forbid: '$#',
    make: (g) => ({ file: 'build/common.mk', lines: [`${nm(g)} = ${V}`, 'export'] }),
  },
  {
    id: 'makefile-+=-ldflags',
    forbid: '$#',
    make: () => ({
      file: 'Makefile',
      lines: [
        'LDFLAGS := -s -w',
        `LDFLAGS += -X main.apiKey=${V}`,
        'build:',
        '\tgo build -ldflags "$(LDFLAGS)" ./cmd/app',
      ],
    }),
  },
  // shell, Dockerfile
  {
    id: 'shell-export-double-quoted',
    forbid: '$!',
    make: (g) => ({ file: 'deploy.sh', lines: ['#!/bin/bash', `export ${nm(g)}="${V}"`, './run'] }),
  },
  {
    id: 'shell-assign-single-quoted',
    make: (g) => ({
      file: 'scripts/backup.sh',
      lines: ['#!/bin/sh', `${nm(g)}='${V}'`, 'pg_dump app > dump.sql'],
    }),
  },
  {
    id: 'shell-local-in-function',
    forbid: '$!',
    make: () => ({ file: 'lib/auth.sh', lines: ['login() {', `  local token="${V}"`, '  echo ok', '}'] }),
  },
  {
    id: 'dockerfile-env-equals',
    forbid: SH_META,
    make: (g) => ({ file: 'Dockerfile', lines: ['FROM python:3.12-slim', `ENV ${nm(g)}=${V}`] }),
  },
  {
    id: 'dockerfile-env-space',
    forbid: SH_META,
    make: (g) => ({ file: 'Dockerfile', lines: ['FROM alpine:3.20', `ENV ${nm(g)} ${V}`] }),
  },
  {
    id: 'dockerfile-arg-default',
    forbid: SH_META,
    make: () => ({ file: 'Dockerfile', lines: ['FROM node:20', `ARG NPM_TOKEN=${V}`, 'RUN npm ci'] }),
  },
  // notebooks, markdown
  {
    id: 'notebook-assign',
    make: (g) => ({
      file: 'notebooks/train.ipynb',
      lines: notebook(['import os', `${snake(nm(g))} = "${V}"`]),
    }),
  },
  {
    id: 'notebook-os-environ',
    make: (g) => ({
      file: 'notebooks/demo.ipynb',
      lines: notebook([`os.environ["${nm(g)}"] = "${V}"`, 'run()']),
    }),
  },
  {
    id: 'markdown-code-block-shell',
    forbid: '$#',
    make: (g) => ({
      file: 'README.md',
      lines: ['## Running locally', '', '```bash', `export ${nm(g)}=${V}`, 'npm start', '```'],
    }),
  },
  {
    id: 'markdown-code-block-yaml',
    forbid: '#:{}[],&*!|>%@',
    make: () => ({
      file: 'docs/config.md',
      lines: ['Example:', '', '```yaml', 'database:', `  password: ${V}`, '```'],
    }),
  },
  // netrc, pgpass
  {
    id: 'netrc-one-line',
    forbid: '#',
    make: (g) => ({
      file: '.netrc',
      lines: [`machine api.${svc(g)}.example.com login ${user(g)} password ${V}`],
    }),
  },
  {
    id: 'netrc-multi-line',
    forbid: '#',
    make: (g) => ({
      file: '_netrc',
      lines: ['machine git.example.com', `  login ${user(g)}`, `  password ${V}`],
    }),
  },
  {
    id: 'pgpass',
    forbid: ':',
    make: (g) => ({ file: '.pgpass', lines: [`${host(g)}:5432:app:${user(g)}:${V}`] }),
  },
  {
    id: 'pgpass-wildcards',
    forbid: ':',
    make: () => ({
      file: 'deploy/pgpass',
      lines: ['# hostname:port:database:username:password', `*:*:*:postgres:${V}`],
    }),
  },
  // nginx, HTTP request files
  {
    id: 'nginx-api-key-header',
    forbid: '$;{}',
    make: () => ({
      file: 'nginx/conf.d/api.conf',
      lines: [
        'location /api/ {',
        '    proxy_pass http://backend;',
        `    proxy_set_header X-API-Key "${V}";`,
        '}',
      ],
    }),
  },
  {
    id: 'nginx-bearer-header',
    forbid: '$;{}',
    make: () => ({
      file: 'nginx/sites-enabled/default',
      lines: ['location / {', `    proxy_set_header Authorization "Bearer ${V}";`, '}'],
    }),
  },
  {
    id: 'nginx-basic-header',
    encode: (v) => b64(`proxy:${v}`),
    make: () => ({ file: 'nginx/upstream.conf', lines: [`proxy_set_header Authorization "Basic ${V}";`] }),
  },
  {
    id: 'http-x-api-key',
    make: () => ({
      file: 'requests/api.http',
      lines: ['GET https://api.example.com/v1/items', `X-Api-Key: ${V}`, 'Accept: application/json'],
    }),
  },
  {
    id: 'http-bearer',
    make: () => ({
      file: 'requests/me.http',
      lines: ['### whoami', 'GET https://api.example.com/me', `Authorization: Bearer ${V}`],
    }),
  },
  {
    id: 'http-basic',
    encode: (v) => b64(`admin:${v}`),
    make: () => ({
      file: 'requests/admin.rest',
      lines: ['GET https://admin.example.com/', `Authorization: Basic ${V}`],
    }),
  },
  {
    id: 'http-json-body',
    make: () => ({
      file: 'requests/login.http',
      lines: [
        'POST https://api.example.com/login',
        'Content-Type: application/json',
        '',
        `{"username": "admin", "password": "${V}"}`,
      ],
    }),
  },
  {
    id: 'http-form-body',
    forbid: '&=%+',
    make: () => ({
      file: 'requests/token.http',
      lines: [
        'POST https://auth.example.com/oauth/token',
        'Content-Type: application/x-www-form-urlencoded',
        '',
        `grant_type=client_credentials&client_id=reports&client_secret=${V}`,
      ],
    }),
  },
  // code
  {
    id: 'python-constant',
    make: (g) => ({ file: 'app/config.py', lines: ['import os', '', `${nm(g)} = "${V}"`] }),
  },
  {
    id: 'python-kwarg',
    make: () => ({
      file: 'app/db.py',
      lines: ['import psycopg', '', `conn = psycopg.connect(host="db", user="app", password="${V}")`],
    }),
  },
  {
    id: 'python-dict',
    make: (g) => ({
      file: 'app/clients.py',
      lines: ['CONFIG = {', '    "url": "https://api.example.com",', `    "${snake(nm(g))}": "${V}",`, '}'],
    }),
  },
  {
    id: 'python-class-attr',
    make: (g) => ({
      file: 'app/settings.py',
      lines: ['class Settings:', '    debug = False', `    ${snake(nm(g))} = '${V}'`],
    }),
  },
  {
    id: 'python-requests-auth-tuple',
    make: () => ({
      file: 'jobs/export.py',
      lines: ['import requests', '', `r = requests.get(URL, auth=("admin", "${V}"))`],
    }),
  },
  {
    id: 'python-bearer-fstring',
    forbid: '{}',
    make: () => ({ file: 'jobs/sync.py', lines: [`HEADERS = {"Authorization": f"Bearer ${V}"}`] }),
  },
  {
    id: 'js-const',
    make: (g) => ({
      file: 'src/config.js',
      lines: [`const ${camel(nm(g))} = "${V}";`, 'module.exports = {};'],
    }),
  },
  {
    id: 'js-object-property',
    make: (g) => ({
      file: 'src/clients/mail.js',
      lines: ['export default {', "  host: 'smtp.example.com',", `  ${camel(nm(g))}: '${V}',`, '};'],
    }),
  },
  {
    id: 'js-process-env-assign',
    make: (g) => ({ file: 'test/setup.js', lines: [`process.env.${nm(g)} = '${V}';`] }),
  },
  {
    id: 'js-fetch-header',
    make: () => ({
      file: 'src/api.js',
      lines: ['const res = await fetch(url, {', `  headers: { 'X-API-Key': '${V}' },`, '});'],
    }),
  },
  {
    id: 'ts-typed-const',
    make: (g) => ({
      file: 'src/db.ts',
      lines: [`const ${camel(nm(g))}: string = "${V}";`, 'export default {};'],
    }),
  },
  {
    id: 'ts-class-field',
    make: (g) => ({
      file: 'src/services/client.ts',
      lines: ['export class Client {', `  private readonly ${camel(nm(g))}: string = '${V}';`, '}'],
    }),
  },
  {
    id: 'go-var-typed',
    make: (g) => ({
      file: 'internal/db/db.go',
      lines: ['package db', '', `var ${camel(nm(g))} string = "${V}"`],
    }),
  },
  {
    id: 'go-short-decl',
    make: (g) => ({
      file: 'cmd/app/main.go',
      lines: ['func main() {', `\t${camel(nm(g))} := "${V}"`, '\trun()', '}'],
    }),
  },
  {
    id: 'go-struct-field',
    make: () => ({
      file: 'internal/mail/mail.go',
      lines: ['var cfg = Config{', '\tHost:     "smtp.example.com",', `\tPassword: "${V}",`, '}'],
    }),
  },
  {
    id: 'go-header-set',
    make: () => ({
      file: 'pkg/client/client.go',
      lines: [`\treq.Header.Set("Authorization", "Bearer ${V}")`],
    }),
  },
  {
    id: 'rust-pub-const',
    make: (g) => ({ file: 'src/secrets.rs', lines: [`pub const ${nm(g)}: &str = "${V}";`] }),
  },
  {
    id: 'rust-let-string-from',
    make: (g) => ({
      file: 'src/main.rs',
      lines: ['fn main() {', `    let ${snake(nm(g))} = String::from("${V}");`, '}'],
    }),
  },
  {
    id: 'java-static-final',
    make: (g) => ({
      file: 'src/main/java/Db.java',
      lines: ['class Db {', `    private static final String ${nm(g)} = "${V}";`, '}'],
    }),
  },
  {
    id: 'java-setter-call',
    make: () => ({
      file: 'src/main/java/DataSourceConfig.java',
      lines: ['    ds.setUsername("app");', `    ds.setPassword("${V}");`],
    }),
  },
  {
    id: 'java-props-put',
    make: () => ({
      file: 'src/main/java/Mail.java',
      lines: [`    props.put("mail.smtp.password", "${V}");`],
    }),
  },
  {
    id: 'java-credentials-ctor',
    make: () => ({
      file: 'src/main/java/Http.java',
      lines: [`    var creds = new UsernamePasswordCredentials("admin", "${V}".toCharArray());`],
    }),
  },
  {
    id: 'kotlin-val-typed',
    forbid: '$',
    make: () => ({
      file: 'app/src/main/kotlin/Config.kt',
      lines: ['object Config {', `    val password: String = "${V}"`, '}'],
    }),
  },
  {
    id: 'kotlin-const-val',
    forbid: '$',
    make: (g) => ({ file: 'app/src/main/kotlin/Keys.kt', lines: [`const val ${nm(g)} = "${V}"`] }),
  },
  {
    id: 'csharp-const',
    make: (g) => ({
      file: 'src/Api/Settings.cs',
      lines: [
        'public static class Settings',
        '{',
        `    private const string ${pascal(nm(g))} = "${V}";`,
        '}',
      ],
    }),
  },
  {
    id: 'csharp-property-init',
    make: (g) => ({
      file: 'src/Api/Options.cs',
      lines: [`    public string ${pascal(nm(g))} { get; set; } = "${V}";`],
    }),
  },
  {
    id: 'php-variable',
    make: () => ({
      file: 'public/db.php',
      lines: ['<?php', `$password = '${V}';`, '$pdo = new PDO($dsn, "app", $password);'],
    }),
  },
  {
    id: 'php-define',
    make: () => ({
      file: 'wp-config.php',
      lines: ['<?php', "define('DB_USER', 'wp');", `define('DB_PASSWORD', '${V}');`],
    }),
  },
  {
    id: 'php-array',
    make: () => ({
      file: 'config/services.php',
      lines: ["    'stripe' => [", `        'secret' => '${V}',`, '    ],'],
    }),
  },
  {
    id: 'ruby-constant',
    make: (g) => ({ file: 'config/initializers/api.rb', lines: [`${nm(g)} = '${V}'`] }),
  },
  {
    id: 'ruby-hash-symbol',
    make: () => ({
      file: 'config/database.rb',
      lines: ['DB = Sequel.connect(', "  adapter: 'postgres',", `  password: '${V}',`, ')'],
    }),
  },
  { id: 'swift-let', make: (g) => ({ file: 'App/Config.swift', lines: [`let ${camel(nm(g))} = "${V}"`] }) },
  {
    id: 'swift-static-typed',
    make: (g) => ({
      file: 'App/Keys.swift',
      lines: ['enum Keys {', `    static let ${camel(nm(g))}: String = "${V}"`, '}'],
    }),
  },
  {
    id: 'scala-val',
    forbid: '$',
    make: (g) => ({
      file: 'src/main/scala/Config.scala',
      lines: ['object Config {', `  val ${camel(nm(g))} = "${V}"`, '}'],
    }),
  },
  {
    id: 'c-define',
    make: (g) => ({ file: 'src/config.h', lines: ['#pragma once', `#define ${nm(g)} "${V}"`] }),
  },
  {
    id: 'cpp-constexpr',
    make: (g) => ({ file: 'src/keys.hpp', lines: [`constexpr const char* k${pascal(nm(g))} = "${V}";`] }),
  },
  {
    id: 'c-char-array',
    make: () => ({
      file: 'firmware/wifi.c',
      lines: ['static const char wifi_ssid[] = "office";', `static const char wifi_password[] = "${V}";`],
    }),
  },
  {
    id: 'dart-const',
    make: (g) => ({ file: 'lib/config.dart', lines: [`const String ${camel(nm(g))} = '${V}';`] }),
  },
  { id: 'lua-local', make: (g) => ({ file: 'conf/init.lua', lines: [`local ${snake(nm(g))} = "${V}"`] }) },
  {
    id: 'perl-my',
    forbid: '$@',
    make: () => ({ file: 'bin/report.pl', lines: [`my $password = '${V}';`] }),
  },
  {
    id: 'powershell-securestring',
    forbid: '$`',
    make: () => ({
      file: 'deploy/login.ps1',
      lines: [`$pw = ConvertTo-SecureString "${V}" -AsPlainText -Force`],
    }),
  },
  {
    id: 'sql-create-user',
    make: () => ({
      file: 'db/init.sql',
      lines: ['CREATE DATABASE app;', `CREATE USER app WITH PASSWORD '${V}';`],
    }),
  },
  {
    id: 'sql-identified-by',
    make: () => ({ file: 'db/grants.sql', lines: [`ALTER USER 'report'@'%' IDENTIFIED BY '${V}';`] }),
  },
  {
    id: 'ansible-var',
    forbid: '#:{}[],&*!|>%@',
    make: () => ({ file: 'group_vars/db.yml', lines: ['postgres_user: app', `postgres_password: ${V}`] }),
  },
  {
    id: 'redis-conf',
    forbid: '#',
    make: () => ({ file: 'redis/redis.conf', lines: ['bind 0.0.0.0', `requirepass ${V}`] }),
  },
  {
    id: 'libpq-keyword-dsn',
    forbid: '=',
    make: (g) => ({
      file: 'app/dsn.txt',
      lines: [`host=${host(g)} port=5432 user=app password=${V} dbname=app`],
    }),
  },
  {
    id: 'odbc-string',
    forbid: ';{}=',
    make: () => ({
      file: 'etl/conn.cfg',
      lines: [`Driver={ODBC Driver 18 for SQL Server};Server=db;Uid=sa;Pwd=${V};`],
    }),
  },
  {
    id: 'npmrc-password-base64',
    encode: (v) => b64(v),
    make: () => ({
      file: '.npmrc',
      lines: ['//npm.example.com/:username=ci', `//npm.example.com/:_password=${V}`],
    }),
  },
  {
    id: 'docker-config-auth',
    encode: (v) => b64(`ci:${v}`),
    make: () => ({
      file: '.docker/config.json',
      lines: [
        '{',
        '  "auths": {',
        '    "registry.example.com": {',
        `      "auth": "${V}"`,
        '    }',
        '  }',
        '}',
      ],
    }),
  },
  {
    id: 'pypirc',
    make: () => ({
      file: '.pypirc',
      lines: ['[internal]', 'repository = https://pypi.example.com/', 'username = ci', `password = ${V}`],
    }),
  },
  {
    id: 'git-credentials',
    forbid: URL_UNSAFE,
    make: (g) => ({ file: '.git-credentials', lines: [`https://${user(g)}:${V}@git.example.com`] }),
  },
  {
    id: 'wp-salt-define',
    make: () => ({ file: 'wp-config.php', lines: [`define('AUTH_KEY',         '${V}');`] }),
  },
  {
    id: 'django-settings-secret-key',
    make: () => ({ file: 'mysite/settings.py', lines: ['DEBUG = False', `SECRET_KEY = '${V}'`] }),
  },
  {
    id: 'rails-credentials-yaml',
    forbid: '#:{}[],&*!|>%@',
    make: () => ({ file: 'config/credentials.yml', lines: ['production:', `  secret_key_base: ${V}`] }),
  },
  {
    id: 'yaml-single-quoted',
    make: () => ({ file: 'config/mail.yml', lines: ['smtp:', "  user: 'mailer'", `  password: '${V}'`] }),
  },
  {
    id: 'yaml-block-scalar',
    forbid: '#',
    make: () => ({
      file: 'config/keys.yml',
      lines: ['webhook:', '  secret: |', `    ${V}`, '  url: https://hooks.example.com'],
    }),
  },
  {
    id: 'yaml-name-value-list',
    make: (g) => ({ file: 'service.yaml', lines: ['env:', `  - key: ${nm(g)}`, `    value: "${V}"`] }),
  },
  {
    id: 'csv-credentials',
    forbid: ',',
    make: (g) => ({
      file: 'ops/accounts.csv',
      lines: ['service,username,password', `${svc(g)},${user(g)},${V}`],
    }),
  },
  {
    id: 'log-line-password',
    make: () => ({
      file: 'logs/app.log',
      lines: [`2024-02-11 10:00:01 DEBUG connecting as app with password=${V}`],
    }),
  },
  {
    id: 'comment-password',
    make: () => ({
      file: 'src/db.py',
      lines: [`# password: ${V} (temporary, remove)`, 'conn = connect()'],
    }),
  },
  {
    id: 'systemd-environment',
    make: (g) => ({
      file: 'deploy/app.service',
      lines: ['[Service]', `Environment="${nm(g)}=${V}"`, 'ExecStart=/usr/bin/app'],
    }),
  },
  {
    id: 'supervisord-environment',
    forbid: ',%',
    make: (g) => ({
      file: 'deploy/supervisord.conf',
      lines: ['[program:worker]', `environment=${nm(g)}="${V}"`],
    }),
  },
  {
    id: 'crontab-inline-env',
    forbid: SH_META + '%',
    make: (g) => ({ file: 'deploy/crontab', lines: [`0 * * * * ${nm(g)}=${V} /usr/local/bin/sync`] }),
  },
  // command lines
  {
    id: 'cmd-mysql-p-attached',
    forbid: SH_META,
    make: () => ({ file: 'scripts/dump.sh', lines: [`mysql -u root -p${V} app < schema.sql`] }),
  },
  {
    id: 'cmd-mysql-password-equals',
    forbid: SH_META,
    make: () => ({ file: 'scripts/migrate.sh', lines: [`mysql --user=app --password=${V} -h db app`] }),
  },
  {
    id: 'cmd-mysqldump-p-quoted',
    make: () => ({
      file: 'scripts/backup.sh',
      lines: [`mysqldump -u backup -p'${V}' --all-databases > all.sql`],
    }),
  },
  {
    id: 'cmd-sshpass',
    make: () => ({
      file: 'scripts/push.sh',
      lines: [`sshpass -p '${V}' ssh deploy@10.0.0.5 'sudo systemctl restart app'`],
    }),
  },
  {
    id: 'cmd-docker-login-p',
    forbid: SH_META,
    make: () => ({
      file: '.gitlab-ci.yml',
      lines: ['build:', '  script:', `    - docker login -u ci -p ${V} registry.example.com`],
    }),
  },
  {
    id: 'cmd-docker-login-password',
    forbid: SH_META,
    make: () => ({
      file: 'Makefile',
      lines: ['login:', `\tdocker login --username ci --password ${V} ghcr.io`],
    }),
  },
  {
    id: 'cmd-curl-u',
    make: () => ({
      file: 'scripts/api.sh',
      lines: [`curl -u 'admin:${V}' https://jenkins.example.com/api/json`],
    }),
  },
  {
    id: 'cmd-curl-user',
    forbid: SH_META,
    make: (g) => ({
      file: 'docs/api.md',
      lines: ['```sh', `curl --user ${user(g)}:${V} https://api.example.com/v1/items`, '```'],
    }),
  },
  {
    id: 'cmd-pgpassword-env',
    forbid: SH_META,
    make: () => ({
      file: 'scripts/psql.sh',
      lines: [`PGPASSWORD=${V} psql -h db -U app -d app -c 'select 1'`],
    }),
  },
  {
    id: 'cmd-psql-uri',
    forbid: URL_UNSAFE,
    make: () => ({
      file: 'scripts/check.sh',
      lines: [`psql "postgresql://app:${V}@db:5432/app" -c 'select 1'`],
    }),
  },
  {
    id: 'cmd-redis-cli-a',
    forbid: SH_META,
    make: () => ({ file: 'scripts/flush.sh', lines: [`redis-cli -h cache -a ${V} FLUSHDB`] }),
  },
  {
    id: 'cmd-mongosh-password',
    forbid: SH_META,
    make: () => ({
      file: 'scripts/mongo.sh',
      lines: [`mongosh --host mongo --username admin --password ${V} --authenticationDatabase admin`],
    }),
  },
  {
    id: 'cmd-sqlcmd-P',
    forbid: SH_META,
    make: () => ({ file: 'scripts/mssql.sh', lines: [`sqlcmd -S db -U sa -P ${V} -Q "SELECT 1"`] }),
  },
  {
    id: 'cmd-openssl-passin',
    forbid: SH_META,
    make: () => ({
      file: 'scripts/certs.sh',
      lines: [`openssl pkcs12 -export -in c.pem -inkey k.pem -out c.p12 -passout pass:${V}`],
    }),
  },
  {
    id: 'cmd-az-login-p',
    forbid: SH_META,
    make: (g) => ({
      file: 'ci/azure.sh',
      lines: [`az login --service-principal -u ${g.uuid()} -p ${V} --tenant ${g.uuid()}`],
    }),
  },
  {
    id: 'cmd-kubectl-from-literal',
    forbid: SH_META + '=',
    make: () => ({
      file: 'scripts/k8s.sh',
      lines: [`kubectl create secret generic db --from-literal=password=${V}`],
    }),
  },
  {
    id: 'cmd-helm-set',
    forbid: SH_META + '=,',
    make: () => ({
      file: 'scripts/install.sh',
      lines: [`helm upgrade --install app ./chart --set postgresql.auth.password=${V}`],
    }),
  },
  {
    id: 'cmd-wget-password',
    forbid: SH_META,
    make: () => ({
      file: 'scripts/fetch.sh',
      lines: [`wget --user=ci --password=${V} https://files.example.com/build.tar.gz`],
    }),
  },
  {
    id: 'cmd-smbclient-percent',
    forbid: SH_META + '%',
    make: () => ({ file: 'scripts/share.sh', lines: [`smbclient //fs/share -U backup%${V} -c 'ls'`] }),
  },
  {
    id: 'cmd-ldapsearch-w',
    forbid: SH_META,
    make: () => ({
      file: 'scripts/ldap.sh',
      lines: [`ldapsearch -x -D "cn=admin,dc=example,dc=com" -w ${V} -b "dc=example,dc=com"`],
    }),
  },
  {
    id: 'cmd-htpasswd-b',
    forbid: SH_META,
    make: () => ({ file: 'scripts/users.sh', lines: [`htpasswd -b -c /etc/nginx/.htpasswd admin ${V}`] }),
  },
  {
    id: 'cmd-echo-password-stdin',
    make: () => ({
      file: 'ci/login.sh',
      lines: [`echo '${V}' | docker login -u ci --password-stdin registry.example.com`],
    }),
  },
  {
    id: 'cmd-aws-configure-set',
    forbid: SH_META,
    make: () => ({
      file: 'ci/aws.sh',
      lines: [`aws configure set aws_secret_access_key ${V} --profile ci`],
    }),
  },
  {
    id: 'cmd-heroku-config-set',
    forbid: SH_META + '=',
    make: (g) => ({ file: 'scripts/heroku.sh', lines: [`heroku config:set ${nm(g)}=${V} -a acme-prod`] }),
  },
  {
    id: 'cmd-twine-upload-p',
    forbid: SH_META,
    make: () => ({ file: 'scripts/release.sh', lines: [`twine upload -u __token__ -p ${V} dist/*`] }),
  },
  // URL credentials
  {
    id: 'url-postgres',
    forbid: URL_UNSAFE,
    make: (g) => ({ file: '.env', lines: [`DATABASE_URL=postgres://app:${V}@${host(g)}:5432/app`] }),
  },
  {
    id: 'url-postgresql-driver',
    forbid: URL_UNSAFE,
    make: () => ({
      file: 'alembic.ini',
      lines: ['[alembic]', `sqlalchemy.url = postgresql+psycopg2://app:${V}@db/app`],
    }),
  },
  {
    id: 'url-mysql',
    forbid: URL_UNSAFE,
    make: (g) => ({
      file: 'config/database.yml',
      lines: ['production:', `  url: mysql2://app:${V}@${host(g)}/app`],
    }),
  },
  {
    id: 'url-mongodb-srv',
    forbid: URL_UNSAFE,
    make: () => ({
      file: 'src/db.js',
      lines: [`const uri = 'mongodb+srv://app:${V}@cluster0.ab12c.mongodb.net/app?retryWrites=true';`],
    }),
  },
  {
    id: 'url-redis-no-user',
    forbid: URL_UNSAFE,
    make: () => ({ file: 'config/cache.py', lines: [`CACHE_URL = "redis://:${V}@cache:6379/0"`] }),
  },
  {
    id: 'url-amqp',
    forbid: URL_UNSAFE,
    make: () => ({ file: 'config/queue.toml', lines: [`broker = "amqp://worker:${V}@rabbitmq:5672/"`] }),
  },
  {
    id: 'url-smtp',
    forbid: URL_UNSAFE,
    make: () => ({
      file: 'config/mail.env',
      lines: [`MAILER_DSN=smtp://mailer:${V}@smtp.example.com:587`],
    }),
  },
  {
    id: 'url-jdbc-query-password',
    forbid: URL_UNSAFE,
    make: () => ({
      file: 'etl/job.conf',
      lines: [`url = "jdbc:postgresql://db:5432/app?user=etl&password=${V}"`],
    }),
  },
  {
    id: 'url-https-userinfo',
    forbid: URL_UNSAFE,
    make: () => ({
      file: 'requirements.txt',
      lines: ['requests==2.32.3', `--extra-index-url https://ci:${V}@pypi.example.com/simple`],
    }),
  },
  {
    id: 'url-http-proxy',
    forbid: URL_UNSAFE,
    make: (g) => ({
      file: '/etc/environment',
      lines: [`HTTPS_PROXY=http://${user(g)}:${V}@proxy.corp:3128`],
    }),
  },
  {
    id: 'url-ftp',
    forbid: URL_UNSAFE,
    make: () => ({
      file: 'scripts/upload.py',
      lines: [`FTP_URL = "ftp://uploader:${V}@ftp.example.com/incoming"`],
    }),
  },
];

// ---------------------------------------------------------------------------------------------------------------------
// Look-alikes: must come back unchanged

interface Look {
  cat: string;
  place: string;
  doc: Doc;
  value: string;
}

function lookalikes(g: Gen): Look[] {
  const out: Look[] = [];
  const add = (cat: string, place: string, file: string, lines: string[], value: string) =>
    out.push({ cat, place, doc: { file, lines }, value });
  const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

  // settings that name passwords and tokens but hold no secret
  for (const algo of ['argon2id', 'bcrypt', 'scrypt', 'pbkdf2_sha256']) {
    add(
      'hash-algorithm',
      'toml',
      'config/auth.toml',
      ['[auth]', `password_hash_algorithm = "${V}"`, 'session_ttl = "12h"'],
      algo,
    );
    add('hash-algorithm', 'yaml', 'config/security.yml', ['security:', `  password_hasher: ${V}`], algo);
  }
  add('hash-algorithm', 'env', '.env', ['APP_ENV=production', `PASSWORD_HASH_ALGO=${V}`], 'argon2id');
  add(
    'hash-algorithm',
    'ini',
    'dovecot/auth.conf',
    ['[passdb]', `default_pass_scheme = ${V}`],
    'SHA512-CRYPT',
  );
  add(
    'hash-algorithm',
    'python',
    'mysite/settings.py',
    ['PASSWORD_HASHERS = [', `    "${V}",`, ']'],
    'django.contrib.auth.hashers.Argon2PasswordHasher',
  );

  add(
    'policy-regex',
    'ts',
    'src/validation.ts',
    [`export const PASSWORD_PATTERN = ${V};`],
    String.raw`/^(?=.*[a-z])(?=.*[A-Z])(?=.*\d)(?=.*[^\w\s]).{12,128}$/`,
  );
  add(
    'policy-regex',
    'python',
    'app/validators.py',
    ['import re', '', `PASSWORD_RE = re.compile(r"${V}")`],
    String.raw`^(?=.*\d)(?=.*[A-Z])(?=.*[a-z]).{10,}$`,
  );
  add(
    'policy-regex',
    'java',
    'src/main/java/Policy.java',
    [`    private static final String PASSWORD_REGEX = "${V}";`],
    '^(?=.*[0-9])(?=.*[a-z])(?=.*[A-Z]).{8,64}$',
  );
  add(
    'policy-regex',
    'yaml',
    'config/policy.yml',
    ['password:', `  regex: '${V}'`, '  min_length: 12'],
    '^[A-Za-z0-9!@#$%^&*]{12,}$',
  );
  add(
    'policy-regex',
    'go',
    'internal/auth/policy.go',
    [`var passwordRe = regexp.MustCompile(\`${V}\`)`],
    String.raw`^[\x21-\x7e]{12,72}$`,
  );
  add(
    'policy-regex',
    'json-schema',
    'schema/user.json',
    [
      '{',
      '  "properties": {',
      '    "password": {',
      '      "type": "string",',
      `      "pattern": "${V}"`,
      '    }',
      '  }',
      '}',
    ],
    '^(?=.*[A-Z])(?=.*[0-9]).{8,}$',
  );

  const numeric: [string, string, string[], string][] = [
    ['toml', 'config/auth.toml', [`password_min_length = ${V}`], '12'],
    ['env', '.env', [`PASSWORD_MAX_AGE_DAYS=${V}`], '90'],
    ['yaml', 'config/auth.yml', [`minPasswordLength: ${V}`], '10'],
    ['yaml', 'config/jwt.yml', [`token_ttl_seconds: ${V}`], '3600'],
    ['python', 'llm/config.py', [`max_tokens = ${V}`], '4096'],
    ['python', 'app/core/config.py', [`ACCESS_TOKEN_EXPIRE_MINUTES = ${V}`], '30'],
    ['hcl', 'infra/iam.tf', [`  api_key_rotation_days = ${V}`], '90'],
    ['yaml', 'vault/policy.yml', [`secret_rotation_interval: ${V}`], '720h'],
    ['python', 'mysite/settings.py', [`PASSWORD_RESET_TIMEOUT = ${V}`], '259200'],
    ['json', 'config/limits.json', ['{', `  "tokenBudget": ${V},`, '  "keyLength": 32', '}'], '128000'],
  ];
  for (const [place, file, lines, v] of numeric) add('numeric-setting', place, file, lines, v);

  add('token-type', 'python', 'app/oauth.py', [`token_type = "${V}"`], 'bearer');
  add(
    'token-type',
    'json',
    'tests/fixtures/oauth_response.json',
    ['{', `  "token_type": "${V}",`, '  "expires_in": 3600,', '  "scope": "read write"', '}'],
    'Bearer',
  );
  add('token-type', 'yaml', 'config/client.yml', [`auth_scheme: ${V}`], 'Bearer');
  add('token-type', 'env', '.env', [`TOKEN_TYPE=${V}`], 'access');
  add('token-type', 'ts', 'src/auth.ts', [`const tokenType = '${V}' as const;`], 'JWT');
  add('token-type', 'yaml', 'config/oidc.yml', [`token_endpoint_auth_method: ${V}`], 'client_secret_post');
  add(
    'token-type',
    'json',
    'config/grant.json',
    ['{', `  "grant_type": "${V}",`, '  "audience": "https://api.example.com"', '}'],
    'client_credentials',
  );

  // reading a secret from elsewhere
  const lookups: [string, string, string[], string][] = [
    ['python', 'app/config.py', [`API_KEY = ${V}`], 'os.environ["API_KEY"]'],
    ['python', 'app/db.py', [`password = ${V}`], 'os.getenv("DB_PASSWORD", "")'],
    ['js', 'src/config.js', [`const token = ${V};`], 'process.env.TOKEN'],
    ['ts', 'src/env.ts', [`export const apiSecret: string = ${V} ?? '';`], 'process.env.API_SECRET'],
    ['go', 'cmd/app/main.go', [`\tsecretKey := ${V}`], 'os.Getenv("SECRET_KEY")'],
    ['rust', 'src/main.rs', [`    let api_token = ${V};`], 'std::env::var("API_TOKEN")?'],
    ['java', 'src/main/java/App.java', [`        String password = ${V};`], 'System.getenv("DB_PASSWORD")'],
    ['ruby', 'config/initializers/stripe.rb', [`Stripe.api_key = ${V}`], "ENV.fetch('STRIPE_SECRET_KEY')"],
    ['php', 'config/database.php', [`    'password' => ${V},`], "env('DB_PASSWORD', '')"],
    [
      'csharp',
      'src/Program.cs',
      [`var clientSecret = ${V};`],
      'Environment.GetEnvironmentVariable("CLIENT_SECRET")',
    ],
    ['shell', 'scripts/run.sh', [`PGPASSWORD=${V} psql -h db -U app`], '"$DB_PASSWORD"'],
    ['kotlin', 'src/main/kotlin/App.kt', [`val token: String = ${V}`], 'System.getenv("AUTH_TOKEN") ?: ""'],
    ['swift', 'App/Config.swift', [`let apiKey = ${V}`], 'ProcessInfo.processInfo.environment["API_KEY"]'],
    [
      'yaml',
      'docker-compose.yml',
      ['    environment:', `      POSTGRES_PASSWORD: ${V}`],
      `\${POSTGRES_PASSWORD}`,
    ],
    ['env', '.env.example', [`DATABASE_URL=${V}`], `postgres://app:\${DB_PASSWORD}@db:5432/app`],
  ];
  for (const [place, file, lines, v] of lookups) add('env-lookup', place, file, lines, v);

  const placeholders = [
    '<your-token>',
    `\${SECRET}`,
    'changeme',
    'xxxxxxxx',
    'your_api_key_here',
    'REPLACE_ME',
    '<password>',
    '{{ db_password }}',
    '********',
    'TODO',
    'dummy',
    'YOUR-CLIENT-SECRET',
    'ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
    'sk_live_xxxxxxxxxxxxxxxxxxxxxxxx',
    'AKIAXXXXXXXXXXXXXXXX',
    'hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
    '<insert key>',
    '$API_KEY',
    'example',
    'test',
    'null',
    'your-secret-here',
    'sk-...',
    '%(password)s',
  ];
  const phPlaces: [string, () => Doc][] = [
    ['env', () => ({ file: '.env.example', lines: ['# copy to .env', `API_KEY=${V}`] })],
    ['yaml', () => ({ file: 'config/example.yml', lines: ['credentials:', `  token: "${V}"`] })],
    ['json', () => ({ file: 'config/sample.json', lines: ['{', `  "clientSecret": "${V}"`, '}'] })],
    [
      'markdown',
      () => ({ file: 'README.md', lines: ['Set your key:', '', '```sh', `export API_TOKEN="${V}"`, '```'] }),
    ],
    ['python', () => ({ file: 'examples/quickstart.py', lines: [`client = Client(api_key="${V}")`] })],
  ];
  placeholders.forEach((p, i) => {
    const [place, mk] = phPlaces[i % phPlaces.length]!;
    const d = mk();
    add('placeholder', place, d.file, d.lines, p);
    const [place2, mk2] = phPlaces[(i + 2) % phPlaces.length]!;
    const d2 = mk2();
    add('placeholder', place2, d2.file, d2.lines, p);
  });

  add(
    'aws-documented-example',
    'ini',
    'docs/aws/credentials.example',
    [
      '[default]',
      `aws_access_key_id = ${V}`,
      'aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    ],
    'AKIAIOSFODNN7EXAMPLE',
  );
  add(
    'aws-documented-example',
    'markdown',
    'docs/setup.md',
    ['```', '$ aws configure', `AWS Access Key ID [None]: ${V}`, '```'],
    'AKIAIOSFODNN7EXAMPLE',
  );
  add(
    'aws-documented-example',
    'python',
    'tests/test_s3.py',
    [`FAKE_SECRET = "${V}"`],
    'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  );
  add(
    'aws-documented-example',
    'env',
    '.env.sample',
    [`AWS_SECRET_ACCESS_KEY=${V}`],
    'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  );
  add(
    'aws-documented-example',
    'yaml',
    'localstack/config.yml',
    ['aws:', `  access_key_id: ${V}`],
    'AKIAI44QH8DHBEXAMPLE',
  );

  // identifiers and hashes under non-secret names
  const uuidNames: [string, string, string[]][] = [
    ['json', 'fixtures/request.json', ['{', `  "request_id": "${V}",`, '  "status": "ok"', '}']],
    ['hcl', 'infra/azure.tf', ['provider "azurerm" {', `  tenant_id       = "${V}"`, '  features {}', '}']],
    ['hcl', 'infra/azure.tf', [`  subscription_id = "${V}"`]],
    ['yaml', 'config/oidc.yml', [`client_id: ${V}`]],
    ['ts', 'src/fixtures.ts', [`export const correlationId = '${V}';`]],
    ['python', 'tests/test_orders.py', [`ORDER_ID = uuid.UUID("${V}")`]],
    ['sql', 'db/seed.sql', [`INSERT INTO tenants (id, name) VALUES ('${V}', 'acme');`]],
    ['csharp', 'src/Guids.cs', [`    public static readonly Guid PluginId = new Guid("${V}");`]],
    ['xml', 'App.csproj', [`    <ProjectGuid>{${V}}</ProjectGuid>`]],
    ['json', '.vscode/settings.json', ['{', `  "workspaceId": "${V}"`, '}']],
  ];
  for (const [place, file, lines] of uuidNames) add('uuid-id', place, file, lines, g.uuid());

  const shaPlaces: [string, string, string[]][] = [
    [
      'yaml',
      '.pre-commit-config.yaml',
      ['repos:', '  - repo: https://github.com/psf/black', `    rev: ${V}`],
    ],
    ['toml', 'Cargo.toml', [`serde = { git = "https://github.com/serde-rs/serde", rev = "${V}" }`]],
    ['shell', 'scripts/pin.sh', [`git checkout ${V}`]],
    [
      'json',
      'node_modules/left-pad/package.json',
      ['{', '  "name": "left-pad",', `  "gitHead": "${V}"`, '}'],
    ],
    ['env', '.env', [`GIT_SHA=${V}`]],
    ['dockerfile', 'Dockerfile', [`ARG GIT_COMMIT=${V}`]],
    ['yaml', '.github/workflows/ci.yml', ['    steps:', `      - uses: actions/checkout@${V} # v4.1.7`]],
    ['yaml', 'flux/source.yaml', ['spec:', '  ref:', `    commit: ${V}`]],
    ['text', 'CHANGELOG.md', [`- fix the retry loop (${V})`]],
    ['python', 'build/version.py', [`__commit__ = "${V}"`]],
  ];
  for (const [place, file, lines] of shaPlaces) add('git-sha', place, file, lines, g.hex(40));
  add(
    'git-sha',
    'go.mod',
    'go.mod',
    ['require (', `\tgithub.com/acme/lib ${V}`, ')'],
    `v0.0.0-20240301120000-${g.hex(12)}`,
  );

  const contentHashes: [string, string, string[], string][] = [
    [
      'package-lock',
      'package-lock.json',
      [
        '    "node_modules/ms": {',
        '      "version": "2.1.3",',
        '      "resolved": "https://registry.npmjs.org/ms/-/ms-2.1.3.tgz",',
        `      "integrity": "${V}"`,
        '    },',
      ],
      'sha512-' + b64(g.bytes(64)),
    ],
    [
      'yarn-lock',
      'yarn.lock',
      ['ms@^2.1.1:', '  version "2.1.3"', `  integrity ${V}`],
      'sha512-' + b64(g.bytes(64)),
    ],
    [
      'cargo-lock',
      'Cargo.lock',
      [
        '[[package]]',
        'name = "serde"',
        'version = "1.0.203"',
        'source = "registry+https://github.com/rust-lang/crates.io-index"',
        `checksum = "${V}"`,
      ],
      g.hex(64),
    ],
    ['go-sum', 'go.sum', [`golang.org/x/oauth2 v0.21.0 ${V}`], 'h1:' + b64(g.bytes(32))],
    [
      'poetry-lock',
      'poetry.lock',
      ['files = [', `    {file = "requests-2.32.3-py3-none-any.whl", hash = "${V}"},`, ']'],
      'sha256:' + g.hex(64),
    ],
    [
      'pipfile-lock',
      'Pipfile.lock',
      ['        "requests": {', '            "hashes": [', `                "${V}"`, '            ],'],
      'sha256:' + g.hex(64),
    ],
    ['docker-digest', 'k8s/deployment.yaml', [`        image: ghcr.io/acme/api@${V}`], 'sha256:' + g.hex(64)],
    [
      'terraform-lock',
      '.terraform.lock.hcl',
      ['  hashes = [', `    "${V}",`, '  ]'],
      'h1:' + b64(g.bytes(32)),
    ],
    ['terraform-lock-zh', '.terraform.lock.hcl', ['  hashes = [', `    "${V}",`, '  ]'], 'zh:' + g.hex(64)],
    ['sha256sums', 'SHA256SUMS', [`${V}  quarry-linux-x64.tar.gz`], g.hex(64)],
    [
      'homebrew',
      'Formula/quarry.rb',
      ['  url "https://example.com/quarry-1.2.0.tar.gz"', `  sha256 "${V}"`],
      g.hex(64),
    ],
    ['nix', 'flake.nix', [`    hash = "${V}";`], 'sha256-' + b64(g.bytes(32))],
    [
      'bazel',
      'WORKSPACE',
      ['http_archive(', '    name = "rules_go",', `    sha256 = "${V}",`, ')'],
      g.hex(64),
    ],
    [
      'sri-html',
      'public/index.html',
      [`<script src="https://cdn.example.com/lib.min.js" integrity="${V}" crossorigin="anonymous"></script>`],
      'sha384-' + b64(g.bytes(48)),
    ],
    [
      'gradle-verification',
      'gradle/verification-metadata.xml',
      [`   <sha256 value="${V}" origin="Generated by Gradle"/>`],
      g.hex(64),
    ],
    [
      'composer-lock',
      'composer.lock',
      [
        '            "dist": {',
        '                "type": "zip",',
        `                "shasum": "${V}"`,
        '            },',
      ],
      g.hex(40),
    ],
    [
      'pnpm-lock',
      'pnpm-lock.yaml',
      ['  /ms@2.1.3:', `    resolution: {integrity: ${V}}`],
      'sha512-' + b64(g.bytes(64)),
    ],
    ['gemfile-lock', 'Gemfile.lock', ['CHECKSUMS', `  rack (3.1.7) sha256=${V}`], g.hex(64)],
  ];
  for (const [place, file, lines, v] of contentHashes) add('content-hash', place, file, lines, v);

  const png = b64(Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), g.bytes(300)]));
  add(
    'base64-image',
    'css',
    'src/styles/icons.css',
    [`.icon-search { background-image: url("data:image/png;base64,${V}"); }`],
    png,
  );
  add(
    'base64-image',
    'html',
    'public/email.html',
    [`<img alt="logo" src="data:image/png;base64,${V}">`],
    b64(Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), g.bytes(420)])),
  );
  add(
    'base64-image',
    'markdown',
    'docs/diagram.md',
    [`![diagram](data:image/gif;base64,${V})`],
    b64(Buffer.concat([Buffer.from('GIF89a'), g.bytes(200)])),
  );
  add(
    'base64-image',
    'notebook-output',
    'notebooks/plot.ipynb',
    [
      '{',
      ' "cells": [{',
      '   "cell_type": "code",',
      '   "outputs": [{',
      '     "data": {',
      `      "image/png": "${V}",`,
      '      "text/plain": ["<Figure size 640x480>"]',
      '     },',
      '     "output_type": "display_data"',
      '   }],',
      '   "source": ["plt.plot(xs)"]',
      ' }]',
      '}',
    ],
    b64(Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), g.bytes(900)])),
  );
  add(
    'base64-image',
    'svg-css',
    'src/ui/check.scss',
    [`$check: url("data:image/svg+xml;base64,${V}");`],
    b64('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><path d="M2 8l4 4 8-8"/></svg>'),
  );
  add(
    'base64-image',
    'json',
    'manifest.json',
    ['{', `  "icon": "data:image/webp;base64,${V}"`, '}'],
    b64(Buffer.concat([Buffer.from('RIFF'), g.bytes(4), Buffer.from('WEBPVP8 '), g.bytes(240)])),
  );
  add(
    'base64-image',
    'font',
    'src/fonts.css',
    [`@font-face { font-family: "Icons"; src: url(data:font/woff2;base64,${V}) format("woff2"); }`],
    b64(Buffer.concat([Buffer.from('wOF2'), g.bytes(500)])),
  );

  for (let i = 0; i < 6; i++) {
    const c = () => '#' + g.hex(g.pick([3, 6, 8]));
    const forms: [string, string, string[]][] = [
      ['css', 'src/theme.css', [':root {', `  --brand-primary: ${V};`, '}']],
      ['scss', 'src/_vars.scss', [`$accent: ${V};`]],
      ['js', 'tailwind.config.js', ['      colors: {', `        brand: '${V}',`, '      },']],
      ['json', 'theme.json', ['{', `  "background": "${V}"`, '}']],
      ['xml', 'res/values/colors.xml', [`    <color name="colorPrimary">${V}</color>`]],
      ['ts', 'src/palette.ts', [`export const danger = '${V}';`]],
    ];
    const [place, file, lines] = forms[i]!;
    add('css-colour', place, file, lines, c());
  }

  const i18n: [string, string, string[], string][] = [
    ['json', 'locales/en.json', ['{', `  "password": "${V}",`, '  "username": "Username"', '}'], 'Password'],
    ['json', 'locales/fr.json', ['{', `  "password": "${V}"`, '}'], 'Mot de passe'],
    ['json', 'locales/en.json', ['{', `  "token_expired": "${V}"`, '}'], 'Your session token has expired'],
    ['yaml', 'config/locales/de.yml', ['de:', '  auth:', `    password: ${V}`], 'Passwort'],
    ['po', 'locale/es/LC_MESSAGES/django.po', ['msgid "Password"', `msgstr "${V}"`], 'Contraseña'],
    ['properties', 'src/main/resources/messages.properties', [`login.password=${V}`], 'Password'],
    [
      'ts',
      'src/i18n/en.ts',
      ['export default {', `  forgotPassword: '${V}',`, '};'],
      'Forgot your password?',
    ],
    ['arb', 'lib/l10n/app_en.arb', ['{', `  "apiKeyLabel": "${V}"`, '}'], 'API key'],
    ['json', 'locales/ja.json', ['{', `  "secret": "${V}"`, '}'], '秘密の質問'],
    [
      'xml',
      'res/values/strings.xml',
      [`    <string name="password_hint">${V}</string>`],
      'Enter your password',
    ],
  ];
  for (const [place, file, lines, v] of i18n) add('i18n-string', place, file, lines, v);

  const calls: [string, string, string[], string][] = [
    ['python', 'app/auth.py', [`password = ${V}`], 'get_password()'],
    ['python', 'app/auth.py', [`token = ${V}`], 'await fetch_token(user)'],
    ['python', 'app/vault.py', [`api_key = ${V}`], 'vault.read("secret/data/api")["data"]["key"]'],
    ['ts', 'src/auth.ts', [`const token = ${V};`], 'await getAccessToken(session)'],
    ['go', 'cmd/login/main.go', [`\tpassword, err := ${V}`], 'term.ReadPassword(int(os.Stdin.Fd()))'],
    ['swift', 'App/Auth.swift', [`let token = ${V}`], 'try keychain.get("api-token")'],
    [
      'java',
      'src/main/java/Auth.java',
      [`        char[] password = ${V};`],
      'console.readPassword("Password: ")',
    ],
    ['ruby', 'app/models/user.rb', [`    self.password_digest = ${V}`], 'BCrypt::Password.create(password)'],
    ['rust', 'src/auth.rs', [`    let secret = ${V};`], 'rpassword::prompt_password("Secret: ")?'],
    ['csharp', 'src/Auth.cs', [`var secret = ${V};`], 'await client.GetSecretAsync("db-password")'],
    ['js', 'src/session.js', [`const sessionSecret = ${V};`], "crypto.randomBytes(32).toString('hex')"],
    ['python', 'app/crypto.py', [`SECRET_KEY = ${V}`], 'secrets.token_urlsafe(32)'],
  ];
  for (const [place, file, lines, v] of calls) add('function-call', place, file, lines, v);

  const refs: [string, string, string[], string][] = [
    ['python', 'app/aws.py', [`secret_name = "${V}"`], 'prod/db'],
    [
      'k8s',
      'k8s/deployment.yaml',
      [
        '            - name: DB_PASSWORD',
        '              valueFrom:',
        '                secretKeyRef:',
        '                  name: db-credentials',
        `                  key: ${V}`,
      ],
      'password',
    ],
    [
      'github-actions',
      '.github/workflows/release.yml',
      ['    env:', `      NPM_TOKEN: ${V}`],
      `\${{ secrets.NPM_TOKEN }}`,
    ],
    [
      'helm',
      'charts/app/templates/secret.yaml',
      [`  password: ${V}`],
      '{{ .Values.db.password | b64enc | quote }}',
    ],
    ['terraform', 'infra/rds.tf', [`  password = ${V}`], 'var.db_password'],
    [
      'terraform',
      'infra/app.tf',
      [`  value = ${V}`],
      'data.aws_secretsmanager_secret_version.db.secret_string',
    ],
    [
      'shell',
      'scripts/secrets.sh',
      [`aws secretsmanager get-secret-value --secret-id ${V} --query SecretString`],
      'prod/api-key',
    ],
    ['azure-pipelines', 'azure-pipelines.yml', ['  variables:', `    dbPassword: ${V}`], '$(DB_PASSWORD)'],
    [
      'gitlab-ci',
      '.gitlab-ci.yml',
      [`    - docker login -u gitlab-ci-token -p ${V} $CI_REGISTRY`],
      '$CI_JOB_TOKEN',
    ],
    [
      'compose',
      'docker-compose.yml',
      ['    environment:', `      POSTGRES_PASSWORD_FILE: ${V}`],
      '/run/secrets/db_password',
    ],
    ['helm', 'charts/app/values.yaml', ['auth:', `  existingSecret: ${V}`], 'app-db-credentials'],
    ['ansible', 'roles/db/tasks/main.yml', [`    password: ${V}`], '"{{ vault_db_password }}"'],
    ['spring', 'src/main/resources/application.yml', [`    password: ${V}`], `\${DB_PASSWORD:}`],
    [
      'dotnet',
      'appsettings.json',
      ['{', `  "ConnectionStrings": { "Main": "${V}" }`, '}'],
      'Name=ConnectionStrings:Main',
    ],
  ];
  for (const [place, file, lines, v] of refs) add('secret-reference', place, file, lines, v);

  const idents = [
    'AbstractTokenAuthenticationFilterConfigurationBean',
    'passwordResetTokenExpiryInMinutesDefault',
    'SECRET_MANAGER_ROTATION_LAMBDA_FUNCTION_NAME',
    'TokenizerFastPreTrainedBertBaseUncasedLoader',
    'ApiKeyAuthenticationHandlerExtensionsTests',
    'handle_client_secret_rotation_failure_event',
  ];
  idents.forEach((v, i) => {
    const forms: [string, string, string[]][] = [
      ['java', 'src/main/java/Beans.java', [`    @Bean public ${V} filter() { return new ${V}(); }`]],
      ['ts', 'src/constants.ts', [`export const KEY = '${V}';`]],
      ['python', 'infra/names.py', [`FUNCTION = "${V}"`]],
    ];
    const [place, file, lines] = forms[i % forms.length]!;
    add('long-identifier', place, file, lines, v);
  });

  const versions: [string, string, string[], string][] = [
    [
      'toml',
      'pyproject.toml',
      ['[project]', 'name = "quarry-client"', `version = "${V}"`],
      '2.14.0-rc.3+build.8f2c1a9',
    ],
    ['json', 'package.json', ['  "devDependencies": {', `    "typescript": "${V}"`, '  }'], '^5.4.5'],
    ['dockerfile', 'Dockerfile', [`FROM ${V}`], 'node:20.11.1-bookworm-slim'],
    ['yaml', 'chart/Chart.yaml', [`appVersion: "${V}"`], '1.27.3-alpine3.19'],
    ['go', 'version.go', [`const Version = "${V}"`], 'v1.8.0-beta.2'],
    ['xml', 'pom.xml', [`    <version>${V}</version>`], '3.2.5.RELEASE'],
  ];
  for (const [place, file, lines, v] of versions) add('version-string', place, file, lines, v);

  const urls: [string, string, string[], string][] = [
    [
      'yaml',
      'config/oauth.yml',
      [`token_url: ${V}`],
      'https://auth.example.com/realms/app/protocol/openid-connect/token',
    ],
    ['env', '.env', [`DATABASE_URL=${V}`], 'postgres://db.internal:5432/app'],
    ['python', 'app/cache.py', [`REDIS_URL = "${V}"`], 'redis://cache:6379/0'],
    ['env', '.env', [`MONGO_URL=${V}`], 'mongodb://localhost:27017/test'],
    ['toml', 'config.toml', [`broker = "${V}"`], 'amqp://rabbitmq:5672/'],
    ['json', 'config/api.json', ['{', `  "apiBaseUrl": "${V}"`, '}'], 'https://api.example.com/v2/'],
    ['shell', 'scripts/clone.sh', [`git clone ${V}`], 'https://git@github.com/acme/quarry.git'],
    ['shell', 'scripts/clone.sh', [`git clone ${V}`], 'git@github.com:acme/quarry.git'],
    [
      'markdown',
      'docs/api.md',
      [`See ${V} for the token endpoint.`],
      'https://developer.example.com/docs/auth#tokens',
    ],
    [
      'yaml',
      'prometheus.yml',
      ['  - targets:', `      - ${V}`],
      'http://node-exporter:9100/metrics?collect[]=cpu',
    ],
  ];
  for (const [place, file, lines, v] of urls) add('url-without-credentials', place, file, lines, v);

  const paths: [string, string, string[], string][] = [
    ['nginx', 'nginx/ssl.conf', [`ssl_certificate_key ${V};`], '/etc/ssl/private/server.key'],
    ['yaml', 'config/ssh.yml', [`private_key_path: ${V}`], '~/.ssh/id_ed25519'],
    ['ini', 'config/aws.ini', [`shared_credentials_file = ${V}`], 'C:\\Users\\app\\.aws\\credentials'],
    ['python', 'app/keys.py', [`API_KEY_FILE = "${V}"`], 'secrets/api_key.txt'],
    [
      'compose',
      'docker-compose.yml',
      ['secrets:', '  db_password:', `    file: ${V}`],
      './secrets/db_password.txt',
    ],
    ['toml', 'config.toml', [`key_file = "${V}"`], 'certs/client.key'],
    ['env', '.env', [`GOOGLE_APPLICATION_CREDENTIALS=${V}`], '/var/run/secrets/gcp/service-account.json'],
    ['gitignore', '.gitignore', [V], '*.pem'],
  ];
  for (const [place, file, lines, v] of paths) add('file-path', place, file, lines, v);

  const ids: [string, string, string[], string][] = [
    [
      'json',
      'tests/fixtures/customer.json',
      ['{', `  "id": "${V}",`, '  "object": "customer"', '}'],
      'cus_' + g.s(AN, 14),
    ],
    ['python', 'tests/test_billing.py', [`PAYMENT_INTENT = "${V}"`], 'pi_3' + g.s(AN, 23)],
    ['ts', 'test/prices.test.ts', [`const priceId = '${V}';`], 'price_1' + g.s(AN, 23)],
    ['js', 'test/db.test.js', [`const objectId = '${V}';`], g.hex(24)],
    [
      'python',
      'tests/test_ulid.py',
      [`ORDER_ULID = "${V}"`],
      '01' + g.s('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 24),
    ],
    ['ts', 'test/ids.test.ts', [`const nanoid = '${V}';`], g.s(B64U, 21)],
    ['yaml', 'tests/trace.yml', [`trace_id: ${V}`, `span_id: ${g.hex(16)}`], g.hex(32)],
    ['json', 'fixtures/tweet.json', ['{', `  "id_str": "${V}"`, '}'], g.digits(19)],
    [
      'markdown',
      'docs/video.md',
      [`Watch https://www.youtube.com/watch?v=${V} for the demo.`],
      g.s(B64U, 11),
    ],
    ['yaml', 'config/drive.yml', [`folder_id: ${V}`], '1' + g.s(B64U, 32)],
    [
      'json',
      'fixtures/slack_event.json',
      ['{', `  "channel": "${V}",`, `  "user": "U${g.s(UD, 10)}"`, '}'],
      'C' + g.s(UD, 10),
    ],
    ['http', 'requests/cache.http', ['HTTP/1.1 200 OK', `ETag: ${V}`], `W/"${g.hex(32)}"`],
    [
      'json',
      'fixtures/page.json',
      ['{', `  "cursor": "${V}",`, '  "has_more": true', '}'],
      b64(JSON.stringify({ id: g.int(1000, 99999), ts: 1712345678 })),
    ],
    ['python', 'tests/test_build.py', [`BUILD_ID = "${V}"`], g.alnum(24)],
    ['ts', 'test/fixtures.ts', [`export const fixtureId = '${V}';`], g.alnum(32)],
    ['go', 'internal/store/store_test.go', [`\tsnapshotID := "${V}"`], g.s(LD, 26)],
    ['yaml', 'tests/s3.yml', [`version_id: ${V}`], g.s(B64U, 32)],
    ['json', 'fixtures/github_event.json', ['{', `  "node_id": "${V}"`, '}'], b64(`04:User${g.digits(8)}`)],
    ['python', 'tests/test_firebase.py', [`PUSH_ID = "${V}"`], '-N' + g.s(B64U, 18)],
    ['csv', 'fixtures/orders.csv', ['order_ref,amount', `${V},19.99`], 'ORD-' + g.s(UD, 16)],
  ];
  for (const [place, file, lines, v] of ids) add('fixture-id', place, file, lines, v);

  const rsaPub = b64(
    Buffer.concat([Buffer.from('000000077373682d727361000000030100010000010100', 'hex'), g.bytes(256)]),
  );
  const edPub = b64(
    Buffer.concat([Buffer.from('0000000b7373682d6564323535313900000020', 'hex'), g.bytes(32)]),
  );
  add('public-key', 'authorized_keys', '.ssh/authorized_keys', [V], `ssh-rsa ${rsaPub} deploy@ci`);
  add(
    'public-key',
    'terraform',
    'infra/keys.tf',
    ['resource "aws_key_pair" "deploy" {', `  public_key = "${V}"`, '}'],
    `ssh-ed25519 ${edPub} ops@laptop`,
  );
  add(
    'public-key',
    'known_hosts',
    '.ssh/known_hosts',
    [V],
    `github.com ssh-ed25519 ${b64(Buffer.concat([Buffer.from('0000000b7373682d6564323535313900000020', 'hex'), g.bytes(32)]))}`,
  );
  const pemPub = (label: string, n: number) =>
    [
      `-----BEGIN ${label}-----`,
      ...wrap(
        b64(
          Buffer.concat([Buffer.from('30820122300d06092a864886f70d01010105000382010f00', 'hex'), g.bytes(n)]),
        ),
        64,
      ),
      `-----END ${label}-----`,
    ].join('\n');
  add('public-key', 'pem', 'keys/jwt-public.pem', [V], pemPub('PUBLIC KEY', 270));
  add('public-key', 'pem', 'certs/ca.crt', [V], pemPub('CERTIFICATE', 900));
  add(
    'public-key',
    'pem',
    'keys/release.asc',
    [V],
    [
      '-----BEGIN PGP PUBLIC KEY BLOCK-----',
      '',
      ...wrap(b64(Buffer.concat([Buffer.from('99018d04', 'hex'), g.bytes(600)])), 64),
      `=${g.s(B64, 4)}`,
      '-----END PGP PUBLIC KEY BLOCK-----',
    ].join('\n'),
  );
  add(
    'public-key',
    'age-recipient',
    '.sops.yaml',
    ['creation_rules:', `  - age: ${V}`],
    'age1' + g.s(BECH32.toLowerCase(), 58),
  );
  add(
    'public-key',
    'wireguard',
    'wg0.conf',
    ['[Peer]', `PublicKey = ${V}`, 'AllowedIPs = 10.8.0.2/32'],
    b64(g.bytes(32)),
  );
  add(
    'public-key',
    'jwks',
    'public/.well-known/jwks.json',
    [
      '{"keys": [{',
      '  "kty": "RSA", "kid": "2024-05", "use": "sig", "alg": "RS256", "e": "AQAB",',
      `  "n": "${V}"`,
      '}]}',
    ],
    b64url(g.bytes(256)),
  );
  add(
    'public-key',
    'ssh-fingerprint',
    'docs/hosts.md',
    [`The host key fingerprint is ${V}.`],
    'SHA256:' + b64(g.bytes(32)).replace(/=+$/, ''),
  );

  const empties: [string, string, string[], string][] = [
    ['env', '.env.example', [`DB_PASSWORD=${V}`, 'API_KEY='], ''],
    ['yaml', 'config/default.yml', [`password: "${V}"`], ''],
    ['python', 'app/config.py', [`token = ${V}`], 'None'],
    ['json', 'config/default.json', ['{', `  "apiKey": ${V}`, '}'], 'null'],
    ['yaml', 'config/base.yml', [`secret: ${V}`], '~'],
    ['ts', 'src/state.ts', [`let accessToken: string | undefined = ${V};`], 'undefined'],
    ['go', 'config.go', [`var APIKey = ${V}`], '""'],
    ['ini', 'config.ini', ['[auth]', `password =${V}`], ''],
  ];
  for (const [place, file, lines, v] of empties) add('empty-or-null', place, file, lines, v);

  const types: [string, string, string[], string][] = [
    ['ts', 'src/types.ts', ['export interface Credentials {', `  password: ${V};`, '}'], 'string'],
    ['rust', 'src/config.rs', ['pub struct Config {', `    pub api_key: ${V},`, '}'], 'Option<String>'],
    ['java', 'src/main/java/User.java', [`    private ${V} password;`], 'String'],
    ['kotlin', 'src/main/kotlin/Session.kt', [`    var token: ${V} = null`], 'String?'],
    ['python', 'app/schemas.py', ['class Login(BaseModel):', `    password: ${V}`], 'SecretStr'],
    ['go', 'internal/config/config.go', [`\tClientSecret ${V} \`yaml:"client_secret"\``], 'string'],
    ['csharp', 'src/Models/Login.cs', [`    public ${V} Password { get; set; }`], 'string'],
    ['java', 'src/main/java/User.java', [`    @Column(name = "${V}")`], 'password_hash'],
  ];
  for (const [place, file, lines, v] of types) add('type-declaration', place, file, lines, v);

  add(
    'sql-schema',
    'sql',
    'db/schema.sql',
    ['CREATE TABLE users (', '  id BIGSERIAL PRIMARY KEY,', `  ${V} TEXT NOT NULL`, ');'],
    'password_digest',
  );
  add(
    'sql-schema',
    'sql',
    'db/queries.sql',
    [`SELECT id, ${V} FROM users WHERE email = $1;`],
    'password_hash',
  );
  add(
    'sql-schema',
    'sql',
    'db/migrate/002.sql',
    [`ALTER TABLE api_keys ADD COLUMN ${V} CHAR(8);`],
    'key_prefix',
  );
  add(
    'sql-schema',
    'python',
    'app/models.py',
    [`    api_token_hash = Column(${V}, nullable=False)`],
    'String(64)',
  );

  const bools: [string, string, string[], string][] = [
    ['yaml', 'config/auth.yml', [`require_password: ${V}`], 'true'],
    ['json', 'config/features.json', ['{', `  "passwordless": ${V}`, '}'], 'false'],
    ['env', '.env', [`API_KEY_AUTH_ENABLED=${V}`], 'true'],
    ['toml', 'config.toml', [`token_auth = ${V}`], 'false'],
    ['ini', 'php.ini', [`session.use_strict_mode = ${V}`], 'On'],
  ];
  for (const [place, file, lines, v] of bools) add('boolean-setting', place, file, lines, v);

  const prose = [
    'Set the `API_KEY` environment variable to your key before running the tests.',
    'Rotate your tokens every 90 days; the secret is never logged.',
    'The password must contain at least 12 characters, one digit and one symbol.',
    'Tokens are HMAC-signed with the key stored in Vault under `secret/app`.',
    'If the access token expires, the client refreshes it with the refresh token.',
    'Never commit `.env`; use `.env.example` as the template for passwords and keys.',
  ];
  for (const p of prose) add('docs-prose', 'markdown', 'docs/security.md', ['# Security', '', V, ''], p);

  const cmds: [string, string][] = [
    ['scripts/db.sh', 'mysql -u root -p app'],
    ['ci/login.sh', 'echo "$REGISTRY_TOKEN" | docker login -u ci --password-stdin registry.example.com'],
    ['scripts/psql.sh', 'psql -h db -U app -W'],
    ['scripts/api.sh', 'curl -u "$API_USER:$API_PASS" https://api.example.com/v1/items'],
    ['scripts/push.sh', 'sshpass -e ssh deploy@10.0.0.5 uptime'],
    ['scripts/release.sh', 'twine upload --repository internal dist/*'],
    ['scripts/dump.sh', 'PGPASSWORD="$DB_PASSWORD" pg_dump -h db -U app app > dump.sql'],
    ['scripts/mysql.sh', 'mysql -u app -p"$MYSQL_PWD" app'],
    ['scripts/k8s.sh', 'kubectl create secret generic db --from-file=password=./secrets/db_password.txt'],
    ['scripts/vault.sh', 'vault login -method=oidc role=dev'],
    ['scripts/gh.sh', 'gh auth login --with-token < ~/.config/gh/token'],
    ['scripts/npm.sh', `npm config set //registry.npmjs.org/:_authToken "\${NPM_TOKEN}"`],
  ];
  for (const [file, cmd] of cmds)
    add('command-without-secret', 'shell', file, ['#!/bin/sh', 'set -e', V], cmd);

  add(
    'test-vector-hash',
    'python',
    'tests/test_hash.py',
    [`assert hashlib.sha256(b"abc").hexdigest() == "${V}"`],
    sha256('abc'),
  );
  add(
    'test-vector-hash',
    'go',
    'hash_test.go',
    [`\twant := "${V}"`],
    createHash('md5').update('').digest('hex'),
  );
  add(
    'test-vector-hash',
    'rust',
    'tests/digest.rs',
    [`const EMPTY_SHA1: &str = "${V}";`],
    createHash('sha1').update('').digest('hex'),
  );
  add(
    'test-vector-hash',
    'ts',
    'test/hash.test.ts',
    [`assert.equal(sha256('quarry'), '${V}');`],
    sha256('quarry'),
  );

  const keyNames: [string, string, string[], string][] = [
    ['python', 'app/models.py', [`primary_key = "${V}"`], 'id'],
    ['python', 'app/cache.py', [`cache_key = f"${V}"`], 'user:{user_id}:profile'],
    ['yaml', 'dynamo/table.yml', [`partition_key: ${V}`, 'sort_key: created_at'], 'tenant_id'],
    ['ts', 'src/redis.ts', [`const keyPrefix = '${V}';`], 'quarry:jobs:'],
    [
      'json',
      'keybindings.json',
      ['[', `  { "key": "${V}", "command": "workbench.action.quickOpen" }`, ']'],
      'ctrl+shift+p',
    ],
    ['env', '.env', [`KEYBOARD_LAYOUT=${V}`], 'us-intl'],
    ['yaml', 'config/client.yml', [`api_version: "${V}"`], '2023-10-16'],
    ['yaml', 'config/oidc.yml', [`token_endpoint: ${V}`], 'https://auth.example.com/oauth2/token'],
    ['toml', 'config.toml', [`auth_mode = "${V}"`], 'oidc'],
    ['hcl', 'infra/kms.tf', [`  key_usage = "${V}"`], 'ENCRYPT_DECRYPT'],
    ['python', 'app/aws.py', [`KMS_KEY_ALIAS = "${V}"`], 'alias/app-data'],
    ['yaml', 'config/app.yml', [`public_key_path: ${V}`], 'keys/jwt-public.pem'],
  ];
  for (const [place, file, lines, v] of keyNames) add('non-secret-key-name', place, file, lines, v);

  add(
    'html-form',
    'html',
    'templates/login.html',
    [`<input type="password" name="password" placeholder="${V}" autocomplete="current-password">`],
    'Password',
  );
  add(
    'html-form',
    'jsx',
    'src/Login.tsx',
    [
      `<input type="password" value={password} onChange={(e) => setPassword(e.target.value)} aria-label="${V}" />`,
    ],
    'Password',
  );
  add('html-form', 'vue', 'src/ApiKey.vue', [`<label for="api-key">${V}</label>`], 'API key');

  add(
    'encoded-blob',
    'sourcemap',
    'dist/app.js.map',
    [`{"version":3,"sources":["../src/app.ts"],"mappings":"${V}"}`],
    'AAAA,SAASA,EAAEC,GAAG,CAAC,CAAC;AACT,OAAO,MAAMC,EAAE,GAAG,CAAC,CAAC,CAAC'.repeat(3),
  );
  add(
    'encoded-blob',
    'python',
    'tests/fixtures/payload.py',
    [`GZIP_PAYLOAD_B64 = "${V}"`],
    b64(Buffer.concat([Buffer.from('1f8b0800000000000003', 'hex'), g.bytes(90)])),
  );
  add(
    'encoded-blob',
    'go',
    'internal/proto/descriptor.go',
    [`var fileDescriptor = "${V}"`],
    b64(Buffer.concat([Buffer.from('0a0c', 'hex'), Buffer.from('quarry.proto'), g.bytes(120)])),
  );

  add(
    'network-id',
    'yaml',
    'config/net.yml',
    [`gateway: ${V}`],
    `fe80::${g.hex(4)}:${g.hex(4)}:${g.hex(4)}:${g.hex(4)}`,
  );
  add(
    'network-id',
    'ini',
    'config/dev.ini',
    [`mac = ${V}`],
    Array.from({ length: 6 }, () => g.hex(2)).join(':'),
  );
  add('network-id', 'env', '.env', [`ADMIN_EMAIL=${V}`], `ops+${g.s(LO, 6)}@example.com`);
  add('network-id', 'yaml', 'config/dns.yml', [`dkim_selector: ${V}`], `s${g.digits(8)}`);

  add(
    'url-placeholder-credentials',
    'env',
    '.env.example',
    [`DATABASE_URL=${V}`],
    `postgres://\${DB_USER}:\${DB_PASS}@db:5432/app`,
  );
  add(
    'url-placeholder-credentials',
    'markdown',
    'docs/mongo.md',
    [`Connect with \`${V}\`.`],
    'mongodb+srv://<username>:<password>@cluster0.mongodb.net/',
  );
  add(
    'url-placeholder-credentials',
    'yaml',
    'config/example.yml',
    [`url: ${V}`],
    'mysql://user:{password}@localhost:3306/app',
  );
  add(
    'url-placeholder-credentials',
    'python',
    'docs/conf_example.py',
    [`SQLALCHEMY_URL = "${V}"`],
    'postgresql://USER:PASSWORD@HOST/DB',
  );
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------

const SEED = 0x5ec2e7;

export function buildCorpus(): Case[] {
  const g = new Gen(SEED);
  const cases: Case[] = [];
  const secret = (shape: string, doc: Doc, written: string, secretPart: string) => {
    const { text, line } = render(doc, written);
    if (!text.includes(secretPart)) throw new Error(`${shape}: the secret is not in the text`);
    cases.push({ shape, kind: 'secret', file: doc.file, text, secret: secretPart, line });
  };

  // provider formats: two placements with a name, one without
  const named = Object.keys(NAMED).filter((p) => p !== 'kubeconfig' && p !== 'php');
  const nameless = Object.keys(NAMELESS);
  let ni = 0;
  let li = 0;
  for (const f of FORMATS) {
    let places: string[];
    if (f.places) places = f.places;
    else {
      places = [named[ni++ % named.length]!, named[ni++ % named.length]!];
      places.push(f.bare === false ? named[ni++ % named.length]! : nameless[li++ % nameless.length]!);
    }
    for (const p of places) {
      const out = f.gen(g);
      const [written, part] = typeof out === 'string' ? [out, out] : out;
      const make = NAMED[p] ?? NAMELESS[p];
      if (!make) throw new Error(`no placement ${p}`);
      secret(`${f.id} @ ${p}`, make(g, f.key), written, part);
    }
  }

  // private keys and other blocks
  const bp = Object.keys(BLOCK_PLACES);
  let bi = 0;
  for (const b of BLOCKS) {
    for (let k = 0; k < 3; k++) {
      const p = bp[bi++ % bp.length]!;
      const { pre = [], lines } = b.body(g);
      const { doc, block, secret: s } = BLOCK_PLACES[p]!(g, b, pre, lines);
      secret(`${b.id} @ ${p}`, doc, block, s);
    }
  }
  // a GCP service account file, whole and inlined
  for (const p of ['file', 'env-inline']) {
    const lines = wrap(
      b64(
        Buffer.concat([
          Buffer.from('308204be020100300d06092a864886f70d0101010500048204a8', 'hex'),
          g.bytes(1190),
        ]),
      ),
      64,
    );
    const key = ['-----BEGIN PRIVATE KEY-----', ...lines, '-----END PRIVATE KEY-----', ''].join('\\n');
    const project = `${g.pick(SERVICES)}-${g.digits(6)}`;
    const fields = [
      ['type', 'service_account'],
      ['project_id', project],
      ['private_key_id', g.hex(40)],
      ['private_key', V],
      ['client_email', `deployer@${project}.iam.gserviceaccount.com`],
      ['client_id', g.digits(21)],
      ['auth_uri', 'https://accounts.google.com/o/oauth2/auth'],
      ['token_uri', 'https://oauth2.googleapis.com/token'],
    ];
    const doc: Doc =
      p === 'file'
        ? {
            file: 'secrets/gcp-sa.json',
            lines: [
              '{',
              ...fields.map(([k, v], i) => `  "${k}": "${v}"${i < fields.length - 1 ? ',' : ''}`),
              '}',
            ],
          }
        : {
            file: '.env',
            lines: [`GOOGLE_CREDENTIALS='{${fields.map(([k, v]) => `"${k}":"${v}"`).join(',')}}'`],
          };
    secret(`gcp-service-account @ ${p}`, doc, key, lines.join('\\n'));
  }
  // PuTTY key file
  {
    const priv = wrap(b64(g.bytes(48)), 64);
    const doc: Doc = {
      file: 'keys/deploy.ppk',
      lines: [
        'PuTTY-User-Key-File-3: ssh-ed25519',
        'Encryption: none',
        'Comment: deploy@ci',
        'Public-Lines: 2',
        ...wrap(
          b64(Buffer.concat([Buffer.from('0000000b7373682d6564323535313900000020', 'hex'), g.bytes(32)])),
          64,
        ),
        `Private-Lines: ${priv.length}`,
        V,
        `Private-MAC: ${g.hex(64)}`,
      ],
    };
    secret('putty-private-key @ ppk-file', doc, priv.join('\n'), priv.join('\n'));
  }

  // generic values under secret-sounding names
  let ki = 0;
  for (const spot of SPOTS) {
    for (let k = 0; k < 3; k++) {
      const kind = KINDS[ki++ % KINDS.length]!;
      const raw = value(g, kind, spot.forbid ?? '');
      const written = spot.encode ? spot.encode(raw) : raw;
      secret(`generic-${kind} @ ${spot.id}`, spot.make(g), written, written);
    }
  }

  // look-alikes
  for (const l of lookalikes(g)) {
    const { text, line } = render(l.doc, l.value);
    cases.push({ shape: `lookalike:${l.cat} @ ${l.place}`, kind: 'lookalike', file: l.doc.file, text, line });
  }
  return cases;
}
