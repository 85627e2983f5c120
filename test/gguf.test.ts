import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_CONFIG } from '../src/config/config.ts';
import { openLlm } from '../src/llm/provider.ts';
import { indexLexically, makeTree, removeTree, runCli, trustProjectFile } from './helpers.ts';

// provisioned by scripts/fetch-test-gguf.sh (run by scripts/test.sh and CI): node-llama-cpp's prebuilt CPU runtime
// and a tiny llama model written by llama.cpp's own GGUF writer (random weights: it speaks gibberish, for real)
const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'quarry');
const RUNTIME = join(cache, 'gguf-runtime');
const MODEL = join(cache, 'test-models', 'tiny-llama.gguf');
if (!existsSync(MODEL) || !existsSync(join(RUNTIME, 'node_modules', 'node-llama-cpp')))
  throw new Error('no test GGUF model or runtime: run ./scripts/fetch-test-gguf.sh first');

describe('the in-process GGUF provider (node-llama-cpp, no server)', () => {
  let root: string;
  before(async () => {
    process.env.QUARRY_NODE_LLAMA_CPP = RUNTIME;
    root = makeTree({
      'src/config.py':
        'def parse_config(path):\n    """Read the settings file."""\n    return open(path).read()\n',
      'quarry.toml': '[llm]\nmax_output_tokens = 24\n',
    });
    await indexLexically(root);
  });
  after(() => removeTree(root));

  it('loads the model, reports its window, and streams generated text', async () => {
    const llm = await openLlm({ ...DEFAULT_CONFIG.llm, maxOutputTokens: 16 }, `gguf:${MODEL}`);
    assert.equal(llm.id, `gguf:${MODEL}`);
    assert.equal(llm.contextWindow, 4096, 'the window the model file declares');
    const pieces: string[] = [];
    for await (const p of llm.stream(
      [
        { role: 'system', content: 'Answer briefly.' },
        { role: 'user', content: 'Where is the configuration parsed?' },
      ],
      { maxOutputTokens: 16, temperature: 0 },
    ))
      pieces.push(p);
    assert.ok(pieces.length > 0, 'tokens were generated');
    assert.ok(pieces.join('').length > 0);
  });

  it('answers `quarry ask --model gguf:…` end to end, in process', () => {
    const r = runCli(
      ['--root', root, 'ask', '--model', `gguf:${MODEL}`, '--show-sources', 'where is the config parsed?'],
      {
        env: { QUARRY_NODE_LLAMA_CPP: RUNTIME },
      },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /sources:\n\[1\] src\/config\.py:1-3/);
    const answer = r.stdout.slice(0, r.stdout.indexOf('sources:'));
    assert.ok(answer.trim().length > 0, 'the model wrote something');
  });

  it('re-ranks search results in process (search.rerank.protocol = "llm"), keeping every result', async () => {
    const base = runCli(['--root', root, 'search', 'read the settings file', '--json'], {
      env: { QUARRY_NODE_LLAMA_CPP: RUNTIME },
    });
    assert.equal(base.code, 0, base.stderr);
    writeFileSync(
      join(root, 'quarry.toml'),
      `[llm]\nmax_output_tokens = 24\n[search.rerank]\nprotocol = "llm"\nmodel = "gguf:${MODEL}"\ntimeout_ms = 60000\n`,
    );
    trustProjectFile(root);
    try {
      const r = runCli(['--root', root, 'search', 'read the settings file', '--json'], {
        env: { QUARRY_NODE_LLAMA_CPP: RUNTIME },
      });
      assert.equal(r.code, 0, r.stderr);
      const paths = (out: string) =>
        (JSON.parse(out).results as Array<{ path: string }>).map((x) => x.path).sort();
      // a model of random weights ranks at random, or answers no numbers and the fused order stands
      assert.deepEqual(paths(r.stdout), paths(base.stdout));
    } finally {
      writeFileSync(join(root, 'quarry.toml'), '[llm]\nmax_output_tokens = 24\n');
    }
  });

  it('says what to install when node-llama-cpp cannot be found', async () => {
    const saved = process.env.QUARRY_NODE_LLAMA_CPP;
    process.env.QUARRY_NODE_LLAMA_CPP = join(root, 'nowhere');
    try {
      await assert.rejects(
        openLlm(DEFAULT_CONFIG.llm, `gguf:${MODEL}`),
        /node-llama-cpp is not installed under/,
      );
      await assert.rejects(openLlm(DEFAULT_CONFIG.llm, 'gguf:/no/such/model.gguf'), /no GGUF model at/);
    } finally {
      process.env.QUARRY_NODE_LLAMA_CPP = saved;
    }
  });
});
