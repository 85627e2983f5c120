import { Worker } from 'node:worker_threads';

/**
 * Starts a worker thread from a module beside the caller (`moduleUrl` names its .ts source). Built, the .js file
 * runs as it is; from source under tsx (tests, development), workers do not inherit tsx's loader, so it is
 * registered first. Node flags are inherited, less --input-type (set by `node -e` hosts), which would make the
 * worker refuse its file.
 */
export function startWorker(moduleUrl: URL, workerData: unknown): Worker {
  const execArgv = process.execArgv.filter((a) => !a.startsWith('--input-type'));
  const href = moduleUrl.href;
  if (!import.meta.url.endsWith('.ts'))
    return new Worker(new URL(href.replace(/\.ts$/, '.js')), { workerData, execArgv });
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(href)}); });`;
  return new Worker(code, { eval: true, workerData, execArgv });
}
