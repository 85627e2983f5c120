import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Tokenizer } from '@huggingface/tokenizers';
import { bundledModelDir, findWeights, sha256File } from '../src/embed/models.ts';
import { openEmbedder } from '../src/embed/open.ts';
import {
  createStaticEmbedder,
  distillStaticTable,
  openStaticEmbedder,
  readStaticTable,
  type StaticTable,
  splitCodeWords,
  staticTablePath,
  wordPieces,
  writeStaticTable,
} from '../src/embed/static.ts';
import { embedderContract } from './embedder-contract.ts';
import { makeTree, removeTree, testConfig } from './helpers.ts';

const weights = findWeights();
const dirs: string[] = [];
after(() => dirs.forEach(removeTree));

describe('the static tier: word pieces', () => {
  it('gives the ids BERT’s tokenizer gives, less punctuation, for code and prose', () => {
    const json = JSON.parse(readFileSync(join(bundledModelDir(), 'tokenizer.json'), 'utf8'));
    const config = JSON.parse(readFileSync(join(bundledModelDir(), 'tokenizer_config.json'), 'utf8'));
    const lib = new Tokenizer(json, config);
    const vocab = new Map<string, number>(Object.entries(json.model.vocab));
    const punctuation = new Set(
      [...vocab].filter(([t]) => /^(##)?[^\p{L}\p{N}]+$/u.test(t) || /^\[.*\]$/.test(t)).map(([, id]) => id),
    );
    const ours = wordPieces(vocab);
    for (const text of [
      'export function parseConfig(path: string): Settings { return JSON.parse(readFileSync(path)); }',
      'def read_http_response(self, sock):\n    """Réad the HTTPServer’s answer, naïvely."""',
      'SELECT * FROM users WHERE id = 42; -- 3.14159 x2 Über',
      'fn main() { let 变量 = "日本語"; println!("{}", 变量); }',
      '',
    ]) {
      const expected = lib.encode(splitCodeWords(text)).ids.filter((id: number) => !punctuation.has(id));
      assert.deepEqual(ours(text), expected, text);
    }
    assert.equal(splitCodeWords('parseHTTPResponse_v2'), 'parse HTTP Response v2');
  });
});

describe('the static tier: distilled from the installed weights', { skip: !weights && 'no weights' }, () => {
  let table: StaticTable;
  before(async () => {
    // the first 3,000 content tokens: the whole table is the same computation over 29,523 (bench/static-distill.ts)
    const seen: number[] = [];
    table = await distillStaticTable(weights!, { limit: 3000, threads: 1, onProgress: (d) => seen.push(d) });
    assert.deepEqual(seen.at(-1), 3000, 'progress reaches the end');
  });

  embedderContract(async () => createStaticEmbedder(table));

  it('keeps the table in the model cache, named by the weights’ hash, and opens it from there', async () => {
    const sha = await sha256File(weights!);
    assert.equal(table.sourceSha256, sha);
    const cache = makeTree({});
    dirs.push(cache);
    const env = { XDG_CACHE_HOME: cache, QUARRY_MODEL_DIR: join(weights!, '..') };
    const path = staticTablePath(sha, env);
    writeStaticTable(path, table);
    const back = readStaticTable(path);
    assert.equal(back.dims, 256);
    assert.deepEqual(back.vectors.subarray(0, 5000), table.vectors.subarray(0, 5000));
    // the provider finds it and distils nothing
    const notices: string[] = [];
    const e = await openEmbedder(testConfig({ embed: { provider: 'static' } as never }), {
      env,
      onNotice: (m) => notices.push(m),
    });
    assert.ok(e, notices.join('\n'));
    assert.match(e.id, /^static:all-MiniLM-L6-v2-distilled-256\/words@[0-9a-f]{8}$/);
    assert.equal(e.dimension, 256);
    assert.deepEqual(notices, []);
    // a table cut short is refused with what to do
    writeFileSync(path, readFileSync(path).subarray(0, 1000));
    assert.throws(() => readStaticTable(path), /cut short: delete it/);
    assert.ok(existsSync(path));
  });

  it('ranks a text about the same thing above one about something else', async () => {
    const e = createStaticEmbedder(table);
    const [q, near, far] = await e.embed(
      ['open the file and read the text', 'read text from a file that was opened', 'the army won the war'],
      'document',
    );
    const cos = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);
    assert.ok(cos(q!, near!) > cos(q!, far!), `${cos(q!, near!)} vs ${cos(q!, far!)}`);
  });
});

describe('the shipped code table (embed.static_table = "code-v1")', () => {
  it('loads by name with its pinned sha256, and ranks code by what it does', async () => {
    const e = await openStaticEmbedder('', '', { table: 'code-v1' });
    assert.equal(e.id, 'static:code-v1-256/words@a7dfed5f');
    const [q] = await e.embed(['parse the configuration file'], 'query');
    const [near, far] = await e.embed(
      [
        'def load_config(path):\n    with open(path) as f:\n        return toml.parse(f.read())',
        'def draw_circle(canvas, radius):\n    canvas.arc(0, 0, radius)',
      ],
      'document',
    );
    const cos = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);
    assert.ok(cos(q!, near!) > cos(q!, far!), `${cos(q!, near!)} vs ${cos(q!, far!)}`);
    await assert.rejects(
      openStaticEmbedder('', '', { table: 'code-v9' }),
      /no such file \(a path, or code-v1\)/,
    );
  });
});

describe('a table with its own vocabulary (a code vocabulary, train/train_static_v2.py)', () => {
  it('spells words with the table’s vocabulary, not MiniLM’s, and refuses a vocabulary that does not fit', async () => {
    // four pieces, two dimensions: "parse" and "config" point one way, "draw" the other
    const vocab = ['[UNK]', 'parse', 'config', 'draw'];
    const table: StaticTable = {
      vectors: new Float32Array([0, 0, 1, 0, 1, 0.1, 0, 1]),
      dims: 2,
      vocabSize: vocab.length,
      sourceSha256: 'code-vocab-test',
      vocab,
    };
    const dir = makeTree({});
    dirs.push(dir);
    const file = join(dir, 'table.bin');
    writeStaticTable(file, table);
    const read = readStaticTable(file);
    assert.deepEqual(read.vocab, vocab);
    const e = createStaticEmbedder(read, 'static:test');
    // MiniLM's vocabulary would spell these with its own ids (thousands), far past this table's four rows
    assert.equal(e.countTokens('parseConfig draw'), 3);
    const [a, b, c] = await e.embed(['parse the config', 'parseConfig', 'draw'], 'document');
    const cos = (x: Float32Array, y: Float32Array) => x.reduce((s, v, i) => s + v * y[i]!, 0);
    assert.ok(cos(a!, b!) > 0.99 && cos(a!, c!) < 0.2, `${cos(a!, b!)} ${cos(a!, c!)}`);
    writeFileSync(
      file,
      Buffer.concat([
        Buffer.from(`QSTATIC1${JSON.stringify({ dims: 2, vocabSize: 4, source: 'x', vocab: ['a', 'b'] })}\n`),
        Buffer.alloc(4 * 2 * 4),
      ]),
    );
    assert.throws(() => readStaticTable(file), /vocabulary that does not fit/);
  });
});
