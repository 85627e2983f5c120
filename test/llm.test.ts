import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_CONFIG, type LlmOptions } from '../src/config/config.ts';
import type { QuarryError } from '../src/errors.ts';
import { openLlm, parseModelSpec } from '../src/llm/provider.ts';
import { type LlmServer, startLlmServer } from './llm-server.ts';

async function collect(stream: AsyncIterable<string>): Promise<string> {
  let out = '';
  for await (const p of stream) out += p;
  return out;
}

const messages = [
  { role: 'system' as const, content: 'Answer from the context.' },
  { role: 'user' as const, content: 'Where is the lock taken?' },
];

describe('LLM providers against a real HTTP server that speaks their streaming protocols', () => {
  let server: LlmServer;
  before(async () => {
    server = await startLlmServer();
  });
  after(() => server.close());

  const cases: Array<{
    spec: string;
    base: (url: string) => string;
    env: Record<string, string>;
    path: RegExp;
  }> = [
    {
      spec: 'openai:gpt-4o-mini',
      base: (u) => `${u}/v1`,
      env: { OPENAI_API_KEY: 'k1' },
      path: /^\/v1\/chat\/completions$/,
    },
    { spec: 'ollama:qwen2.5-coder:7b', base: (u) => `${u}/api`, env: {}, path: /^\/api\/chat$/ },
    {
      spec: 'anthropic:claude-sonnet-4-5',
      base: (u) => `${u}/v1`,
      env: { ANTHROPIC_API_KEY: 'k2' },
      path: /^\/v1\/messages$/,
    },
    {
      spec: 'gemini:gemini-2.5-flash',
      base: (u) => `${u}/v1beta`,
      env: { GEMINI_API_KEY: 'k3' },
      path: /^\/v1beta\/models\/gemini-2\.5-flash:streamGenerateContent/,
    },
    {
      spec: 'lmstudio:qwen2.5-7b-instruct',
      base: (u) => `${u}/v1`,
      env: {},
      path: /^\/v1\/chat\/completions$/,
    },
  ];

  for (const c of cases) {
    it(`${c.spec}: streams the answer, sends the system prompt, the question and the temperature`, async () => {
      const llm: LlmOptions = { ...DEFAULT_CONFIG.llm, baseUrl: c.base(server.url), retries: 0 };
      const provider = await openLlm(llm, c.spec, c.env);
      const seen: string[] = [];
      for await (const p of provider.stream(messages, { temperature: 0, maxOutputTokens: 100 })) seen.push(p);
      assert.equal(seen.join(''), 'Hello from the fake model.');
      assert.ok(seen.length > 1, 'arrives in pieces');
      const req = server.requests.at(-1)!;
      assert.match(req.path, c.path);
      const body = JSON.stringify(req.body);
      assert.ok(body.includes('Answer from the context.'), 'system prompt sent');
      assert.ok(body.includes('Where is the lock taken?'), 'question sent');
      assert.match(body, /"temperature":0\b/);
    });
  }

  it('compat: a bare server URL gets /v1; a wrong path is named as such; an unknown model says its window is a guess', async () => {
    const llm: LlmOptions = { ...DEFAULT_CONFIG.llm, baseUrl: server.url, retries: 0 };
    const p = await openLlm(llm, 'compat:my-local-model', {});
    const seen: string[] = [];
    for await (const piece of p.stream(messages, { maxOutputTokens: 50 })) seen.push(piece);
    assert.equal(seen.join(''), 'Hello from the fake model.');
    assert.equal(server.requests.at(-1)!.path, '/v1/chat/completions');
    assert.equal(p.windowGuessed, true);
    assert.equal(
      (await openLlm({ ...llm, contextWindow: 32_000 }, 'compat:my-local-model', {})).windowGuessed,
      undefined,
    );
    const wrong = await openLlm({ ...llm, baseUrl: `${server.url}/api/v2` }, 'compat:my-local-model', {});
    await assert.rejects(
      async () => {
        for await (const _ of wrong.stream(messages, { maxOutputTokens: 50 })) {
          // drain
        }
      },
      (err: Error) => /has no chat API at .*\/api\/v2 \(404\): check llm\.base_url/.test(err.message),
    );
  });

  it("a bare server URL gets the provider's API prefix (ollama /api, OpenAI /v1); one that has it is kept", async () => {
    const cases: Array<[spec: string, tails: string[], path: string, env: Record<string, string>]> = [
      ['ollama:qwen2.5-coder:7b', ['', '/', '/api', '/api/'], '/api/chat', {}],
      ['openai:gpt-4o-mini', ['', '/v1', '/v1/'], '/v1/chat/completions', { OPENAI_API_KEY: 'k1' }],
      ['compat:my-local-model', ['/', '/v1/'], '/v1/chat/completions', {}],
    ];
    for (const [spec, tails, path, env] of cases)
      for (const tail of tails) {
        const llm: LlmOptions = { ...DEFAULT_CONFIG.llm, baseUrl: `${server.url}${tail}`, retries: 0 };
        const p = await openLlm(llm, spec, env);
        let text = '';
        for await (const piece of p.stream(messages, { maxOutputTokens: 50 })) text += piece;
        assert.equal(text, 'Hello from the fake model.', `${spec} at ${llm.baseUrl}`);
        assert.equal(server.requests.at(-1)!.path, path, `${spec} at ${llm.baseUrl}`);
      }
  });

  it('a provider named after an Object.prototype member is unknown, not a crash', async () => {
    await assert.rejects(openLlm({ ...DEFAULT_CONFIG.llm, retries: 0 }, 'constructor:x', {}), (err: Error) =>
      /unknown model provider "constructor"/.test(err.message),
    );
  });

  it('takes the key from the config when given there', async () => {
    const p = await openLlm(
      { ...DEFAULT_CONFIG.llm, baseUrl: `${server.url}/v1`, retries: 0, apiKey: 'sk-from-config' },
      'openai:gpt-4o',
      {},
    );
    await collect(p.stream(messages));
    assert.equal(server.requests.at(-1)!.headers.authorization, 'Bearer sk-from-config');
  });

  it('sends API keys in each protocol’s header', async () => {
    const key = (spec: string, base: string, env: Record<string, string>) =>
      openLlm({ ...DEFAULT_CONFIG.llm, baseUrl: base, retries: 0 }, spec, env).then((p) =>
        collect(p.stream(messages)),
      );
    await key('openai:gpt-4o', `${server.url}/v1`, { OPENAI_API_KEY: 'sk-openai' });
    assert.equal(server.requests.at(-1)!.headers.authorization, 'Bearer sk-openai');
    await key('anthropic:claude-3-5-haiku', `${server.url}/v1`, { ANTHROPIC_API_KEY: 'sk-ant' });
    assert.equal(server.requests.at(-1)!.headers['x-api-key'], 'sk-ant');
    await key('gemini:gemini-2.0-flash', `${server.url}/v1beta`, { GEMINI_API_KEY: 'g-key' });
    assert.equal(server.requests.at(-1)!.headers['x-goog-api-key'], 'g-key');
  });

  it('retries a 429 that says Retry-After, and a 503, then answers', async () => {
    server.failFirst = [429, 503];
    const before = server.requests.length;
    const p = await openLlm(
      { ...DEFAULT_CONFIG.llm, baseUrl: `${server.url}/v1`, retries: 2 },
      'openai:gpt-4o',
      {
        OPENAI_API_KEY: 'k',
      },
    );
    assert.equal(await collect(p.stream(messages)), 'Hello from the fake model.');
    assert.equal(server.requests.length - before, 3);
  });

  it('gives up after its retries with a one-line error that says what to do', async () => {
    server.failFirst = [429, 429, 429];
    const p = await openLlm(
      { ...DEFAULT_CONFIG.llm, baseUrl: `${server.url}/api`, retries: 1 },
      'ollama:llama3.1',
      {},
    );
    await assert.rejects(collect(p.stream(messages)), (err: QuarryError) => {
      assert.equal(err.code, 'LLM');
      assert.match(err.message, /429/);
      assert.doesNotMatch(err.message, /\n/);
      return true;
    });
    server.failFirst = [];
  });

  for (const spec of [
    'openai:gpt-4o',
    'anthropic:claude-sonnet-4-5',
    'ollama:llama3.1',
    'gemini:gemini-2.5-pro',
  ]) {
    it(`${spec}: a stream cut in the middle is an error, not a short answer`, async () => {
      const base = spec.startsWith('ollama')
        ? `${server.url}/api`
        : spec.startsWith('gemini')
          ? `${server.url}/v1beta`
          : `${server.url}/v1`;
      const p = await openLlm({ ...DEFAULT_CONFIG.llm, baseUrl: base, retries: 0 }, spec, {
        OPENAI_API_KEY: 'k',
        ANTHROPIC_API_KEY: 'k',
        GEMINI_API_KEY: 'k',
      });
      server.cutAfter = 3;
      const seen: string[] = [];
      await assert.rejects(
        (async () => {
          for await (const piece of p.stream(messages)) seen.push(piece);
        })(),
        (err: QuarryError) => err.code === 'LLM',
      );
      assert.ok(seen.join('').length < 'Hello from the fake model.'.length, 'never the whole answer');
    });
  }

  it('refuses a bad key with a message about the key', async () => {
    const p = await openLlm(
      { ...DEFAULT_CONFIG.llm, baseUrl: `${server.url}/v1`, retries: 0 },
      'openai:gpt-4o',
      {
        OPENAI_API_KEY: 'bad-key',
      },
    );
    await assert.rejects(collect(p.stream(messages)), /refused the API key \(401\)/);
  });

  it('says how to reach a server that is not running', async () => {
    const p = await openLlm(
      { ...DEFAULT_CONFIG.llm, baseUrl: 'http://127.0.0.1:9/api', retries: 0 },
      'ollama:llama3.1',
      {},
    );
    await assert.rejects(collect(p.stream(messages)), /cannot reach ollama at http:\/\/127\.0\.0\.1:9\/api/);
  });

  it('says which variable to set when a cloud key is missing, and how to write a model', async () => {
    await assert.rejects(openLlm(DEFAULT_CONFIG.llm, 'openai:gpt-4o', {}), /set OPENAI_API_KEY/);
    await assert.rejects(
      openLlm(DEFAULT_CONFIG.llm, 'anthropic:claude-sonnet-4-5', {}),
      /set ANTHROPIC_API_KEY/,
    );
    await assert.rejects(openLlm(DEFAULT_CONFIG.llm, 'nosuch:model', {}), /unknown model provider "nosuch"/);
    await assert.rejects(openLlm(DEFAULT_CONFIG.llm, undefined, {}), /no model configured/);
    assert.throws(() => parseModelSpec('gpt-4o'), /needs a provider/);
    assert.deepEqual(parseModelSpec('ollama:qwen2.5-coder:7b'), {
      provider: 'ollama',
      model: 'qwen2.5-coder:7b',
    });
  });
});
