import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { openEmbedder } from '../src/embed/open.ts';
import { createRemoteEmbedder, type RemoteProvider } from '../src/embed/remote.ts';
import { embedderContract } from './embedder-contract.ts';
import { testConfig } from './helpers.ts';

/**
 * A real HTTP server on 127.0.0.1 that speaks the Ollama, OpenAI and Gemini embedding protocols, with vectors made
 * from the text's hash (a stand-in for the remote model, not for any part of quarry).
 */
const DIM = 12;
function fakeVector(text: string): number[] {
  const h = createHash('sha256').update(text).digest();
  return Array.from({ length: DIM }, (_, i) => (h[i]! - 128) / 128);
}

interface Served {
  url: string;
  requests: Array<{ path: string; headers: IncomingMessage['headers']; body: Record<string, unknown> }>;
  /** Status codes to answer before answering properly (429, 503, …). */
  failFirst: number[];
  close(): Promise<void>;
}

async function serve(): Promise<Served> {
  const served = { requests: [], failFirst: [] } as unknown as Served;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (d) => {
      raw += d;
    });
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as Record<string, unknown>;
      served.requests.push({ path: req.url ?? '', headers: req.headers, body });
      const fail = served.failFirst.shift();
      if (fail) {
        res.writeHead(fail, fail === 429 ? { 'retry-after': '0' } : {});
        res.end('busy');
        return;
      }
      const send = (json: unknown) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(json));
      };
      if (req.url === '/api/embed') {
        if (body.model !== 'nomic-embed-text') {
          res.writeHead(404);
          res.end(`model "${body.model}" not found, try pulling it first`);
          return;
        }
        send({ model: body.model, embeddings: (body.input as string[]).map(fakeVector) });
      } else if (req.url === '/v1/embeddings') {
        if (req.headers.authorization !== 'Bearer test-key') {
          res.writeHead(401);
          res.end('{"error":"invalid api key"}');
          return;
        }
        // answer out of order: clients must sort by index
        const data = (body.input as string[]).map((t, index) => ({
          object: 'embedding',
          index,
          embedding: fakeVector(t),
        }));
        send({ object: 'list', data: data.reverse(), model: body.model });
      } else if (req.url?.endsWith(':batchEmbedContents')) {
        const requests = body.requests as Array<{ content: { parts: Array<{ text: string }> } }>;
        send({ embeddings: requests.map((r) => ({ values: fakeVector(r.content.parts[0]!.text) })) });
      } else {
        res.writeHead(404);
        res.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  served.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  served.close = () => new Promise((resolve) => server.close(() => resolve()));
  return served;
}

let server: Served;
before(async () => {
  server = await serve();
});
after(() => server.close());

const MODELS: Record<RemoteProvider, string> = {
  ollama: 'nomic-embed-text',
  openai: 'text-embedding-3-small',
  gemini: 'text-embedding-004',
};

for (const provider of ['ollama', 'openai', 'gemini'] as const) {
  describe(`${provider} embedder: the embedder contract`, () => {
    embedderContract(() =>
      createRemoteEmbedder({
        provider,
        model: MODELS[provider],
        baseUrl: server.url,
        apiKey: 'test-key',
        backoffMs: 1,
      }),
    );
  });
}

describe('remote embedders', () => {
  it('batch requests and keep input order', async () => {
    const e = await createRemoteEmbedder({
      provider: 'openai',
      model: 'm',
      baseUrl: server.url,
      apiKey: 'test-key',
      batchSize: 2,
    });
    server.requests.length = 0;
    const texts = ['one', 'two', 'three', 'four', 'five'];
    const vecs = await e.embed(texts, 'document');
    assert.equal(server.requests.length, 3);
    const [three] = await e.embed(['three'], 'document');
    assert.deepEqual(vecs[2], three);
  });

  it('send the model’s query and document prefixes (nomic) and Gemini’s task types', async () => {
    const nomic = await createRemoteEmbedder({
      provider: 'ollama',
      model: 'nomic-embed-text',
      baseUrl: server.url,
    });
    server.requests.length = 0;
    await nomic.embed(['find the parser'], 'query');
    await nomic.embed(['def parse(): ...'], 'document');
    assert.deepEqual(
      server.requests.map((r) => r.body.input),
      [['search_query: find the parser'], ['search_document: def parse(): ...']],
    );
    const gemini = await createRemoteEmbedder({
      provider: 'gemini',
      model: 'text-embedding-004',
      baseUrl: server.url,
      apiKey: 'k',
    });
    server.requests.length = 0;
    await gemini.embed(['q'], 'query');
    const req = server.requests[0]!;
    assert.equal(req.headers['x-goog-api-key'], 'k');
    assert.equal((req.body.requests as Array<{ taskType: string }>)[0]!.taskType, 'RETRIEVAL_QUERY');
  });

  it('retry 429 and 5xx with backoff, then succeed', async () => {
    const e = await createRemoteEmbedder({
      provider: 'openai',
      model: 'm',
      baseUrl: server.url,
      apiKey: 'test-key',
      backoffMs: 1,
    });
    server.failFirst.push(429, 503, 500);
    server.requests.length = 0;
    const [v] = await e.embed(['retry me'], 'document');
    assert.equal(v!.length, DIM);
    assert.equal(server.requests.length, 4);
  });

  it('say what to fix: a refused key, a missing model, an unreachable server, a missing key variable', async () => {
    await assert.rejects(
      createRemoteEmbedder({ provider: 'openai', model: 'm', baseUrl: server.url, apiKey: 'wrong' }),
      /refused the request \(401\): set OPENAI_API_KEY/,
    );
    await assert.rejects(
      createRemoteEmbedder({ provider: 'ollama', model: 'no-such-model', baseUrl: server.url }),
      /has no model "no-such-model".*run `ollama pull no-such-model`/,
    );
    // a port that was free a moment ago: nothing listens there
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const closed = `http://127.0.0.1:${port}`;
    await assert.rejects(
      createRemoteEmbedder({ provider: 'ollama', model: 'x', baseUrl: closed, retries: 1, backoffMs: 1 }),
      (err: Error) =>
        err.message.startsWith(
          `cannot reach ollama at ${closed} (ECONNREFUSED): start it with \`ollama serve\``,
        ),
    );
    const config = testConfig({ embed: { provider: 'openai', download: false, workers: 0, threads: 0 } });
    await assert.rejects(openEmbedder(config, { env: {} }), /OPENAI_API_KEY is not set: export it/);
  });

  it('join a base_url with or without the API prefix into one path: never /v1/v1/embeddings', async () => {
    // regression: base_url "http://host:port/v1" (as LM Studio, vLLM and llama.cpp print it) became /v1/v1/embeddings
    const cases: Array<[RemoteProvider, string[], RegExp]> = [
      ['openai', ['/v1', '/v1/', '', '/'], /^\/v1\/embeddings$/],
      ['ollama', ['/api', '/api/', ''], /^\/api\/embed$/],
      ['gemini', ['/v1beta', '/v1beta/', ''], /^\/v1beta\/models\/text-embedding-004:batchEmbedContents$/],
    ];
    for (const [provider, tails, path] of cases)
      for (const tail of tails) {
        server.requests.length = 0;
        const baseUrl = `${server.url}${tail}`;
        const e = await createRemoteEmbedder({
          provider,
          model: MODELS[provider],
          baseUrl,
          apiKey: 'test-key',
        });
        await e.embed(['one'], 'document');
        assert.ok(server.requests.length > 0);
        for (const r of server.requests) assert.match(r.path, path, `${provider} at ${baseUrl}`);
      }
  });

  it('are chosen by config, with keys from the environment', async () => {
    const config = testConfig({
      embed: {
        provider: 'openai',
        model: 'text-embedding-3-small',
        baseUrl: server.url,
        download: false,
        workers: 0,
        threads: 0,
      },
    });
    const e = await openEmbedder(config, { env: { OPENAI_API_KEY: 'test-key' } });
    assert.equal(e?.id, 'openai:text-embedding-3-small');
    assert.equal(e?.dimension, DIM);
  });
});
