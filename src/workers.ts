import { Worker } from 'node:worker_threads';

/** The worker modules, by their path under src/ (and dist/). */
export type WorkerModule = 'indexing/worker' | 'embed/worker' | 'store/dense-worker' | 'store/write-worker';

// Set by scripts/bundle.mjs: the CLI's bundle lives in dist/bundle/, one folder below the modules it starts.
declare const __QUARRY_BUNDLE__: boolean | undefined;

/**
 * Starts a worker thread running one of quarry's worker modules. Built, the module's .js file in dist/ runs as it is
 * (also from the CLI's bundle, which sits in dist/bundle/); from source under tsx (tests, development), workers do
 * not inherit tsx's loader, so it is registered first. Node flags are inherited, less --input-type (set by `node -e`
 * hosts), which would make the worker refuse its file.
 */
export function startWorker(module: WorkerModule, workerData: unknown): Worker {
  const execArgv = process.execArgv.filter((a) => !a.startsWith('--input-type'));
  const fromSource = import.meta.url.endsWith('.ts');
  const base = typeof __QUARRY_BUNDLE__ !== 'undefined' && __QUARRY_BUNDLE__ ? '../' : './';
  const href = new URL(`${base}${module}${fromSource ? '.ts' : '.js'}`, import.meta.url).href;
  if (!fromSource) return new Worker(new URL(href), { workerData, execArgv });
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(href)}); });`;
  return new Worker(code, { eval: true, workerData, execArgv });
}
