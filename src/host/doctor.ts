import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { DEFAULT_CONFIG, projectTrust, type QuarryConfig, resolveConfig } from '../config/config.ts';
import {
  bundledModelDir,
  cacheModelDir,
  findWeights,
  sha256File,
  verifyWeights,
  weightsFileIn,
} from '../embed/models.ts';
import { pinnedSha256, presetDir, presetFor } from '../embed/presets.ts';
import { openProject } from '../project/local/index.ts';
import { loadQuarryBm25 } from '../store/native-rank.ts';
import { storeTarget, storeTraits } from '../store/open.ts';
import { indexPaths } from '../workspace/root.ts';

// What `quarry doctor` looks at, as data: every face (the CLI prints it, scripts read its JSON) asks this one
// function, and none of them opens a store, a model or a grammar itself.

export interface Check {
  name: string;
  ok: boolean | 'warn';
  detail: string;
}

async function timed<T>(what: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      what,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer in ${ms / 1000} s`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The checks made so far, in order; `attempt` records a failure as its first line and what to do. */
class Checks {
  readonly list: Check[] = [];
  add(name: string, ok: boolean | 'warn', detail: string): void {
    this.list.push({ name, ok, detail });
  }
  async attempt(name: string, fn: () => Promise<string> | string, fix: string): Promise<void> {
    try {
      this.add(name, true, await fn());
    } catch (err) {
      this.add(name, false, `${(err as Error).message.split('\n')[0]} — ${fix}`);
    }
  }
}

/** Everything `quarry doctor` looks at, each a line: what works, what does not, and what to do. */
export async function doctorChecks(root: string | undefined): Promise<Check[]> {
  const checks = new Checks();
  await checkInstall(checks);
  const config = resolveConfig(root ? { root, onNotice: () => {} } : {});
  if (root) checkTrust(checks, root);
  await checkWeights(checks, config);
  if (!root)
    checks.add('project', 'warn', `no project at or above ${process.cwd()}: run \`quarry index\` in one`);
  else await checkIndex(checks, config, root);
  await checkModelServer(checks, config);
  return checks.list;
}

/** The project's quarry.toml: trusted or not, and which of its settings wait for trust (config/trust.ts). */
function checkTrust(checks: Checks, root: string): void {
  const t = projectTrust(root);
  if (!t.exists) return;
  if (t.trusted)
    checks.add(
      'settings',
      true,
      `${t.file} is trusted${t.guarded.length ? `: ${t.guarded.join(', ')} apply` : ''}`,
    );
  else if (t.guarded.length)
    checks.add(
      'settings',
      'warn',
      `${t.file} is not trusted: ${t.guarded.join(', ')} ignored — review it, then run \`quarry trust\``,
    );
  else checks.add('settings', true, `${t.file} sets nothing that needs trust`);
}

/** Node, the native modules, the grammars and the tokenizer. */
async function checkInstall(checks: Checks): Promise<void> {
  const require = createRequire(import.meta.url);
  const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
  checks.add(
    'node',
    major > 20 || (major === 20 && minor >= 11),
    `${process.version}${major > 20 || (major === 20 && minor >= 11) ? '' : ' — quarry needs Node 20.11 or newer'}`,
  );
  await checks.attempt(
    'better-sqlite3',
    async () => {
      const { default: Database } = await import('better-sqlite3');
      const db = new Database(':memory:');
      const v = (db.prepare('select sqlite_version() v').get() as { v: string }).v;
      const { load } = await import('sqlite-vec');
      load(db);
      const vec = (db.prepare('select vec_version() v').get() as { v: string }).v;
      db.close();
      return `SQLite ${v}, sqlite-vec ${vec}, FTS5`;
    },
    'reinstall quarry (better-sqlite3 compiles from source and needs Node headers: npm_config_nodedir)',
  );
  {
    // optional: without it, lexical search ranks with FTS5's bm25(), the same lists, slower on a large index
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(':memory:');
    const loaded = loadQuarryBm25(db);
    db.close();
    checks.add(
      'quarry_bm25',
      loaded || 'warn',
      loaded
        ? 'built and loaded: pruned lexical searches score in one statement'
        : process.env.QUARRY_NATIVE_RANK === '0'
          ? 'off (QUARRY_NATIVE_RANK=0): searches rank with FTS5 bm25(), the same lists'
          : 'not built: searches rank with FTS5 bm25(), the same lists, slower on a large index; install a C compiler (cc) and run `npm rebuild -g quarry`',
    );
  }
  await checks.attempt(
    'onnxruntime-node',
    async () => {
      const ort = await import('onnxruntime-node');
      const pkg = require('onnxruntime-node/package.json') as { version: string };
      const bin = join(
        require.resolve('onnxruntime-node/package.json'),
        '..',
        'bin',
        'napi-v6',
        process.platform,
        process.arch,
      );
      const cuda = join(bin, 'libonnxruntime_providers_cuda.so');
      const gpu =
        existsSync(cuda) && statSync(cuda).size > 0
          ? 'CUDA files installed'
          : 'CPU (GPU files not installed)';
      return `${pkg.version} (${Object.keys(ort).includes('InferenceSession') ? 'loads' : 'incomplete'}), ${gpu}`;
    },
    'reinstall quarry',
  );
  await checks.attempt(
    'tree-sitter grammars',
    async () => {
      const { chunkFile } = await import('../chunk/chunker.ts');
      const r = await chunkFile(
        'export function probe(a: number) {\n  return a;\n}\n',
        'typescript',
        DEFAULT_CONFIG.chunk,
      );
      if (!r.chunks.some((c) => c.symbol === 'probe'))
        throw new Error('the TypeScript grammar found no function');
      const wasms = join(require.resolve('tree-sitter-wasms/package.json'), '..', 'out');
      return `web-tree-sitter loads grammars from ${wasms}`;
    },
    'reinstall quarry (web-tree-sitter must be 0.25.10 for tree-sitter-wasms 0.1.13)',
  );
  const tokenizer = join(bundledModelDir(), 'tokenizer.json');
  checks.add(
    'tokenizer',
    existsSync(tokenizer),
    existsSync(tokenizer) ? tokenizer : `${tokenizer} is missing — reinstall quarry`,
  );
}

/** The embedding model: its weights, present and matching their pinned hash, or the embedder configured. */
async function checkWeights(checks: Checks, config: QuarryConfig): Promise<void> {
  const preset = presetFor(config.embed.model);
  if (preset && preset.runtime === 'onnx' && config.embed.provider !== 'none') {
    const dir = config.embed.modelDir ?? presetDir(preset);
    const file = weightsFileIn(dir);
    if (!file)
      checks.add(
        'model weights',
        'warn',
        `${preset.name}: none in ${dir}: ${preset.download ? (config.embed.download ? 'the next `quarry index` downloads them' : 'allow the download (unset QUARRY_OFFLINE)') : preset.note}`,
      );
    else
      await checks.attempt(
        'model weights',
        async () => {
          const sha256 = await sha256File(file);
          const pinned = pinnedSha256(preset, dir);
          if (pinned && pinned !== sha256)
            throw new Error(`${file} has sha256 ${sha256.slice(0, 12)}…, pinned ${pinned.slice(0, 12)}…`);
          return `${preset.name} (${preset.model}) at ${file}, sha256 ${sha256.slice(0, 12)}…${pinned ? ' (pinned)' : ' (your own export: not pinned)'}`;
        },
        `delete ${dir} and let \`quarry index\` download it again`,
      );
  } else if (config.embed.provider === 'local' || config.embed.provider === 'static') {
    const weights = findWeights({ modelDir: config.embed.modelDir });
    if (!weights)
      checks.add(
        'model weights',
        'warn',
        `none in ${config.embed.modelDir ?? cacheModelDir()}: semantic search is off until \`quarry model install <model.onnx>\`${config.embed.download ? ' or the next `quarry index` downloads them' : ''}`,
      );
    else
      await checks.attempt(
        'model weights',
        async () => {
          const info = await verifyWeights(weights);
          return `all-MiniLM-L6-v2 ${info.variant} at ${info.path}, sha256 ${info.sha256.slice(0, 12)}… (pinned)`;
        },
        'install known weights with `quarry model install <model.onnx>`',
      );
  } else if (config.embed.provider === 'none')
    checks.add('embeddings', 'warn', 'off (embed.provider = "none"): lexical search only');
  else
    checks.add(
      'embeddings',
      true,
      `${config.embed.provider}${config.embed.model ? `:${config.embed.model}` : ''}${config.embed.baseUrl ? ` at ${config.embed.baseUrl}` : ''}`,
    );
}

/** The project's index: it opens, and its store's own consistency check passes. */
async function checkIndex(checks: Checks, config: QuarryConfig, root: string): Promise<void> {
  const target = storeTarget(config, root);
  await checks.attempt(
    'index',
    async () => {
      const traits = storeTraits(target);
      if (traits.file && !existsSync(traits.file)) return `none yet in ${root} (run \`quarry index\`)`;
      const project = await timed(openProject({ root }), 10_000);
      try {
        const s = await project.store.stats();
        // the driver's own consistency check (SQLite's integrity check, FTS5's, and quarry's invariants)
        const problems = await timed(project.store.check(), 120_000);
        if (problems.length)
          throw new Error(
            `${problems.length} problem${problems.length === 1 ? '' : 's'} in the index: ${problems.slice(0, 3).join('; ')}`,
          );
        return `${target.driver} ${project.location === root ? indexPaths(root).db : project.store.location}: ${s.files} files, ${s.chunks} chunks, consistent`;
      } finally {
        await project.close();
      }
    },
    storeTraits(target).file
      ? 'run `quarry reset` and index again'
      : 'check the store URL and that its server runs',
  );
}

/** The chat model's server, when one is configured and is not a cloud or in-process model. */
async function checkModelServer(checks: Checks, config: QuarryConfig): Promise<void> {
  const llm = config.llm;
  if (!llm.model) {
    checks.add('model server', 'warn', 'no model configured: ask and chat need --model or QUARRY_MODEL');
    return;
  }
  const { modelServerUrl } = await import('../llm/provider.ts');
  const url = modelServerUrl(llm);
  if (!url) checks.add('model server', true, `${llm.model} (not checked: a cloud or in-process model)`);
  else
    await checks.attempt(
      'model server',
      async () => {
        const res = await timed(fetch(url), 3000);
        return `${llm.model} at ${url} answers (HTTP ${res.status})`;
      },
      `start the model server, or set llm.base_url (it answered nothing at ${url})`,
    );
}
