import { Worker, type WorkerOptions } from 'node:worker_threads';

/** The worker modules, by their path under src/ (and dist/). */
export type WorkerModule = 'indexing/worker' | 'embed/worker' | 'store/dense-worker' | 'store/write-worker';

// Set by scripts/bundle.mjs: the CLI's bundle lives in dist/bundle/, one folder below the modules it starts.
declare const __QUARRY_BUNDLE__: boolean | undefined;

/**
 * Starts a worker thread running one of quarry's worker modules. Built, the module's .js file in dist/ runs as it is
 * (also from the CLI's bundle, which sits in dist/bundle/); from source under tsx (tests, development), workers do
 * not inherit tsx's loader, so it is registered first. Node flags are inherited (`workerExecArgv`).
 */
export function startWorker(
  module: WorkerModule,
  workerData: unknown,
  options: Pick<WorkerOptions, 'resourceLimits'> = {},
): Worker {
  const fromSource = import.meta.url.endsWith('.ts');
  const base = typeof __QUARRY_BUNDLE__ !== 'undefined' && __QUARRY_BUNDLE__ ? '../' : './';
  const href = new URL(`${base}${module}${fromSource ? '.ts' : '.js'}`, import.meta.url).href;
  const start = (execArgv: string[]) => {
    if (!fromSource) return new Worker(new URL(href), { ...options, workerData, execArgv });
    const tsx = import.meta.resolve('tsx/esm/api');
    const code = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(href)}); });`;
    return new Worker(code, { ...options, eval: true, workerData, execArgv });
  };
  for (let attempt = 0; ; attempt++) {
    try {
      return start(workerExecArgv());
    } catch (err) {
      // a flag Node takes for the process but not for a worker: V8's (`node --max-old-space-size=8192 quarry …`,
      // `--liftoff-only`), which apply to the whole process and so to the worker anyway, or one that sets the
      // process (`--title`). The error names them; the worker starts without them, and so do later ones
      const refused = refusedFlags(err);
      if (!refused || attempt === 2) throw err;
      dropped.push(...refused);
    }
  }
}

/** Flags a worker refused in this process (see `startWorker`). */
const dropped: string[] = [];

/**
 * The node flags a worker inherits: the process's own, less `--input-type` (set by `node -e` hosts, it would make the
 * worker refuse its file) and those a worker refused before.
 */
export function workerExecArgv(
  argv: readonly string[] = process.execArgv,
  refused: readonly string[] = dropped,
): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith('--input-type') || refused.includes(a)) {
      // `--flag value` in two words: the value goes with its flag
      if (!a.includes('=') && argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('-')) i++;
      continue;
    }
    out.push(a);
  }
  return out;
}

/**
 * The flags named by Node's ERR_WORKER_INVALID_EXEC_ARGV ("Initiated Worker with invalid execArgv flags: --a, --b"),
 * or undefined for any other error, or one whose flags cannot be read.
 */
export function refusedFlags(err: unknown): string[] | undefined {
  if ((err as { code?: string })?.code !== 'ERR_WORKER_INVALID_EXEC_ARGV') return undefined;
  const list = /flags: (.+)$/.exec((err as Error).message)?.[1];
  const flags = list
    ?.split(', ')
    .map((f) => f.trim())
    .filter((f) => f.startsWith('-'));
  return flags?.length ? flags : undefined;
}
