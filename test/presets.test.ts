import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Tokenizer } from '@huggingface/tokenizers';
import { bundledModelDir } from '../src/embed/models.ts';
import { openEmbedder } from '../src/embed/open.ts';
import { downloadPreset, PRESETS, presetDir, readPin } from '../src/embed/presets.ts';
import { testConfig } from './helpers.ts';
import { standinExpected, standinOnnx } from './onnx-standin.ts';

/**
 * Every preset's pipeline, with a stand-in ONNX file of the model's inputs, output and dimension (the real weights
 * cannot be downloaded here): pooling, prefixes, truncation, normalisation and the recorded dimension are checked
 * against what the stand-in computes by hand. The stand-in reads the bundled WordPiece tokenizer.
 */
const tokenizer = new Tokenizer(
  JSON.parse(readFileSync(join(bundledModelDir(), 'tokenizer.json'), 'utf8')),
  JSON.parse(readFileSync(join(bundledModelDir(), 'tokenizer_config.json'), 'utf8')),
);
const SEP = tokenizer.encode('').ids.at(-1)!;

function idsFor(text: string, maxTokens: number): number[] {
  const ids = tokenizer.encode(text).ids;
  if (ids.length <= maxTokens) return ids;
  const cut = ids.slice(0, maxTokens);
  cut[maxTokens - 1] = SEP;
  return cut;
}

function close(a: Float32Array, b: Float32Array): boolean {
  return a.length === b.length && a.every((x, i) => Math.abs(x - b[i]!) < 1e-4);
}

function standinFolder(dim: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'quarry-preset-'));
  cpSync(join(bundledModelDir(), 'tokenizer.json'), join(dir, 'tokenizer.json'));
  cpSync(join(bundledModelDir(), 'tokenizer_config.json'), join(dir, 'tokenizer_config.json'));
  writeFileSync(join(dir, 'model.onnx'), standinOnnx(dim));
  return dir;
}

const onnxPresets = Object.values(PRESETS).filter((p) => p.runtime === 'onnx');

describe('embedding presets (embed.model)', () => {
  for (const preset of onnxPresets)
    it(`${preset.name}: ${preset.pooling} pooling, its prefixes, ${preset.maxTokens} tokens, ${preset.dimension} dimensions`, async () => {
      const dir = standinFolder(preset.dimension);
      try {
        const embedder = await openEmbedder(
          testConfig({
            embed: { ...testConfig().embed, model: preset.name, modelDir: dir, download: false },
          }),
        );
        assert.ok(embedder);
        assert.match(embedder.id, new RegExp(`^onnx:${preset.name}@[0-9a-f]{8}$`));
        assert.equal(embedder.dimension, preset.dimension, 'the dimension recorded with the vectors');
        assert.equal(embedder.maxTokens, preset.maxTokens);
        const text = 'where is the retry loop of the HTTP client';
        const [q] = await embedder.embed([text], 'query');
        const [d] = await embedder.embed([text], 'document');
        const wantQ = standinExpected(
          idsFor(preset.queryPrefix + text, preset.maxTokens),
          preset.dimension,
          preset.pooling,
        );
        const wantD = standinExpected(
          idsFor(preset.documentPrefix + text, preset.maxTokens),
          preset.dimension,
          preset.pooling,
        );
        assert.ok(close(q!, wantQ), 'the query: its prefix, pooled as the model was trained');
        assert.ok(close(d!, wantD), 'a document: its prefix');
        assert.equal(close(q!, d!), preset.queryPrefix === preset.documentPrefix);
        // the other pooling would give another vector: the preset's choice is the one applied
        const other = standinExpected(
          idsFor(preset.queryPrefix + text, preset.maxTokens),
          preset.dimension,
          preset.pooling === 'cls' ? 'mean' : 'cls',
        );
        assert.ok(!close(q!, other));
        // truncation: a text past the model's length is cut at maxTokens word pieces, ending in [SEP]
        const long = Array.from({ length: preset.maxTokens + 200 }, (_, i) => `w${i % 50}`).join(' ');
        const [l] = await embedder.embed([long], 'document');
        assert.ok(
          close(
            l!,
            standinExpected(
              idsFor(preset.documentPrefix + long, preset.maxTokens),
              preset.dimension,
              preset.pooling,
            ),
          ),
        );
        assert.ok(Math.abs(Math.hypot(...l!) - 1) < 1e-4, 'normalised');
        await embedder.close();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

  it('refuses a folder whose model has another dimension, and weights that changed since they were pinned', async () => {
    const dir = standinFolder(256);
    try {
      const config = testConfig({
        embed: { ...testConfig().embed, model: 'bge-small-en', modelDir: dir, download: false },
      });
      await assert.rejects(openEmbedder(config), /gives 256-dimensional vectors, but bge-small-en has 384/);
      writeFileSync(join(dir, 'model.onnx'), standinOnnx(384));
      writeFileSync(join(dir, 'quarry-pin.json'), JSON.stringify({ sha256: '0'.repeat(64), source: 'test' }));
      await assert.rejects(openEmbedder(config), /changed since it was downloaded/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names the models it knows when embed.model is none of them', async () => {
    await assert.rejects(
      openEmbedder(testConfig({ embed: { ...testConfig().embed, model: 'jina-code' } })),
      /embed.model = "jina-code" is no model quarry knows: use one of all-MiniLM-L6-v2, jina-code-v2, coderankembed/,
    );
  });

  it('says how to get a preset whose repository ships no ONNX', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'quarry-cache-'));
    try {
      await assert.rejects(
        openEmbedder(testConfig({ embed: { ...testConfig().embed, model: 'coderankembed' } }), {
          env: { XDG_CACHE_HOME: cache },
        }),
        /coderankembed is not installed: .*optimum-cli export onnx --model nomic-ai\/CodeRankEmbed/,
      );
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  });
});

describe('downloading a preset (a hub on 127.0.0.1)', () => {
  let server: Server;
  let hub = '';
  const model = standinOnnx(384);
  let etag = createHash('sha256').update(model).digest('hex');
  const requests: string[] = [];
  before(async () => {
    server = createServer((req, res) => {
      requests.push(req.url ?? '');
      const base = '/BAAI/bge-small-en-v1.5/resolve/main/';
      if (req.url === `${base}onnx/model.onnx`) {
        res.writeHead(200, { 'content-length': model.length, 'x-linked-etag': `"${etag}"` });
        res.end(Buffer.from(model));
      } else if (req.url === `${base}tokenizer.json` || req.url === `${base}tokenizer_config.json`)
        res.end(readFileSync(join(bundledModelDir(), req.url.slice(base.length))));
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    hub = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  it('checks the weights against the hash the hub publishes, pins it, and then embeds from the cache', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'quarry-cache-'));
    try {
      const env = { XDG_CACHE_HOME: cache, QUARRY_HUB_URL: hub };
      const progress: number[] = [];
      const dir = await downloadPreset(PRESETS['bge-small-en']!, {
        env,
        onProgress: (file, bytes) => file.endsWith('.onnx') && progress.push(bytes),
      });
      assert.equal(dir, presetDir(PRESETS['bge-small-en']!, env));
      assert.equal(readPin(dir)?.sha256, etag);
      assert.equal(progress.at(-1), model.length);
      const embedder = await openEmbedder(
        testConfig({ embed: { ...testConfig().embed, model: 'bge-small-en' } }),
        {
          env,
        },
      );
      assert.equal(embedder?.dimension, 384);
      await embedder?.close();
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  });

  it('refuses weights whose hash is not the published one, and leaves no weights behind', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'quarry-cache-'));
    const good = etag;
    etag = 'f'.repeat(64);
    try {
      const env = { XDG_CACHE_HOME: cache, QUARRY_HUB_URL: hub };
      await assert.rejects(
        downloadPreset(PRESETS['bge-small-en']!, { env }),
        /could not download bge-small-en \(onnx\/model.onnx has sha256 [0-9a-f]{12}…, not ffffffffffff…\)/,
      );
      assert.equal(existsSync(join(presetDir(PRESETS['bge-small-en']!, env), 'model.onnx')), false);
    } finally {
      etag = good;
      rmSync(cache, { recursive: true, force: true });
    }
  });
});

describe('ollama:nomic-embed-code (an Ollama server on 127.0.0.1)', () => {
  it('asks for nomic-embed-code, with its code-search instruction on queries and bare documents', async () => {
    const seen: Array<{ model: string; input: string[] }> = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        const json = JSON.parse(body) as { model: string; input: string[] };
        seen.push(json);
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            embeddings: json.input.map(() => Array.from({ length: 3584 }, (_, i) => (i % 7) - 3)),
          }),
        );
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const embedder = await openEmbedder(
        testConfig({ embed: { ...testConfig().embed, model: 'ollama:nomic-embed-code', baseUrl } }),
      );
      await embedder!.embed(['retry loop'], 'query');
      await embedder!.embed(['def retry(): pass'], 'document');
      // (the first request probes the dimension)
      assert.deepEqual(seen.slice(-2), [
        {
          model: 'nomic-embed-code',
          input: ['Represent this query for searching relevant code: retry loop'],
          truncate: true,
        },
        { model: 'nomic-embed-code', input: ['def retry(): pass'], truncate: true },
      ]);
      assert.equal(embedder!.dimension, 3584);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
