/**
 * Progressive indexing, timed (numbers go to docs/benchmarks.md; not a test).
 *
 *   node --import tsx bench/phases-bench.ts <corpus-dir>
 *
 * Deletes <corpus-dir>/.quarry, then indexes it in this process (embedding on the usual low-priority worker) and
 * reports when lexical search started to work, when phase 1 (a vector per file) and phase 2 (a vector per chunk)
 * were done, and the peak RSS of the whole process (workers included).
 */
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { indexProject, openProject } from '../src/project/local/index.ts';
import { embeddingStatusOf } from '../src/store/types.ts';

const corpus = resolve(process.argv[2] ?? '.');
rmSync(join(corpus, '.quarry'), { recursive: true, force: true });
const project = await openProject({ root: corpus, create: true });
const start = performance.now();
const marks: Record<string, number> = {};
let lastPrint = 0;
const report = await indexProject(project, {
  onProgress: (p) => {
    const now = performance.now() - start;
    if (p.phase === 'coarse' && marks.lexical === undefined) marks.lexical = now;
    if (p.phase === 'refine' && marks.coarse === undefined) marks.coarse = now;
    if (now - lastPrint > 30_000) {
      lastPrint = now;
      console.error(`${(now / 1000).toFixed(0)}s ${p.phase} ${p.done}/${p.total}`);
    }
  },
});
marks.refined = performance.now() - start;
const status = await embeddingStatusOf(project.store);
const stats = await project.store.stats();
await project.close();
const s = (ms?: number) => (ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`);
console.log(`| corpus | ${report.files} files, ${stats.chunks} chunks, ${status.chunkVectors} chunk vectors |
| --- | --- |
| lexical search works after | ${s(marks.lexical)} |
| phase 1 (a vector per file) done after | ${s(marks.coarse)} |
| phase 2 (a vector per chunk) done after | ${s(marks.refined)} |
| texts embedded / from cache | ${report.embedding?.embedded} / ${report.embedding?.fromCache} |
| peak RSS (process, workers included) | ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB |`);
