import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { indexProject, openProject, searchProject } from '../src/api.ts';
import { createHttpReranker } from '../src/rerank/rerank.ts';
import { makeTree, openLexical, removeTree } from './helpers.ts';

/**
 * A real HTTP server on 127.0.0.1 speaking TEI's /rerank and the Jina/Cohere-style /v1/rerank. It stands in for the
 * cross-encoder model: texts that mention "backoff" score highest.
 */
let server: Server;
let url: string;
const score = (text: string) => (text.includes('backoff') ? 10 : 0) + text.length / 1e6;
before(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => {
      raw += d;
    });
    req.on('end', () => {
      const body = JSON.parse(raw) as { texts?: string[]; documents?: string[] };
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url === '/rerank') {
        const rows = body
          .texts!.map((t, index) => ({ index, score: score(t) }))
          .sort((a, b) => b.score - a.score);
        res.end(JSON.stringify(rows));
      } else {
        const results = body.documents!.map((t, index) => ({ index, relevance_score: score(t) }));
        res.end(JSON.stringify({ model: 'm', results }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('re-ranking', () => {
  it('reads scores in both protocols, in input order', async () => {
    for (const protocol of ['tei', 'v1'] as const) {
      const r = createHttpReranker({ protocol, baseUrl: url, model: 'm' });
      const scores = await r.rerank('q', ['plain', 'with backoff', 'other']);
      assert.equal(scores.indexOf(Math.max(...scores)), 1, protocol);
    }
  });

  it('re-orders the first candidates and the files when configured, and leaves search alone when not', async () => {
    const root = makeTree({
      'src/retry.ts': 'export function retry() {\n  // retry the request, retry it again, retry\n}\n',
      'src/wait.ts': 'export function wait() {\n  // retry after a backoff delay\n}\n',
    });
    try {
      const plain = await openLexical(root);
      await indexProject(plain);
      const before = await searchProject(plain, 'retry');
      await plain.close();
      assert.equal(before.files[0]?.path, 'src/retry.ts');
      const withRerank = await openProject({
        root,
        userConfig: false,
        overrides: { embed: { provider: 'none' }, search: { rerank: { protocol: 'tei', url, top: 10 } } },
      });
      const after = await searchProject(withRerank, 'retry');
      await withRerank.close();
      assert.equal(after.results[0]?.path, 'src/wait.ts');
      assert.equal(after.files[0]?.path, 'src/wait.ts');
    } finally {
      removeTree(root);
    }
  });

  it('says what to do when the reranker is away', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const r = createHttpReranker({ protocol: 'tei', baseUrl: `http://127.0.0.1:${port}`, retries: 0 });
    await assert.rejects(r.rerank('q', ['a']), /cannot reach the reranker .*set search\.rerank = "none"/);
  });
});
