import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { describe, it } from 'node:test';
import { resolveConfig } from '../src/config/config.ts';
import { createLocalEmbedder, cudaProvider } from '../src/embed/local.ts';
import { findWeights } from '../src/embed/models.ts';
import { embedQuery } from '../src/project/local/index.ts';
import { embedderContract } from './embedder-contract.ts';
import { REPO } from './helpers.ts';

// The real model: provisioned by scripts/fetch-test-weights.sh (run by scripts/test.sh and CI).
const weights = findWeights();
if (!weights) throw new Error('no embedding weights: run ./scripts/fetch-test-weights.sh first');

describe('local ONNX embedder: the embedder contract', () => {
  embedderContract(() => createLocalEmbedder({ weights, threads: 1 }));
});

describe('local ONNX embedder with the real all-MiniLM-L6-v2 weights', () => {
  it('reproduces the model card’s similarity for a known pair', async () => {
    const e = await createLocalEmbedder({ weights, threads: 1 });
    const [a, b] = await e.embed(['A man is eating food.', 'A man is eating a piece of bread.'], 'document');
    const sim = a!.reduce((s, x, i) => s + x * b![i]!, 0);
    // sentence-transformers reports 0.7553 for fp32; int8 weights stay within a few thousandths
    assert.ok(Math.abs(sim - 0.7553) < 0.02, `similarity ${sim}`);
    await e.close();
  });

  it('ranks a config-parsing function above an HTTP handler for "parse a configuration file"', async () => {
    const e = await createLocalEmbedder({ weights, threads: 1 });
    const [q, config, http] = await e.embed(
      [
        'parse a configuration file',
        'def load_settings(path):\n    """Read the YAML settings file."""\n    with open(path) as fh:\n        return yaml.safe_load(fh)',
        'func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {\n  w.WriteHeader(200)\n}',
      ],
      'query',
    );
    const cos = (x: Float32Array, y: Float32Array) => x.reduce((s, v, i) => s + v * y[i]!, 0);
    assert.ok(cos(q!, config!) > cos(q!, http!) + 0.1, `${cos(q!, config!)} vs ${cos(q!, http!)}`);
    await e.close();
  });

  it('says how much of a long query the model read, so fusion can weigh the dense list by it', async () => {
    const e = await createLocalEmbedder({ weights, threads: 1 });
    const short = await embedQuery(e, 'where is the writer lock taken');
    assert.equal(short.coverage, 1);
    const [plain] = await e.embed(['where is the writer lock taken'], 'query');
    assert.deepEqual(short.vector, plain);
    // 600 one-piece words: the model reads its 256-token window less [CLS] and [SEP]
    const long = await embedQuery(e, Array.from({ length: 600 }, () => 'lock').join(' '));
    assert.ok(Math.abs(long.coverage - 254 / 600) < 1e-9, `coverage ${long.coverage}`);
    await e.close();
  });
});

describe('a custom ONNX model folder (embed.provider = "onnx")', () => {
  it('loads its own tokenizer and weights, probes the dimension, and applies query/document prefixes', async () => {
    const { cpSync, copyFileSync, mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { bundledModelDir } = await import('../src/embed/models.ts');
    const { openEmbedder } = await import('../src/embed/open.ts');
    const { testConfig } = await import('./helpers.ts');
    const dir = mkdtempSync(join(tmpdir(), 'quarry-onnx-'));
    try {
      cpSync(bundledModelDir(), dir, { recursive: true });
      copyFileSync(weights, join(dir, 'model.onnx'));
      const base = { download: false, workers: 0, threads: 1, modelDir: dir } as const;
      const plain = await openEmbedder(
        testConfig({ embed: { ...base, provider: 'onnx', model: 'my-code-model' } }),
      );
      const prefixed = await openEmbedder(
        testConfig({ embed: { ...base, provider: 'onnx', model: 'my-code-model', queryPrefix: 'query: ' } }),
      );
      assert.match(plain!.id, /^onnx:my-code-model@[0-9a-f]{8}$/);
      assert.equal(plain!.dimension, 384);
      assert.equal(plain!.maxTokens, 512, "from the folder's tokenizer_config.json");
      const [a] = await plain!.embed(['find the parser'], 'query');
      const [b] = await prefixed!.embed(['find the parser'], 'query');
      const [c] = await prefixed!.embed(['find the parser'], 'document');
      assert.notDeepEqual(a, b);
      assert.deepEqual(a, c, 'no document prefix was set');
      await plain!.close();
      await prefixed!.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('embed.device', () => {
  it('runs on the CPU when CUDA is asked for but not installed, says so once, and gives the CPU’s vectors', async () => {
    assert.equal(cudaProvider().ok, false, 'this machine has no CUDA provider installed');
    const notices: string[] = [];
    const gpu = await createLocalEmbedder({
      weights,
      threads: 1,
      device: 'cuda',
      onNotice: (m) => notices.push(m),
    });
    const cpu = await createLocalEmbedder({ weights, threads: 1, device: 'cpu' });
    const texts = ['read the settings file', 'open a socket'];
    assert.deepEqual(await gpu.embed(texts, 'document'), await cpu.embed(texts, 'document'));
    await gpu.embed(texts, 'query');
    assert.equal(notices.length, 1, notices.join('\n'));
    assert.match(
      notices[0]!,
      /embedding on the CPU: CUDA was asked for, but .*npm rebuild -g onnxruntime-node/,
    );
    assert.equal(gpu.id, cpu.id, 'the device does not change what the vectors are');
    await gpu.close();
    await cpu.close();
  });

  it('is checked in settings and the environment', () => {
    assert.throws(
      () => resolveConfig({ root: REPO, userConfig: false, env: { QUARRY_EMBED_DEVICE: 'tpu' } }),
      /QUARRY_EMBED_DEVICE must be auto, cpu or cuda, got "tpu"/,
    );
    assert.equal(
      resolveConfig({ root: REPO, userConfig: false, env: { QUARRY_EMBED_DEVICE: 'cuda' } }).embed.device,
      'cuda',
    );
  });
});

describe('onnxruntime in a quarry process', () => {
  it('leaves no empty /tmp/mat-debug-<pid>.log behind (issue 65: its telemetry SDK wrote one per process)', () => {
    // a process of its own for each way quarry embeds: on this thread (a search), and on the worker pool (an index
    // run: the workers' runtime reads the environment the main thread set); the log is named by the process's id
    const local = new URL('../src/embed/local.ts', import.meta.url).href;
    const pool = new URL('../src/embed/worker-pool.ts', import.meta.url).href;
    const scripts = {
      thread: `
        const { createLocalEmbedder } = await import(${JSON.stringify(local)});
        const e = await createLocalEmbedder({ weights: ${JSON.stringify(weights)}, threads: 1 });
        await e.embed(['open the writer lock'], 'document');
        await e.close();`,
      workers: `
        const { createWorkerEmbedder } = await import(${JSON.stringify(pool)});
        const stub = { id: 'stub', dimension: 384, maxTokens: 256, countTokens: (t) => t.length, embed: async () => [], close: async () => {} };
        const e = createWorkerEmbedder({ local: stub, weights: ${JSON.stringify(weights)}, workers: 1, threads: 1 });
        await e.embed(['open the writer lock'], 'document');
        await e.close();`,
    };
    const env = { ...process.env };
    delete env.ORT_DISABLE_TELEMETRY;
    for (const [way, script] of Object.entries(scripts)) {
      const pid = execFileSync(
        process.execPath,
        [
          '--import',
          'tsx',
          '--input-type=module',
          '-e',
          `${script}\nprocess.stdout.write(String(process.pid));`,
        ],
        { cwd: REPO, env, encoding: 'utf8' },
      ).trim();
      assert.match(pid, /^\d+$/);
      const log = `/tmp/mat-debug-${pid}.log`;
      const left = existsSync(log);
      rmSync(log, { force: true });
      assert.equal(left, false, `embedding on the ${way} left ${log} behind`);
    }
  });
});
