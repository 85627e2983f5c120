import { openEmbedder } from '../../embed/open.ts';
import { type IndexOptions, type IndexReport, indexRepository } from '../../indexing/indexer.ts';
import type { LocalProject } from '../types.ts';

export type IndexProjectOptions = Omit<IndexOptions, 'root' | 'config' | 'store' | 'embedder'> & {
  /** Embed after the lexical phase (the configured embedder, on background workers). Default true. */
  embed?: boolean;
  /** Told once when there are no vectors to be had, and why. */
  onNotice?: (message: string) => void;
  /** Progress of distilling the static embedding table, the first time a machine uses it. */
  onDistill?: (done: number, total: number) => void;
};

/** Index (or bring up to date) an opened project: lexical rows first, then vectors when an embedder is there. */
export async function indexProject(
  project: LocalProject,
  options: IndexProjectOptions = {},
): Promise<IndexReport> {
  const { embed = true, onNotice, onDistill, ...rest } = options;
  const started = performance.now();
  const embedder =
    embed && project.store.vectors
      ? await openEmbedder(project.config, {
          background: true,
          ...(onNotice ? { onNotice } : {}),
          ...(onDistill ? { onDistill } : {}),
        })
      : undefined;
  const setupMs = performance.now() - started;
  try {
    const report = await indexRepository({
      ...rest,
      root: project.root,
      config: project.config,
      store: project.store,
      ...(embedder ? { embedder } : {}),
    });
    return { ...report, setupMs };
  } finally {
    await embedder?.close();
  }
}
