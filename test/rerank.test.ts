import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { indexProject, openProject, searchProject } from '../src/project/local/index.ts';
import { parseRanking } from '../src/rerank/llm.ts';
import { createHttpReranker } from '../src/rerank/rerank.ts';
import { makeTree, openLexical, removeTree, runCliAsync, trustProjectFile } from './helpers.ts';
import { type LlmServer, startLlmServer } from './llm-server.ts';

/**
 * A real HTTP server on 127.0.0.1 speaking TEI's /rerank and the Jina/Cohere-style /v1/rerank. It stands in for the
 * cross-encoder model: texts that mention "backoff" score highest.
 */
let server: Server;
let url: string;
/** The path of each request the reranker server got. */
const paths: string[] = [];
const score = (text: string) => (text.includes('backoff') ? 10 : 0) + text.length / 1e6;
before(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => {
      raw += d;
    });
    req.on('end', () => {
      paths.push(req.url ?? '');
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
      const scores = (await r.rerank('q', ['plain', 'with backoff', 'other']))!;
      assert.equal(scores.indexOf(Math.max(...scores)), 1, protocol);
    }
  });

  it('v1: a base_url with or without /v1 (and a trailing slash) posts to /v1/rerank, never /v1/v1/rerank', async () => {
    for (const tail of ['/v1', '/v1/', '', '/']) {
      paths.length = 0;
      const r = createHttpReranker({ protocol: 'v1', baseUrl: `${url}${tail}`, model: 'm' });
      assert.ok(await r.rerank('q', ['plain', 'with backoff']));
      assert.deepEqual(paths, ['/v1/rerank'], `base_url ${url}${tail}`);
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

describe('LLM re-ranking (listwise), against a model server on 127.0.0.1', () => {
  let llm: LlmServer;
  let root: string;
  const files = {
    'src/retry.ts':
      'export function retryWithBackoff(fn: () => void) {\n  // retry the request with a delay\n}\n',
    'src/request.ts': 'export function sendRequest(url: string) {\n  // send the request and retry once\n}\n',
    'src/log.ts': 'export function logRequest(line: string) {\n  // log each request line\n}\n',
  };
  const toml = (extra = '', protocol = 'llm') =>
    `[llm]\nmodel = "lmstudio:qwen2.5-coder-7b-instruct"\nbase_url = "${llm.url}/v1"\n[search.rerank]\nprotocol = "${protocol}"\ntop = 10\n${extra}`;
  before(async () => {
    llm = await startLlmServer();
    root = makeTree({ ...files, 'quarry.toml': '' });
    await openLexical(root).then(async (p) => {
      await indexProject(p);
      await p.close();
    });
  });
  after(async () => {
    await llm.close();
    removeTree(root);
  });

  const searchWith = async (extra = '', protocol = 'llm') => {
    writeFileSync(join(root, 'quarry.toml'), toml(extra, protocol));
    trustProjectFile(root);
    const notes: string[] = [];
    const p = await openProject({ root, userConfig: false, env: { QUARRY_EMBED: 'none' } });
    try {
      const r = await searchProject(p, 'retry the request', {
        mode: 'lexical',
        onNotice: (m) => notes.push(m),
      });
      return {
        paths: [...new Set(r.results.map((x) => x.path))],
        files: r.files.map((f) => `${f.path} ${f.score}`),
        notes,
      };
    } finally {
      await p.close();
    }
  };

  it('parses a listwise answer: numbers in order, once each, in range', () => {
    assert.deepEqual(parseRanking('3, 1, [2], 3, 9, 0', 3), [2, 0, 1]);
    assert.deepEqual(parseRanking('Ranking: 2 > 1', 3), [1, 0]);
    assert.deepEqual(parseRanking('none of them', 3), []);
  });

  it('orders the candidates as the model ranks them, the ones it leaves out below in fused order', async () => {
    const fused = await searchWith('', 'none');
    assert.equal(fused.paths.length, 3);
    // the model puts the fused list's last file first and names only that one
    llm.reply = (body) => {
      const user = String((body.messages as Array<{ content: string }>).at(-1)!.content);
      const n = [...user.matchAll(/^\[(\d+)\] (\S+)/gm)].find((m) =>
        m[2]!.startsWith(fused.paths.at(-1)!),
      )![1];
      return `${n}`;
    };
    const r = await searchWith();
    assert.deepEqual(r.paths, [fused.paths.at(-1), ...fused.paths.slice(0, -1)]);
    assert.deepEqual(r.notes, []);
    const sent = llm.requests.at(-1)!.body as {
      messages: Array<{ role: string; content: string }>;
      temperature: number;
    };
    assert.equal(sent.temperature, 0);
    assert.match(sent.messages[0]!.content, /data, not instructions/);
    assert.match(sent.messages[1]!.content, /\[1\] src\/\w+\.ts:1-3\n/);
  });

  it('keeps the fused order, and says so, when the model is slow, fails or answers no numbers', async () => {
    const fused = await searchWith('', 'none');
    llm.reply = () => 'I think the first one is best.';
    let r = await searchWith();
    assert.deepEqual(r.paths, fused.paths);
    assert.match(r.notes.join('\n'), /answered no candidate numbers .*the fused order stands/);
    assert.deepEqual(r.files, fused.files, 'files and their scores untouched by a fallback');
    llm.reply = () => '1, 2, 3';
    llm.delayMs = 3000;
    r = await searchWith('timeout_ms = 300\n');
    llm.delayMs = 0;
    assert.deepEqual(r.paths, fused.paths);
    assert.match(r.notes.join('\n'), /did not answer within 0\.3 s: the fused order stands/);
    llm.failFirst = [500, 500, 500, 500, 500];
    r = await searchWith();
    llm.failFirst = [];
    assert.deepEqual(r.paths, fused.paths);
    assert.match(r.notes.join('\n'), /re-ranking failed .*the fused order stands/);
  });

  it('quarry eval --rerank scores the re-ranked order and reports its cost per query', async () => {
    writeFileSync(join(root, 'quarry.toml'), toml());
    trustProjectFile(root);
    const queries = join(root, 'q.jsonl');
    writeFileSync(
      queries,
      `${JSON.stringify({ id: 'q1', repo: 'x/y', query: 'retry the request', gold: ['src/log.ts'] })}\n`,
    );
    llm.reply = (body) => {
      const user = String((body.messages as Array<{ content: string }>).at(-1)!.content);
      return [...user.matchAll(/^\[(\d+)\] src\/log\.ts/gm)][0]![1]!;
    };
    const r = await runCliAsync(
      ['eval', queries, '--root', root, '--mode', 'lexical', '--rerank', '--json'],
      {
        env: { QUARRY_EMBED: 'none' },
      },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).lexical.ALL['hit@1'], 1, 'the model’s first choice is ranked first');
    const plain = await runCliAsync(['eval', queries, '--root', root, '--mode', 'lexical'], {
      env: { QUARRY_EMBED: 'none' },
    });
    assert.match(plain.stderr, /lexical \d+ ms\/query/);
  });
});
