// Secrets never leave the machine as written: files that hold credentials are not indexed, and secrets inside
// ordinary files are replaced in what goes to a model (the assembled context) or to an agent (MCP answers).
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { redactSecrets } from '../src/chunk/redact.ts';
import { assembleContext } from '../src/context/assemble.ts';
import { openedSet } from '../src/host/set.ts';
import { createMcpServer } from '../src/mcp/server.ts';
import { indexProject, type LocalProject } from '../src/project/local/index.ts';
import { startServer } from '../src/server/http.ts';
import { makeTree, openLexical, removeTree, runCli, trustProjectFile } from './helpers.ts';

// realistic values in the shapes real ones have (none of them valid anywhere)
const AWS_ID = 'AKIAZ7QX4RTPL2MNB8VW';
const AWS_SECRET = 'q8Zt/Xv2LmR9kW4pN7sJ3yB6cF1hD5gA0eT+uQiO';
const GH = 'ghp_R7tYq2Xz9LmK4pW8sN3vB6cF1hD5gA0eJ2uQ';
const SLACK = 'xoxb-2841763950-9182736450-Zq7Xv2LmR9kW4pN7sJ3yB6cF';
const DB_PASSWORD = 'Tr0ub4dor&3-Wq9z';
const KUBE_TOKEN =
  'eyJhbGciOiJSUzI1NiIsImtpZCI6InF1YXJyeSJ9.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0.Zq7Xv2LmR9kW4pN7sJ3yB6cF';
const SECRETS = [
  AWS_ID,
  AWS_SECRET,
  GH,
  SLACK,
  DB_PASSWORD,
  KUBE_TOKEN,
  'npm_Zq7Xv2LmR9kW4pN7sJ3yB6cF1hD5gA',
  'dG9wc2VjcmV0OnBhc3N3b3JkMTIz',
];

const FILES: Record<string, string> = {
  // ordinary files holding secrets: indexed, but redacted on the way out
  'app/settings.py': `"""Settings for the billing service."""\nDEBUG = False\nAWS_ACCESS_KEY_ID = "${AWS_ID}"\nAWS_SECRET_ACCESS_KEY = "${AWS_SECRET}"\nDATABASES = {"default": {"ENGINE": "postgres", "PASSWORD": "${DB_PASSWORD}"}}\n\ndef billing_database_url():\n    return f"postgres://billing:{DATABASES['default']['PASSWORD']}@db/billing"\n`,
  'app/notify.ts': `// posts billing events to the team channel\nconst GITHUB_TOKEN = '${GH}';\nconst slackToken = "${SLACK}";\nexport function notifyBilling(message: string) {\n  return fetch('https://slack.com/api/chat.postMessage', { headers: { authorization: slackToken }, body: message });\n}\n`,
  // files that are credentials, by name or by where they live: never indexed
  'deploy/.kube/config': `apiVersion: v1\nusers:\n- name: billing\n  user:\n    token: ${KUBE_TOKEN}\n`,
  'deploy/.docker/config.json':
    '{"auths": {"registry.example.com": {"auth": "dG9wc2VjcmV0OnBhc3N3b3JkMTIz"}}}\n',
  'infra/terraform.tfstate': `{"resources": [{"type": "aws_db_instance", "instances": [{"attributes": {"password": "${DB_PASSWORD}"}}]}]}\n`,
  'infra/prod.kubeconfig': `users:\n- user:\n    token: ${KUBE_TOKEN}\n`,
  '.npmrc': '//registry.npmjs.org/:_authToken=npm_Zq7Xv2LmR9kW4pN7sJ3yB6cF1hD5gA\n',
  '.env': `DATABASE_PASSWORD=${DB_PASSWORD}\n`,
  '.aws/credentials': `[default]\naws_access_key_id = ${AWS_ID}\naws_secret_access_key = ${AWS_SECRET}\n`,
};

describe('secrets (regression: secrets inside ordinary files were indexed and sent as written)', () => {
  let root: string;
  let project: LocalProject;
  before(async () => {
    root = makeTree({ ...FILES, '.git/HEAD': 'ref: refs/heads/main\n' });
    project = await openLexical(root);
    await indexProject(project);
  });
  after(async () => {
    await project.close();
    removeTree(root);
  });

  it('leaves credential files out of the index, by name and by where they live, and names them', async () => {
    const indexed = (await project.store.listFiles()).map((f) => f.path).sort();
    assert.deepEqual(indexed, ['app/notify.ts', 'app/settings.py']);
    const files = JSON.parse(runCli(['files', '--json'], { cwd: root }).stdout) as {
      skipped: Array<{ path: string }>;
    };
    for (const p of [
      'deploy/.kube/config',
      'deploy/.docker/config.json',
      'infra/terraform.tfstate',
      'infra/prod.kubeconfig',
      '.npmrc',
      '.env',
      '.aws/credentials',
    ])
      assert.ok(
        files.skipped.some((s) => s.path === p),
        `${p} not listed as skipped`,
      );
  });

  it('grep shows matched and context lines redacted, each on its line (one redaction pass for the whole answer)', () => {
    const r = runCli(['grep', '-C', '2', 'AWS_ACCESS_KEY_ID|PASSWORD'], { cwd: root });
    assert.equal(r.code, 0, r.stderr);
    for (const s of SECRETS) assert.ok(!r.stdout.includes(s), `${s.slice(0, 8)}… reached grep's output`);
    assert.match(r.stdout, /^app\/settings\.py:\d+:AWS_ACCESS_KEY_ID = "\[REDACTED AWS access key\]"$/m);
    // every printed line still names its file and line: the joined redaction split back line for line
    for (const line of r.stdout.trim().split('\n'))
      assert.match(line, /^(--|app\/settings\.py[:-]\d+[:-].*)$/);
  });

  it('the context sent to a model holds none of the secrets, line numbers kept', async () => {
    const ctx = await assembleContext(
      project,
      'how does billing reach its database and post to the team channel?',
      {
        budget: 4000,
      },
    );
    assert.ok(
      ctx.blocks.some((b) => b.path === 'app/settings.py') &&
        ctx.blocks.some((b) => b.path === 'app/notify.ts'),
    );
    for (const s of SECRETS) assert.ok(!ctx.user.includes(s), `${s.slice(0, 8)}… reached the prompt`);
    // the repository map's signature lines too (regression: `AWS_ACCESS_KEY_ID = "AKIA…"` reached the prompt there)
    assert.ok(
      ctx.map?.text.includes("const GITHUB_TOKEN = '[REDACTED GitHub token]'"),
      `the map shows the definition, redacted: ${ctx.map?.text}`,
    );
    for (const secret of SECRETS)
      assert.ok(!ctx.map?.text.includes(secret), `${secret.slice(0, 8)}… in the map`);
    assert.match(ctx.user, /AWS_ACCESS_KEY_ID = "\[REDACTED AWS access key\]"/);
    assert.match(ctx.user, /const GITHUB_TOKEN = '\[REDACTED GitHub token\]'/);
    assert.match(ctx.user, /"PASSWORD": "\[REDACTED secret\]"/);
    // the code around them is intact
    assert.match(ctx.user, /def billing_database_url\(\):/);
    for (const b of ctx.blocks)
      assert.equal(b.text.split('\n').length, b.endLine - b.startLine + 1, `${b.path} lost lines`);
    // the CLI's dry run shows the same
    const dry = runCli(['ask', '--dry-run', 'how does billing reach its database?'], { cwd: root });
    assert.equal(dry.code, 0, dry.stderr);
    for (const s of SECRETS) assert.ok(!dry.stdout.includes(s), `${s.slice(0, 8)}… in ask --dry-run`);
  });

  it('MCP answers (search_code snippets, read_file) are redacted too', async () => {
    // the set every face goes through: it fans out and redacts (its close is the test's own, below)
    const set = { ...openedSet([project]), close: async () => {} };
    const server = createMcpServer(set);
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(a);
    const client = new Client({ name: 'secrets-test', version: '1' });
    await client.connect(b);
    try {
      const text = async (name: string, args: Record<string, unknown>) =>
        ((await client.callTool({ name, arguments: args })) as { content: Array<{ text: string }> })
          .content[0]!.text;
      const read = await text('read_file', { path: 'app/settings.py' });
      const search = await text('search_code', { query: 'AWS_SECRET_ACCESS_KEY settings', top_k: 5 });
      const notify = await text('read_file', { path: 'app/notify.ts' });
      for (const s of SECRETS) {
        assert.ok(!read.includes(s), `read_file leaked ${s.slice(0, 8)}…`);
        assert.ok(!search.includes(s), `search_code leaked ${s.slice(0, 8)}…`);
        assert.ok(!notify.includes(s), `read_file leaked ${s.slice(0, 8)}…`);
      }
      assert.match(read, /^\s*4 {2}AWS_SECRET_ACCESS_KEY = "\[REDACTED AWS secret key\]"$/m);
    } finally {
      await client.close();
    }
  });

  it('search snippets and file views are redacted on the CLI and over HTTP (the API the panel reads)', async () => {
    const cli = runCli(
      ['search', '--json', '--mode', 'lexical', 'AWS_SECRET_ACCESS_KEY GITHUB_TOKEN settings'],
      {
        cwd: root,
      },
    );
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /REDACTED/);
    // the snippets are redacted in one pass and split back: each keeps its own file's lines
    const results = (JSON.parse(cli.stdout) as { results: Array<{ path: string; snippet: string }> }).results;
    assert.ok(new Set(results.map((r) => r.path)).size >= 2, 'results from several files');
    for (const r of results) {
      const file = readFileSync(join(root, r.path), 'utf8');
      for (const line of r.snippet.split('\n'))
        if (!line.includes('[REDACTED'))
          assert.ok(file.includes(line), `${r.path}: "${line}" is not its line`);
    }
    const context = runCli(['search', '--mode', 'lexical', '-C', '3', 'AWS_SECRET_ACCESS_KEY'], {
      cwd: root,
    });
    assert.equal(context.code, 0, context.stderr);
    for (const s of SECRETS) {
      assert.ok(!cli.stdout.includes(s), `search --json leaked ${s.slice(0, 8)}…`);
      assert.ok(!context.stdout.includes(s), `search -C leaked ${s.slice(0, 8)}…`);
    }
    const served = await startServer({ root, watch: false });
    try {
      const get = async (path: string) => (await fetch(new URL(path, served.url))).text();
      const search = await get('/api/search?q=AWS_SECRET_ACCESS_KEY%20GITHUB_TOKEN%20settings&mode=lexical');
      const full = await get('/api/search?q=AWS_SECRET_ACCESS_KEY%20settings&mode=lexical&full=1');
      const file = await get('/api/file?path=app/settings.py');
      const all = await get('/api/search?q=slackToken%20GITHUB_TOKEN&mode=lexical&repo=*');
      assert.match(file, /\[REDACTED secret\]/);
      assert.match(search, /REDACTED/);
      assert.match(all, /REDACTED/);
      for (const s of SECRETS)
        for (const [name, body] of Object.entries({ search, full, file, all }))
          assert.ok(!body.includes(s), `GET ${name} leaked ${s.slice(0, 8)}…`);
    } finally {
      await served.close();
    }
  });

  it('context.redact_secrets = false sends files as written; the file being edited is never redacted', async () => {
    const lines = readFileSync(join(root, 'app', 'settings.py'), 'utf8');
    const target = await assembleContext(project, 'rename the debug flag', {
      budget: 4000,
      target: { path: 'app/settings.py', text: lines },
    });
    assert.ok(target.user.includes(AWS_SECRET), 'an edit must see the file it rewrites as it is');
    writeFileSync(join(root, 'quarry.toml'), '[context]\nredact_secrets = false\n');
    // a repository's own file cannot turn the safeguard off until the user trusts it (config/trust.ts)
    const untrusted = runCli(['ask', '--dry-run', 'how does billing reach its database?'], { cwd: root });
    assert.ok(!untrusted.stdout.includes(DB_PASSWORD), 'an untrusted quarry.toml turned redaction off');
    assert.match(untrusted.stderr, /not trusted.*context\.redact_secrets.*quarry trust/);
    trustProjectFile(root);
    const dry = runCli(['ask', '--dry-run', 'how does billing reach its database?'], { cwd: root });
    assert.ok(dry.stdout.includes(DB_PASSWORD), 'turned off, the file is sent as written');
  });

  it('redacts every copy of a key found twice close together (snippets and grep lines are redacted joined)', async () => {
    // only secretlint's preset knows this format: quarry's own rules do not catch it, so each copy rests on the
    // position of its own finding (the second copy was left as written when the first was taken for both)
    const token = `shpat_${'0a1b2c3d4e5f6789'.repeat(2)}`;
    const line = `curl -H "X-Shopify-Access-Token: ${token}" https://shop.example/admin`;
    const out = (await redactSecrets(`${line}\n${line}\n`)).text;
    assert.ok(!out.includes(token), out);
    assert.equal(out.split('\n').length, 3);
    assert.equal(out.split('[REDACTED').length - 1, 2);
  });

  it('leaves ordinary code alone: names, lookups, placeholders, hashes', async () => {
    for (const text of [
      'def check_password(user, password):',
      'password = os.environ["DB_PASSWORD"]',
      'token = get_token(request)',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: an environment placeholder, as written in a config file
      'api_key: ${API_KEY}',
      'password = "changeme"',
      'const passwordField = "password";',
      'sha = "a3f5b2c1d4e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0"',
      'integrity: sha512-Zq7Xv2LmR9kW4pN7sJ3yB6cF1hD5gA0eT',
    ])
      assert.equal((await redactSecrets(text)).text, text, text);
  });

  it('hides every secret of the corpus and leaves every look-alike as written (test/fixtures/secrets-corpus.jsonl)', async () => {
    const rows = readFileSync(join(import.meta.dirname, 'fixtures', 'secrets-corpus.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map(
        (l) =>
          JSON.parse(l) as { id: string; kind: string; shape: string; text: string; secret: string | null },
      );
    const secrets = rows.filter((r) => r.kind === 'secret');
    const lookalikes = rows.filter((r) => r.kind === 'lookalike');
    assert.ok(secrets.length >= 100 && lookalikes.length >= 100);
    const missed: string[] = [];
    const touched: string[] = [];
    for (const r of secrets) {
      const out = (await redactSecrets(r.text)).text;
      // no line of the secret survives, and the line count is kept
      const parts = r
        .secret!.split('\n')
        .map((p) => p.trim())
        .filter((p) => p.length >= 6);
      if (parts.some((p) => out.includes(p))) missed.push(`${r.id} ${r.shape}`);
      assert.equal(out.split('\n').length, r.text.split('\n').length, r.id);
    }
    for (const r of lookalikes)
      if ((await redactSecrets(r.text)).text !== r.text) touched.push(`${r.id} ${r.shape}`);
    assert.deepEqual(missed, [], 'secrets shown as written');
    assert.deepEqual(touched, [], 'look-alikes redacted');
  });
});

describe('redaction in a long-lived process', () => {
  it('leaves nothing behind per file (secretlint profiled every lint into the performance timeline, kept forever)', async () => {
    const text = `${'const x = 1;\n'.repeat(50)}password = "hunter2hunter2XYZ"\n`;
    await redactSecrets(text, { path: 'a.py' });
    const before = performance.getEntries().length;
    for (let i = 0; i < 50; i++) await redactSecrets(text, { path: 'a.py' });
    assert.equal(performance.getEntries().length, before);
  });
});
