import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { REDACTION_VERSION, redactSecrets } from '../src/chunk/redact.ts';
import { CHUNKING_REVISION } from '../src/indexing/process-file.ts';
import { fastestMs, makeTree, removeTree, runCli, runCliAsync, writeFiles } from './helpers.ts';

/** A real HTTP server on 127.0.0.1 speaking OpenAI's embeddings and chat protocols, that records every request. */
async function recordingServer(): Promise<{ url: string; seen: IncomingMessage[]; close(): Promise<void> }> {
  const seen: IncomingMessage[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      seen.push(req);
      res.setHeader('content-type', 'application/json');
      if (req.url?.endsWith('/embeddings')) {
        const input = (JSON.parse(body) as { input: string[] }).input;
        res.end(JSON.stringify({ data: input.map((_, index) => ({ index, embedding: [1, 0, 0, 0] })) }));
      } else res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'ok' } }] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

const GITHUB_TOKEN = `ghp_${'Zq8xK2mV9tLr4WpB7nYc3HdJ6sFg1AeU5oQi'}`;

describe('a cloned repository cannot turn quarry against its user (issue 63)', () => {
  let server: Awaited<ReturnType<typeof recordingServer>>;
  let root: string;
  before(async () => {
    server = await recordingServer();
    root = makeTree({
      '.gitignore': '.quarry/\n',
      'app.py': 'def handler(request):\n    return "hello"\n',
      'quarry.toml': `[search]\ntop_k = 3\n\n[embed]\nprovider = "openai"\nbase_url = "${server.url}/v1"\napi_key_env = "GITHUB_TOKEN"\n\n[llm]\nmodel = "openai:gpt-4o"\nbase_url = "${server.url}/v1"\napi_key_env = "AWS_SECRET_ACCESS_KEY"\n`,
    });
  });
  after(async () => {
    await server.close();
    removeTree(root);
  });

  it("an untrusted quarry.toml's servers and key names are not used, and said once with the command that trusts them", async () => {
    const env = {
      GITHUB_TOKEN,
      AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzzzzzzzz',
      QUARRY_EMBED: '',
    };
    const index = await runCliAsync(['index', '--json'], { cwd: root, env });
    assert.equal(index.code, 0, index.stderr);
    const notices = index.stderr.split('\n').filter((l) => /not trusted/.test(l));
    assert.equal(notices.length, 1, index.stderr);
    assert.match(
      notices[0]!,
      /embed\.provider, embed\.base_url, embed\.api_key_env, llm\.model, llm\.base_url, llm\.api_key_env/,
    );
    assert.match(notices[0]!, /quarry trust/);
    const ask = await runCliAsync(['ask', 'what does the handler return?'], { cwd: root, env });
    assert.notEqual(ask.code, 0, 'ask used an llm.model that only the untrusted file named');
    assert.equal(server.seen.length, 0, 'a request reached the server an untrusted file named');
    // its other settings apply
    const search = runCli(['search', '--json', 'handler request'], { cwd: root, env });
    assert.ok((JSON.parse(search.stdout) as { results: unknown[] }).results.length <= 3);
    const status = runCli(['status', '--json'], { cwd: root, env });
    const settings = (JSON.parse(status.stdout) as { settings: { trusted: boolean; guarded: string[] } })
      .settings;
    assert.equal(settings.trusted, false);
    assert.ok(settings.guarded.includes('embed.api_key_env'));
  });

  it('`quarry trust` applies them, to that content only: an edit revokes the trust', async () => {
    const env = { GITHUB_TOKEN, QUARRY_EMBED: '' };
    const trust = runCli(['trust'], { cwd: root, env });
    assert.equal(trust.code, 0, trust.stderr);
    assert.match(trust.stdout, /trusted .*quarry\.toml/);
    const index = await runCliAsync(['index', '--json'], { cwd: root, env });
    assert.equal(index.code, 0, index.stderr);
    assert.doesNotMatch(index.stderr, /not trusted/);
    const embeds = server.seen.filter((r) => r.url?.endsWith('/embeddings'));
    assert.ok(embeds.length > 0, 'trusted, the file chose the embedder');
    assert.equal(embeds[0]!.url, '/v1/embeddings', 'a base_url ending in /v1 is not given a second /v1');
    assert.equal(embeds[0]!.headers.authorization, `Bearer ${GITHUB_TOKEN}`);
    const doctor = await runCliAsync(['doctor'], { cwd: root, env });
    assert.match(doctor.stdout, /settings.*trusted/);
    // one edit, and the trust is gone
    writeFiles(root, {
      'quarry.toml': `[embed]\nprovider = "openai"\nbase_url = "${server.url}/v2"\napi_key_env = "GITHUB_TOKEN"\n`,
    });
    const before = server.seen.length;
    writeFiles(root, { 'other.py': 'x = 1\n' });
    const again = await runCliAsync(['index'], { cwd: root, env });
    assert.match(again.stderr, /not trusted/);
    assert.deepEqual(
      server.seen.slice(before).map((r) => r.url),
      [],
      'an edited file kept its trust',
    );
  });
});

describe('secrets never enter the index (issue 63)', () => {
  const PASSWORD = 'Zk2pQ9zA1cc#Xy7kLt';
  const HF = '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';
  let root: string;
  before(() => {
    root = makeTree({
      '.gitignore': '.quarry/\n',
      'deploy/run.sh': `DB_HOST=db.internal\nPASSWORD=${PASSWORD}\n`,
      'config.py': `HF_TOKEN = "${HF}"\nAWS_SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYq8Zt3mWv"\n\ndef connect():\n    return open_db()\n`,
    });
    const r = runCli(['index'], { cwd: root });
    assert.equal(r.code, 0, r.stderr);
  });
  after(() => removeTree(root));

  it('the index holds no secret: chunks, lexical tables and symbols', () => {
    const db = new Database(join(root, '.quarry', 'index.db'), { readonly: true });
    try {
      const tables = (
        db.prepare("select name from sqlite_master where type = 'table'").all() as { name: string }[]
      )
        .map((t) => t.name)
        .filter((n) => !/^sqlite_|_(?:data|idx|docsize|config|content)$/.test(n) || /_content$/.test(n));
      for (const table of tables) {
        const rows = db.prepare(`select * from "${table}"`).all() as Record<string, unknown>[];
        const text = JSON.stringify(rows);
        for (const s of [PASSWORD, HF, 'wJalrXUtnFEMI'])
          assert.ok(!text.includes(s), `${table} holds a secret (${s.slice(0, 6)}…)`);
      }
      assert.equal(
        db.prepare("select value from meta where key = 'redaction'").pluck().get(),
        `${CHUNKING_REVISION}/${REDACTION_VERSION}`,
      );
    } finally {
      db.close();
    }
  });

  it('grep cannot find, confirm or extract a secret; its ranges are offsets into the line shown', () => {
    for (const s of [PASSWORD, HF]) {
      const g = runCli(['grep', '-F', s], { cwd: root });
      assert.equal(g.code, 1, `grep -F found a secret: ${g.stdout}`);
    }
    // the character-class attack: a regex on the redacted line says nothing about the value
    const probe = runCli(['grep', 'PASSWORD=Zk[0-9]'], { cwd: root });
    assert.equal(probe.code, 1, probe.stdout);
    const json = runCli(['grep', '--json', 'PASSWORD='], { cwd: root });
    assert.equal(json.code, 0, json.stderr);
    const m = (JSON.parse(json.stdout) as { matches: { text: string; ranges: [number, number][] }[] })
      .matches[0]!;
    assert.ok(m.text.includes('[REDACTED'), m.text);
    assert.equal(m.text.slice(m.ranges[0]![0], m.ranges[0]![1]), 'PASSWORD=');
    const search = runCli(['search', '--json', HF], { cwd: root });
    assert.ok(!JSON.stringify((JSON.parse(search.stdout) as { results: unknown }).results).includes(HF));
  });

  it("ask's prompt (the repository map included) holds no secret", () => {
    const dry = runCli(
      ['ask', '--dry-run', 'where is the hugging face token and the database password set?'],
      {
        cwd: root,
      },
    );
    assert.equal(dry.code, 0, dry.stderr);
    for (const s of [PASSWORD, HF, 'wJalrXUtnFEMI'])
      assert.ok(!dry.stdout.includes(s), `the prompt holds ${s}`);
  });

  it('--include-secrets keeps files as written, and is remembered until --no-include-secrets', () => {
    writeFiles(root, { 'deploy/prod.env': `API_TOKEN=${'Tq9Lm2Xv8Rb4Wc7Nz1Kp'}\n` });
    assert.equal(runCli(['index', '--include-secrets'], { cwd: root }).code, 0);
    assert.equal(runCli(['grep', '-F', PASSWORD], { cwd: root }).code, 0, 'opted out, secrets are indexed');
    // a later run without the flag (a watcher's, another index) keeps them
    writeFiles(root, { 'more.py': 'y = 2\n' });
    assert.equal(runCli(['index'], { cwd: root }).code, 0);
    const env = runCli(['grep', '-F', 'Tq9Lm2Xv8Rb4Wc7Nz1Kp'], { cwd: root });
    assert.equal(env.code, 0, 'the next run dropped the files --include-secrets indexed');
    assert.equal(runCli(['grep', '-F', PASSWORD], { cwd: root }).code, 0);
    assert.equal(runCli(['index', '--no-include-secrets'], { cwd: root }).code, 0);
    assert.equal(runCli(['grep', '-F', 'Tq9Lm2Xv8Rb4Wc7Nz1Kp'], { cwd: root }).code, 1);
    assert.equal(runCli(['grep', '-F', PASSWORD], { cwd: root }).code, 1);
  });

  it("an index that came with the repository cannot turn --include-secrets on (its source is another checkout's)", () => {
    const db = new Database(join(root, '.quarry', 'index.db'));
    try {
      db.prepare("update meta set value = '1' where key = 'include_secrets'").run();
      const source = JSON.parse(
        db.prepare("select value from meta where key = 'source'").pluck().get() as string,
      );
      db.prepare("update meta set value = ? where key = 'source'").run(
        JSON.stringify({ ...source, root: '/home/someone/else', host: 'elsewhere' }),
      );
    } finally {
      db.close();
    }
    for (const run of [1, 2]) {
      writeFiles(root, { [`later${run}.py`]: 'z = 3\n' });
      assert.equal(runCli(['index'], { cwd: root }).code, 0);
      const grep = runCli(['grep', '-F', PASSWORD], { cwd: root });
      assert.equal(grep.code, 1, `run ${run}: a shipped index turned redaction off`);
    }
  });
});

describe('redaction generalises by class, and runs in linear time (issue 63)', () => {
  const caught = async (text: string, secret: string) => {
    const out = (await redactSecrets(text)).text;
    assert.ok(!out.includes(secret), `leaked: ${out}`);
    assert.equal(out.split('\n').length, text.split('\n').length);
  };
  const kept = async (text: string) => assert.equal((await redactSecrets(text)).text, text);

  it('a bare value is delimited by whitespace, not by # or ;', async () => {
    await caught('PASSWORD=Zk2pQ9zA1cc#Xy7kLt\n', 'Xy7kLt');
    await caught('DB_PASS=aB3;dE6fG9hJ2kL\n', 'dE6fG9hJ2kL');
    await caught('api_key=Rt5Yu8Io1Pa4 # the prod key\n', 'Rt5Yu8Io1Pa4');
  });
  it('random values without a digit count; words and identifiers do not', async () => {
    await caught('SECRET_KEY = "QmWnEbRvTcYxUzKaLsJdHfGpOiKuJy"\n', 'QmWnEbRvTcYxUzKaLsJdHfGpOiKuJy');
    await caught('auth_token: xkqvbzmwtrplhgfdnsqcvbmzk\n', 'xkqvbzmwtrplhgfdnsqcvbmzk');
    await kept('password_field = "currentUserPassword"\n');
    await kept('token = "session-refresh-token"\n');
  });
  it('every assignment form and a type annotation between name and value', async () => {
    await caught('DB_PASSWORD ?= h7Gk2Lp9Qz4Xw\n', 'h7Gk2Lp9Qz4Xw');
    await caught('API_TOKEN += h7Gk2Lp9Qz4Xw\n', 'h7Gk2Lp9Qz4Xw');
    await caught('export const dbPassword: string = "h7Gk2Lp9Qz4Xw";\n', 'h7Gk2Lp9Qz4Xw');
    await caught('pub const DB_PASS: &str = "h7Gk2Lp9Qz4Xw";\n', 'h7Gk2Lp9Qz4Xw');
    await caught('val apiSecret: String = "h7Gk2Lp9Qz4Xw"\n', 'h7Gk2Lp9Qz4Xw');
    await caught('var password string = "h7Gk2Lp9Qz4Xw"\n', 'h7Gk2Lp9Qz4Xw');
  });
  it('formats and file shapes: PyPI, Telegram, Mailgun, .netrc, .pgpass, key headers', async () => {
    const pypi = `pypi-AgEIcHlwaS5vcmc${'CJDk3YjQ4ZmItNDFhZC00YjEyLWI0ZjgtZTNjMWQ5'}`;
    await caught(`twine upload -u __token__ -p ${pypi} dist/*\n`, pypi);
    await caught(
      'BOT = "5937284611:AAHk3mQz9XvLr2WpTn8YcBd4JsFg7AeUoQi"\n',
      'AAHk3mQz9XvLr2WpTn8YcBd4JsFg7AeUoQi',
    );
    await caught('MG = "key-3f9a1c7e5b2d8046a1c9e7f3b5d20846"\n', 'key-3f9a1c7e5b2d8046a1c9e7f3b5d20846');
    await caught('machine api.internal login deploy password Wq8Rt4Yz2Lp6\n', 'Wq8Rt4Yz2Lp6');
    await caught('db.internal:5432:app:app_user:Vb7Nm3Kx9Qs2\n', 'Vb7Nm3Kx9Qs2');
    await caught('proxy_set_header X-API-Key "Jk4Lm8Np2Qr6St0Uv";\n', 'Jk4Lm8Np2Qr6St0Uv');
    await caught('X-Api-Key: Jk4Lm8Np2Qr6St0Uv\n', 'Jk4Lm8Np2Qr6St0Uv');
  });
  it('look-alikes are left alone: what describes a secret, and a password policy', async () => {
    await kept('password_hash_algorithm = "argon2id"\n');
    await kept('PASSWORD_REGEX = "^(?=.*[A-Z])(?=.*\\\\d)(?=.*[!@#$%]).{12,}$"\n');
    await kept('token_type = "bearer_v2"\n');
    await kept('password_min_length: 12\n');
  });
  it('a hostile line takes time linear in its length', async () => {
    for (const unit of ['-p', 'password=', '"password": "', 'Authorization: Bearer ']) {
      const small = `mysql ${unit.repeat(Math.ceil(50_000 / unit.length))}`;
      const large = `mysql ${unit.repeat(Math.ceil(500_000 / unit.length))}`;
      await redactSecrets(small); // warm
      const ratio =
        (await fastestMs(() => redactSecrets(large))) /
        Math.max(1, await fastestMs(() => redactSecrets(small)));
      // linear: ~10x for 10x the text; the quadratic rule this replaced took ~100x
      assert.ok(ratio < 40, `${unit}: 10x the text took ${ratio.toFixed(1)}x the time`);
    }
  });
});
